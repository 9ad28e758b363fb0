"""Reading memories by id or key: the lookups behind ``get`` (now or as of a moment),
``history`` and ``list_keys``, and the resolution every id-or-key argument of the facade
goes through.

Visibility is checked here once: an entry of another partition raises
``NotVisibleError`` (a ``ScopeError``: it exists, this identity may not see it) after
doing exactly what a missing id leads to (the lookup by key), so the doors can answer it
as a missing id; an archived one ``NotFoundError`` naming why (a corrected entry points
at its correction).
"""

from __future__ import annotations

from datetime import datetime

import attrs

from tulving.application.governance.corrections import correction_notice
from tulving.application.plumbing.context import MemoryContext
from tulving.domain.entry import MemoryEntry
from tulving.domain.entry_factory import check_time
from tulving.domain.errors import NotFoundError, NotVisibleError, ValidationError
from tulving.domain.ids import looks_like_id
from tulving.domain.query import HIDDEN_FROM_HISTORY, EntryFilter
from tulving.domain.types import Scope


def _by_id(ctx: MemoryContext, key_or_id: str) -> tuple[MemoryEntry | None, bool]:
    """The visible entry whose id is ``key_or_id`` (None if it is no id, or no visible
    entry has it), and whether an entry of another partition has it."""
    if not isinstance(key_or_id, str) or not key_or_id:
        raise ValidationError("expected an entry id or key (non-empty string)")
    if not looks_like_id(key_or_id):
        return None, False
    entry = ctx.storage.get(key_or_id)
    if entry is not None and entry.partition not in ctx.visible_partitions():
        return None, True
    return entry, False


def _not_visible(key_or_id: str, as_missing: str) -> NotVisibleError:
    return NotVisibleError(f"entry {key_or_id} is not visible to this identity",
                           entry_id=key_or_id, as_missing=as_missing)


def resolve(ctx: MemoryContext, key_or_id: str, *, include_archived: bool = False) -> MemoryEntry:
    """The visible entry with this id or key; NotVisibleError if the id belongs elsewhere
    (and no visible key is spelt like it)."""
    entry, foreign = _by_id(ctx, key_or_id)
    if entry is not None:
        if entry.archived_at is None or include_archived:
            return entry
        notice = correction_notice(entry)
        if notice is not None:
            raise NotFoundError(notice)
        reason = entry.archive_reason.value if entry.archive_reason else "?"
        raise NotFoundError(f"entry {key_or_id} is archived ({reason})")
    found = ctx.storage.active_by_key(ctx.visible_partitions(), key_or_id)
    if found is None:
        missing = f"no active memory with id or key {key_or_id!r}"
        raise _not_visible(key_or_id, missing) if foreign else NotFoundError(missing)
    return found


def list_keys(ctx: MemoryContext, prefix: str = "") -> list[str]:
    if not isinstance(prefix, str):
        raise ValidationError("prefix must be a string")
    entries = ctx.storage.query(
        EntryFilter(partitions=ctx.visible_partitions(), key_prefix=prefix)
    )
    return sorted({e.key for e in entries if e.key})


#: Largest page ``list_entries`` returns.
MAX_PAGE = 1000
#: Pages of entries a scope-filtered ``list_entries`` page reads at most to fill itself.
SCOPE_SCAN = 20


@attrs.frozen
class EntryPage:
    """One page of ``list_entries``: the entries, oldest first, and the cursor of the next
    page (None on the last one). The cursor is the last id returned: entries written
    meanwhile land after it, so paging never skips or repeats one."""

    entries: tuple[MemoryEntry, ...]
    next_cursor: str | None


def list_entries(ctx: MemoryContext, flt: EntryFilter, limit: int, cursor: str | None,
                 scope: Scope | None = None) -> EntryPage:
    """Every visible entry matching ``flt`` (and ``scope``), keyed or not, a page at a
    time. Scope has no index, so a page with a scope reads at most ``SCOPE_SCAN`` pages of
    entries to fill itself and may come back short, with a cursor to go on from."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise ValidationError(f"limit must be an integer in 1..{MAX_PAGE}")
    if cursor is not None and (not isinstance(cursor, str) or not looks_like_id(cursor)):
        raise ValidationError("cursor must be the next_cursor of a previous page")
    if scope is None:
        page = ctx.storage.query(attrs.evolve(flt, after_id=cursor), limit=limit + 1,
                                 newest_first=False)
        more = len(page) > limit
        entries = tuple(page[:limit])
        return EntryPage(entries, entries[-1].id if more and entries else None)
    found: list[MemoryEntry] = []
    after = cursor
    for _ in range(SCOPE_SCAN):
        batch = ctx.storage.query(attrs.evolve(flt, after_id=after), limit=limit,
                                  newest_first=False)
        for entry in batch:
            after = entry.id
            if entry.scope is scope:
                found.append(entry)
                if len(found) == limit:
                    return EntryPage(tuple(found), after)
        if len(batch) < limit:
            return EntryPage(tuple(found), None)
    return EntryPage(tuple(found), after)


def history(ctx: MemoryContext, key: str) -> list[MemoryEntry]:
    """Every version of ``key``, newest first, following the supersede chain."""
    versions = ctx.storage.query(
        EntryFilter(partitions=ctx.visible_partitions(), key_prefix=key, include_archived=True)
    )
    versions = [e for e in versions if e.key == key]
    if not versions:
        raise NotFoundError(f"no memory ever had key {key!r}")
    return sorted(versions, key=lambda e: e.created_at, reverse=True)


def _known(entry: MemoryEntry, at: datetime) -> bool:
    hidden = entry.archive_reason is not None and entry.archive_reason.value in HIDDEN_FROM_HISTORY
    return entry.known_at(at) and not hidden


def get_as_of(ctx: MemoryContext, key_or_id: str, as_of: datetime) -> MemoryEntry:
    """The entry with this id or key as the store held it at transaction time ``as_of``
    (corrections and supersedes archive, never rewrite, so the past stays readable)."""
    if not isinstance(key_or_id, str) or not key_or_id:
        raise ValidationError("expected an entry id or key (non-empty string)")
    at = check_time("as_of", as_of)
    assert at is not None
    entry, foreign = _by_id(ctx, key_or_id)
    if entry is not None:
        if _known(entry, at):
            return entry
        raise NotFoundError(f"entry {key_or_id} was not current at {at.isoformat()}")
    visible = ctx.visible_partitions()
    candidates = [
        e
        for e in ctx.storage.query(EntryFilter(partitions=visible, key_prefix=key_or_id, as_of=at))
        if e.key == key_or_id
    ]
    for partition in visible:
        for candidate in candidates:
            if candidate.partition == partition:
                return candidate
    missing = f"no memory had id or key {key_or_id!r} at {at.isoformat()}"
    raise _not_visible(key_or_id, missing) if foreign else NotFoundError(missing)
