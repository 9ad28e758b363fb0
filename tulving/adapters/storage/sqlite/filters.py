"""EntryFilter -> SQL WHERE clause (alias ``e`` for entries), with ``?`` parameters."""

from __future__ import annotations

from typing import Any

from tulving.adapters.storage.rows import ts
from tulving.domain.query import HIDDEN_FROM_HISTORY, EntryFilter


def _in(column: str, values: tuple[Any, ...], params: list[Any]) -> str:
    params.extend(values)
    return f"{column} IN ({','.join('?' * len(values))})" if values else "0"


def where(flt: EntryFilter) -> tuple[str, list[Any]]:
    params: list[Any] = []
    parts = ["1"] if flt.partitions is None else [_in("e.partition", flt.partitions, params)]
    if flt.as_of is not None:
        at = ts(flt.as_of)
        parts.append("e.created_at <= ? AND (e.expired_at IS NULL OR e.expired_at > ?)")
        params += [at, at]
        parts.append(
            "(e.archive_reason IS NULL OR NOT "
            + _in("e.archive_reason", HIDDEN_FROM_HISTORY, params) + ")"
        )
    elif flt.archive_reasons is not None:
        parts.append(_in("e.archive_reason", tuple(r.value for r in flt.archive_reasons), params))
    elif not flt.include_archived:
        parts.append("e.archived_at IS NULL")
    if flt.types is not None:
        parts.append(_in("e.type", tuple(t.value for t in flt.types), params))
    if flt.tags is not None:
        parts.append(
            "EXISTS (SELECT 1 FROM entry_tags t WHERE t.entry_id = e.id AND "
            + _in("t.tag", flt.tags, params) + ")"
        )
    if flt.without_tags is not None:
        parts.append(
            "NOT EXISTS (SELECT 1 FROM entry_tags t WHERE t.entry_id = e.id AND "
            + _in("t.tag", flt.without_tags, params) + ")"
        )
    if flt.key_prefix is not None:
        parts.append("e.key IS NOT NULL AND substr(e.key, 1, ?) = ?")
        params += [len(flt.key_prefix), flt.key_prefix]
    if flt.since is not None:
        parts.append("e.valid_from >= ?")
        params.append(ts(flt.since))
    if flt.until is not None:
        parts.append("e.valid_from <= ?")
        params.append(ts(flt.until))
    if flt.session_id is not None:
        parts.append("e.session_id = ?")
        params.append(flt.session_id)
    if flt.pinned is not None:
        parts.append("e.pinned = ?")
        params.append(int(flt.pinned))
    if flt.ids is not None:
        parts.append(_in("e.id", flt.ids, params))
    if flt.entity is not None:
        parts.append("e.entity = ? COLLATE NOCASE" if flt.entity_any_case else "e.entity = ?")
        params.append(flt.entity)
    if flt.after_id is not None:
        parts.append("e.id > ?")
        params.append(flt.after_id)
    if flt.attribute is not None:
        parts.append("e.attribute = ?")
        params.append(flt.attribute)
    if flt.content_hash is not None:
        parts.append("e.content_hash = ?")
        params.append(flt.content_hash)
    return " AND ".join(parts), params
