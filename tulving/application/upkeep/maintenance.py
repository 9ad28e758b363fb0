"""Store upkeep on explicit request: inspect, purge archived entries, vacuum, reindex.

Nothing automatic destroys data; ``purge`` is the one deliberate exception and is run by
a person (``tulving maintenance purge``), limited to what this identity can see, and
previews with ``dry_run`` first; it is the same purge as ``Memory.purge`` (what history
chains and summaries' sources need stays unless ``force``). Reindexing rebuilds the vector cache from the vectors in
storage, the source of truth; re-embedding rebuilds those vectors by the current rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime

import attrs

from tulving.application.governance import retention
from tulving.application.governance.audit import AuditTrail
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.representation import REPRESENTATION_META
from tulving.application.plumbing.vector_sync import rebuild_index, reembed_all
from tulving.domain.errors import ValidationError
from tulving.domain.query import STORE_WIDE, EntryFilter
from tulving.domain.reports import Report

Progress = Callable[[str, int, int], None]
ACTIONS = ("inspect", "purge", "vacuum", "reindex", "reembed")


def _without_none(report: Report) -> dict[str, object]:
    return {k: v for k, v in Report.as_dict(report).items() if v is not None}


@attrs.frozen
class IndexHealth(Report):
    """The vector index against the vectors in storage (the source of truth): what the
    index lacks and what it holds that storage no longer does (``healthy``: neither)."""

    adapter: str
    count: int
    stored_vectors: int
    missing_from_index: int
    stale_in_index: int
    healthy: bool


@attrs.frozen
class InspectReport(Report):
    """``maintenance("inspect")``: the engine's figures and integrity check (its first
    ten messages), the embedding model and rule the stored vectors were built with, and
    the vector index's health (None: no index)."""

    storage: Mapping[str, object]
    integrity_ok: bool
    integrity_messages: tuple[str, ...]
    embedding_model: str | None
    embedding_dimension: str | None
    vector_representation: str | None
    index: IndexHealth | None
    action: str = "inspect"

    def as_dict(self) -> dict[str, object]:
        """Without ``action`` (the shape ``inspect`` always had)."""
        out = super().as_dict()
        del out["action"]
        return out


@attrs.frozen
class MaintenancePurge(Report):
    """``maintenance("purge")``: ``Memory.purge``'s report, with ``deleted`` for its
    ``purged``."""

    deleted: int
    kept_for_audit: int
    matched: int
    by_reason: Mapping[str, int]
    dry_run: bool
    action: str = "purge"


@attrs.frozen
class VacuumReport(Report):
    """``maintenance("vacuum")``: what the engine says it did (``figures``: for SQLite
    ``bytes_before`` and ``bytes_after``), sent flat by the JSON doors."""

    figures: Mapping[str, object]
    action: str = "vacuum"

    def as_dict(self) -> dict[str, object]:
        return {**self.figures, "action": self.action}


@attrs.frozen
class ReindexReport(Report):
    """``maintenance("reindex")``: how many vectors the rebuilt index holds (``note``
    says why none when there is no index)."""

    indexed: int
    adapter: str | None = None
    note: str | None = None
    action: str = "reindex"

    def as_dict(self) -> dict[str, object]:
        return _without_none(self)


@attrs.frozen
class ReembedReport(Report):
    """``maintenance("reembed")``: how many entries were embedded again, by which rule
    (``vector_representation``; ``note`` says why none when there is no embedder)."""

    embedded: int
    vector_representation: str | None = None
    note: str | None = None
    action: str = "reembed"

    def as_dict(self) -> dict[str, object]:
        return _without_none(self)


#: What ``maintenance(action)`` returns, by action.
MaintenanceReport = InspectReport | MaintenancePurge | VacuumReport | ReindexReport | ReembedReport


def inspect(ctx: MemoryContext) -> InspectReport:
    """Health figures: engine integrity, index vs stored vectors, embedding model."""
    storage = ctx.storage
    integrity = dict(storage.maintenance("integrity"))
    index = None
    if ctx.vectors is not None:
        stored = {i for i, _ in storage.iter_vectors(EntryFilter(partitions=STORE_WIDE))}
        cached = ctx.vectors.ids()
        index = IndexHealth(ctx.vectors.name, len(cached), len(stored), len(stored - cached),
                            len(cached - stored), stored == cached)
    return InspectReport(
        storage=dict(storage.stats()),
        integrity_ok=bool(integrity.get("ok", False)),
        integrity_messages=tuple(str(m) for m in list(integrity.get("messages", []))[:10]),
        embedding_model=storage.get_meta("embedding_model_id"),
        embedding_dimension=storage.get_meta("embedding_dimension"),
        vector_representation=storage.get_meta(REPRESENTATION_META),
        index=index,
    )


def purge_archived(
    ctx: MemoryContext, audit: AuditTrail, *, dry_run: bool = True,
    archived_before: datetime | None = None, force: bool = False,
) -> MaintenancePurge:
    """``maintenance purge`` is :func:`retention.purge` (one purge path: summary sources,
    history chains and corrections stay unless ``force``), previewed by default."""
    if archived_before is not None and archived_before.tzinfo is None:
        raise ValidationError("archived_before must be timezone-aware")
    report = retention.purge(ctx, audit, archived_before, force=force, dry_run=dry_run)
    return MaintenancePurge(report.purged, report.kept_for_audit, report.matched,
                            report.by_reason, report.dry_run)


def vacuum(ctx: MemoryContext) -> VacuumReport:
    figures = dict(ctx.storage.maintenance("vacuum"))
    figures.pop("action", None)
    return VacuumReport(figures)


def reindex(ctx: MemoryContext, progress: Progress | None = None) -> ReindexReport:
    if ctx.vectors is None:
        return ReindexReport(0, note="no vector index configured")
    return ReindexReport(rebuild_index(ctx, progress), adapter=ctx.vectors.name)


def reembed(ctx: MemoryContext, progress: Progress | None = None) -> ReembedReport:
    """Every active entry embedded again by the current rule (after an upgrade that
    changed it, or a change of ``writing.context_window``)."""
    if ctx.embedder is None:
        return ReembedReport(0, note="no embedder configured")
    embedded = reembed_all(ctx, progress)
    return ReembedReport(embedded, ctx.storage.get_meta(REPRESENTATION_META))


def run(
    ctx: MemoryContext,
    action: str,
    *,
    audit: AuditTrail,
    dry_run: bool = True,
    archived_before: datetime | None = None,
    force: bool = False,
    progress: Progress | None = None,
) -> MaintenanceReport:
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
