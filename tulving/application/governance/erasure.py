"""Erasure of a data subject: every entry of a user, a workspace or an agent, for good.

Unlike ``forget`` (which archives), erasure deletes the entries, their tags, full-text
rows and vectors, then every summary derived from them (transitively), then rebuilds
and persists the vector index cache and vacuums the store so the deleted bytes are
scrubbed from the files (SQLite runs with ``secure_delete`` and ``VACUUM`` rewrites the
file; the WAL is checkpointed and truncated). The audit keeps a content-free record:
which kind of subject, the sha256 of its name and how many entries went.

Who may erase what: a Memory may erase its own user (``user_id`` equal to its own; all
of that user's entries in every workspace), its own workspace (``workspace_id`` equal to
its own, from a workspace-level identity with no user), or one agent inside its own
tenant. Anything else is a ScopeError.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime
from typing import Any

import attrs

from tulving.application.governance.audit import AuditTrail
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.vector_sync import rebuild_index
from tulving.application.plumbing.write_order import writing
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ScopeError, StorageError, ValidationError
from tulving.domain.identity import tenant_of_partition
from tulving.domain.query import STORE_WIDE, EntryFilter
from tulving.domain.reports import Report


@attrs.frozen
class ErasureReport(Report):
    """What an erasure deleted for good: the kind of subject (``user_id``,
    ``workspace_id`` or ``agent_id``), its entries (``deleted``, what was derived from
    them included) and how many of those were derived (summaries, facts read off them)."""

    subject: str
    deleted: int
    derived: int


def _subject(
    ctx: MemoryContext, user_id: str | None, workspace_id: str | None, agent_id: str | None
) -> tuple[str, str]:
    given = [
        (k, v)
        for k, v in (("user_id", user_id), ("workspace_id", workspace_id), ("agent_id", agent_id))
        if v is not None
    ]
    if len(given) != 1:
        raise ValidationError("erase() takes exactly one of user_id, workspace_id, agent_id")
    kind, name = given[0]
    if not isinstance(name, str) or not name:
        raise ValidationError(f"{kind} must be a non-empty string")
    me = ctx.identity
    if kind == "user_id" and name != me.user_id:
        raise ScopeError("a Memory may only erase its own user (open one with that user_id)")
    if kind == "workspace_id" and (name != me.workspace_id or me.user_id is not None):
        raise ScopeError(
            "erasing a workspace needs a workspace-level identity: "
            "Memory(..., workspace_id=<it>, user_id=None)"
        )
    return kind, name


def _matches(entry: MemoryEntry, kind: str, name: str, tenant: str) -> bool:
    if kind == "user_id":
        return entry.user_id == name
    if kind == "workspace_id":
        return entry.workspace_id == name
    return entry.agent_id == name and tenant_of_partition(entry.partition) == tenant


def erase(
    ctx: MemoryContext,
    audit: AuditTrail,
    *,
    user_id: str | None = None,
    workspace_id: str | None = None,
    agent_id: str | None = None,
) -> ErasureReport:
    kind, name = _subject(ctx, user_id, workspace_id, agent_id)
    subject_hash = hashlib.sha256(f"{kind}={name}".encode()).hexdigest()
    return _erase(ctx, audit, kind, subject_hash,
                  lambda e: _matches(e, kind, name, ctx.identity.tenant))


def replay(ctx: MemoryContext, audit: AuditTrail, kind: str, subject_hash: str,
           before: datetime) -> ErasureReport:
    """An erasure made on another device (sync): the subject is known only by the sha256
    the audit keeps; entries of this tenant whose subject hashes to it and that were
    created by ``before`` go, with what was derived from them. Entries made after the
    erasure stay, as they would on the device that erased."""
    if kind not in ("user_id", "workspace_id", "agent_id"):
        raise ValidationError(f"unknown erasure subject kind {kind!r}")
    tenant = ctx.identity.tenant

    def hit(e: MemoryEntry) -> bool:
        value = getattr(e, kind)
        return (value is not None and e.created_at <= before
                and tenant_of_partition(e.partition) == tenant
                and hashlib.sha256(f"{kind}={value}".encode()).hexdigest() == subject_hash)

    return _erase(ctx, audit, kind, subject_hash, hit, quiet_when_empty=True,
                  extra={"replayed": True, "before": before.isoformat()})


def every_version(ctx: MemoryContext, entry: MemoryEntry) -> list[str]:
    """What ``forget(hard=True)`` deletes with ``entry``: every version of its key in its
    partition (archived, superseded, corrected, rolled back), every entry its supersede
    chain links to, and every memory derived from those (a fact read off it, a summary
    of it, transitively); ids in order."""
    storage = ctx.storage
    doomed: dict[str, MemoryEntry] = {entry.id: entry}
    if entry.key is not None:
        for e in storage.query(EntryFilter(partitions=(entry.partition,), key_prefix=entry.key,
                                           include_archived=True)):
            if e.key == entry.key:
                doomed[e.id] = e
    links = {i for e in doomed.values() for i in (e.supersedes, e.superseded_by) if i}
    while links - set(doomed):
        found = storage.get_many(sorted(links - set(doomed)))
        if not found:
            break
        for e in found:
            doomed[e.id] = e
        links = {i for e in doomed.values() for i in (e.supersedes, e.superseded_by) if i}
    tenant = tenant_of_partition(entry.partition)
    everything = [e for e in storage.query(EntryFilter(partitions=STORE_WIDE,
                                                       include_archived=True))
                  if tenant_of_partition(e.partition) == tenant]
    ids = set(doomed)
    grew = True
    while grew:  # what was derived from them, and what was derived from that
        grew = False
        for e in everything:
            if e.id not in ids and ids.intersection(e.source_entry_ids):
                ids.add(e.id)
                grew = True
    return sorted(ids)


def scrub(ctx: MemoryContext, ids: set[str] | list[str]) -> None:
    """After deleting ``ids``: no trace in the vector index cache (rebuilt and written
    anew) nor in the store's files (full-text segments merged, the file vacuumed, the
    write-ahead log checkpointed and truncated)."""
    if ctx.vectors is not None:
        ctx.vectors.remove(list(ids))
        rebuild_index(ctx)
    try:
        ctx.storage.maintenance("vacuum")
    except StorageError as exc:  # a full disk: the deletion stands, the scrub waits
        raise StorageError(
            f"the entries are deleted, but the store's files could not be scrubbed of "
            f"them ({exc}); run `tulving maintenance vacuum` once there is room") from exc


def _erase(ctx: MemoryContext, audit: AuditTrail, kind: str, subject_hash: str,
           matches: Callable[[MemoryEntry], bool], *,
           quiet_when_empty: bool = False,
           extra: dict[str, Any] | None = None) -> ErasureReport:
    storage = ctx.storage
    everything = storage.query(EntryFilter(partitions=STORE_WIDE, include_archived=True))
    doomed = {e.id for e in everything if matches(e)}
    direct = len(doomed)
    if quiet_when_empty and not doomed:
        return ErasureReport(kind, 0, 0)
    grew = True
    while grew:  # summaries of erased entries, and summaries of those summaries
        grew = False
        for e in everything:
            if e.id not in doomed and doomed.intersection(e.source_entry_ids):
                doomed.add(e.id)
                grew = True
    with writing(ctx):
        deleted = storage.delete(sorted(doomed))
        audit.record(
            "erase",
            {"subject": subject_hash},
            details={
                "subject_kind": kind,
                "subject_sha256": subject_hash,
                "entries": direct,
                "derived": len(doomed) - direct,
                **(extra or {}),
            },
        )
    scrub(ctx, doomed)  # a fresh cache file: no trace of the erased vectors or ids
    return ErasureReport(kind, deleted, len(doomed) - direct)
