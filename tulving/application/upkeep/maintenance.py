"""Store upkeep on explicit request: inspect, purge archived entries, vacuum, reindex.

Nothing automatic destroys data; ``purge`` is the one deliberate exception and is run by
a person (``tulving maintenance purge``), limited to what this identity can see, and
previews with ``dry_run`` first. Reindexing rebuilds the vector cache from the vectors in
storage, the source of truth.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.vector_sync import rebuild_index
from tulving.domain.errors import ValidationError
from tulving.domain.query import STORE_WIDE, EntryFilter
from tulving.domain.types import ArchiveReason

Progress = Callable[[str, int, int], None]
ACTIONS = ("inspect", "purge", "vacuum", "reindex")


def inspect(ctx: MemoryContext) -> dict[str, Any]:
    """Health figures: engine integrity, index vs stored vectors, embedding model."""
    storage = ctx.storage
    integrity = dict(storage.maintenance("integrity"))
    report: dict[str, Any] = {
        "storage": dict(storage.stats()),
        "integrity_ok": bool(integrity.get("ok", False)),
        "integrity_messages": list(integrity.get("messages", []))[:10],
        "embedding_model": storage.get_meta("embedding_model_id"),
        "embedding_dimension": storage.get_meta("embedding_dimension"),
    }
    if ctx.vectors is not None:
        stored = {i for i, _ in storage.iter_vectors(EntryFilter(partitions=STORE_WIDE))}
        cached = ctx.vectors.ids()
        report["index"] = {
            "adapter": ctx.vectors.name,
            "count": len(cached),
            "stored_vectors": len(stored),
            "missing_from_index": len(stored - cached),
            "stale_in_index": len(cached - stored),
            "healthy": stored == cached,
        }
    else:
        report["index"] = None
    return report


def purge_archived(
    ctx: MemoryContext, *, dry_run: bool = True, archived_before: datetime | None = None
) -> dict[str, Any]:
    """Hard-delete archived entries visible to this identity (all, or archived before a
    time). ``dry_run`` (the default) only counts them."""
    if archived_before is not None and archived_before.tzinfo is None:
        raise ValidationError("archived_before must be timezone-aware")
    flt = EntryFilter(partitions=ctx.visible_partitions(), archive_reasons=tuple(ArchiveReason))
    victims = [
        e
        for e in ctx.storage.query(flt)
        if archived_before is None
        or (e.archived_at is not None and e.archived_at < archived_before)
    ]
    by_reason: dict[str, int] = {}
    for e in victims:
        reason = e.archive_reason.value if e.archive_reason else "?"
        by_reason[reason] = by_reason.get(reason, 0) + 1
    deleted = 0
    if not dry_run and victims:
        ids = [e.id for e in victims]
        deleted = ctx.storage.delete(ids)
        if ctx.vectors is not None:
            ctx.vectors.remove(ids)
    return {
        "action": "purge",
        "dry_run": dry_run,
        "matched": len(victims),
        "deleted": deleted,
        "by_reason": by_reason,
    }


def vacuum(ctx: MemoryContext) -> dict[str, Any]:
    return dict(ctx.storage.maintenance("vacuum"))


def reindex(ctx: MemoryContext, progress: Progress | None = None) -> dict[str, Any]:
    if ctx.vectors is None:
        return {"action": "reindex", "indexed": 0, "note": "no vector index configured"}
    return {
        "action": "reindex",
        "adapter": ctx.vectors.name,
        "indexed": rebuild_index(ctx, progress),
    }


def run(
    ctx: MemoryContext,
    action: str,
    *,
    dry_run: bool = True,
    archived_before: datetime | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    if action == "inspect":
        return inspect(ctx)
    if action == "purge":
        return purge_archived(ctx, dry_run=dry_run, archived_before=archived_before)
    if action == "vacuum":
        return vacuum(ctx)
    if action == "reindex":
        return reindex(ctx, progress)
    raise ValidationError(f"unknown maintenance action {action!r}; expected one of {ACTIONS}")
