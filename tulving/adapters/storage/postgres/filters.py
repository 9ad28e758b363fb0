"""EntryFilter -> SQL WHERE clause (alias ``e`` for entries), with psycopg parameters.

Mirrors the SQLite adapter's filters and ``tulving.domain.query.entry_matches``, the
reference semantics the contract suite checks every adapter against. Lists travel as one
array parameter (``= ANY(%s)``), so the statement text does not change with their length
and PostgreSQL can reuse plans.
"""

from __future__ import annotations

from typing import Any

from tulving.domain.query import HIDDEN_FROM_HISTORY, EntryFilter


def where(flt: EntryFilter) -> tuple[str, list[Any]]:
    params: list[Any] = []
    parts = ["TRUE"]
    if flt.partitions is not None:  # None is STORE_WIDE: every tenant, maintenance only
        parts = ["e.partition = ANY(%s)"]
        params.append(list(flt.partitions))
    if flt.as_of is not None:
        parts.append("e.created_at <= %s AND (e.expired_at IS NULL OR e.expired_at > %s)")
        params += [flt.as_of, flt.as_of]
        parts.append("(e.archive_reason IS NULL OR NOT e.archive_reason = ANY(%s))")
        params.append(list(HIDDEN_FROM_HISTORY))
    elif flt.archive_reasons is not None:
        parts.append("e.archive_reason = ANY(%s)")
        params.append([r.value for r in flt.archive_reasons])
    elif not flt.include_archived:
        parts.append("e.archived_at IS NULL")
    if flt.types is not None:
        parts.append("e.type = ANY(%s)")
        params.append([t.value for t in flt.types])
    if flt.tags is not None:
        parts.append(
            "EXISTS (SELECT 1 FROM entry_tags t WHERE t.entry_id = e.id AND t.tag = ANY(%s))"
        )
        params.append(list(flt.tags))
    if flt.without_tags is not None:
        parts.append("NOT EXISTS (SELECT 1 FROM entry_tags t WHERE t.entry_id = e.id"
                     " AND t.tag = ANY(%s))")
        params.append(list(flt.without_tags))
    if flt.key_prefix is not None:
        parts.append("e.key IS NOT NULL AND starts_with(e.key, %s)")
        params.append(flt.key_prefix)
    if flt.since is not None:
        parts.append("e.valid_from >= %s")
        params.append(flt.since)
    if flt.until is not None:
        parts.append("e.valid_from <= %s")
        params.append(flt.until)
    if flt.session_id is not None:
        parts.append("e.session_id = %s")
        params.append(flt.session_id)
    if flt.pinned is not None:
        parts.append("e.pinned = %s")
        params.append(bool(flt.pinned))
    if flt.ids is not None:
        parts.append("e.id = ANY(%s)")
        params.append(list(flt.ids))
    if flt.entity is not None:
        parts.append("lower(e.entity) = lower(%s)" if flt.entity_any_case else "e.entity = %s")
        params.append(flt.entity)
    if flt.after_id is not None:
        parts.append("e.id > %s")
        params.append(flt.after_id)
    if flt.attribute is not None:
        parts.append("e.attribute = %s")
        params.append(flt.attribute)
    if flt.content_hash is not None:
        parts.append("e.content_hash = %s")
        params.append(flt.content_hash)
    return " AND ".join(parts), params
