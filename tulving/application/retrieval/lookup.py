"""Reading memories by id or key: the lookups behind ``get``, ``history`` and ``list_keys``
and the resolution every id-or-key argument of the facade goes through.

Visibility is checked here once: an entry of another partition raises ``ScopeError``
(it exists, this identity may not see it), an archived one ``NotFoundError`` naming why
(a corrected entry points at its correction).
"""

from __future__ import annotations

from tulving.application.governance.corrections import correction_notice
from tulving.application.plumbing.context import MemoryContext
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import NotFoundError, ScopeError, ValidationError
from tulving.domain.ids import looks_like_id
from tulving.domain.query import EntryFilter


def resolve(ctx: MemoryContext, key_or_id: str, *, include_archived: bool = False) -> MemoryEntry:
    """The visible entry with this id or key; ScopeError if it belongs elsewhere."""
    if not isinstance(key_or_id, str) or not key_or_id:
        raise ValidationError("expected an entry id or key (non-empty string)")
    visible = ctx.visible_partitions()
    if looks_like_id(key_or_id):
        entry = ctx.storage.get(key_or_id)
        if entry is not None:
            if entry.partition not in visible:
                raise ScopeError(f"entry {key_or_id} is not visible to this identity")
            if entry.archived_at is None or include_archived:
                return entry
            notice = correction_notice(entry)
            if notice is not None:
                raise NotFoundError(notice)
            reason = entry.archive_reason.value if entry.archive_reason else "?"
            raise NotFoundError(f"entry {key_or_id} is archived ({reason})")
    found = ctx.storage.active_by_key(visible, key_or_id)
    if found is None:
        raise NotFoundError(f"no active memory with id or key {key_or_id!r}")
    return found


def list_keys(ctx: MemoryContext, prefix: str = "") -> list[str]:
    if not isinstance(prefix, str):
        raise ValidationError("prefix must be a string")
    entries = ctx.storage.query(
        EntryFilter(partitions=ctx.visible_partitions(), key_prefix=prefix)
    )
    return sorted({e.key for e in entries if e.key})


def history(ctx: MemoryContext, key: str) -> list[MemoryEntry]:
    """Every version of ``key``, newest first, following the supersede chain."""
    versions = ctx.storage.query(
        EntryFilter(partitions=ctx.visible_partitions(), key_prefix=key, include_archived=True)
    )
    versions = [e for e in versions if e.key == key]
    if not versions:
        raise NotFoundError(f"no memory ever had key {key!r}")
    return sorted(versions, key=lambda e: e.created_at, reverse=True)
