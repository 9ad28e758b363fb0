"""Store upkeep on explicit request: inspect, purge archived entries, vacuum, reindex.

Nothing automatic destroys data; ``purge`` is the one deliberate exception and is run by
a person (``tulving maintenance purge``), limited to what this identity can see, and
previews with ``dry_run`` first; it is the same purge as ``Memory.purge`` (what history
chains and summaries' sources need stays unless ``force``). Reindexing rebuilds the vector cache from the vectors in
storage, the source of truth; re-embedding rebuilds those vectors by the current rule.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from tulving.application.governance import retention
from tulving.application.governance.audit import AuditTrail
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.representation import REPRESENTATION_META
from tulving.application.plumbing.vector_sync import rebuild_index, reembed_all
from tulving.domain.errors import ValidationError
from tulving.domain.query import STORE_WIDE, EntryFilter

Progress = Callable[[str, int, int], None]
ACTIONS = ("inspect", "purge", "vacuum", "reindex", "reembed")


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
        "vector_representation": storage.get_meta(REPRESENTATION_META),
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
    ctx: MemoryContext, audit: AuditTrail, *, dry_run: bool = True,
    archived_before: datetime | None = None, force: bool = False,
) -> dict[str, Any]:
    """``maintenance purge`` is :func:`retention.purge` (one purge path: summary sources,
    history chains and corrections stay unless ``force``), previewed by default."""
    if archived_before is not None and archived_before.tzinfo is None:
        raise ValidationError("archived_before must be timezone-aware")
    report = retention.purge(ctx, audit, archived_before, force=force, dry_run=dry_run)
    return {"action": "purge", "deleted": report.pop("purged"), **report}


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


def reembed(ctx: MemoryContext, progress: Progress | None = None) -> dict[str, Any]:
    """Every active entry embedded again by the current rule (after an upgrade that
    changed it, or a change of ``writing.context_window``)."""
    if ctx.embedder is None:
        return {"action": "reembed", "embedded": 0, "note": "no embedder configured"}
    embedded = reembed_all(ctx, progress)
    return {"action": "reembed", "embedded": embedded,
            "vector_representation": ctx.storage.get_meta(REPRESENTATION_META)}


def run(
    ctx: MemoryContext,
    action: str,
    *,
    audit: AuditTrail,
    dry_run: bool = True,
    archived_before: datetime | None = None,
    force: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    if action == "inspect":
        return inspect(ctx)
    if action == "purge":
        return purge_archived(ctx, audit, dry_run=dry_run, archived_before=archived_before,
                              force=force)
    if action == "vacuum":
        return vacuum(ctx)
    if action == "reindex":
        return reindex(ctx, progress)
    if action == "reembed":
        return reembed(ctx, progress)
    raise ValidationError(f"unknown maintenance action {action!r}; expected one of {ACTIONS}")
