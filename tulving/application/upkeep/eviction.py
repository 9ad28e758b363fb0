"""Eviction: archive what has faded, never what must stay.

Importance decays lazily (``MemoryEntry.importance_at``); nothing rewrites it in the
background, so there is no startup pass to repeat and eviction is idempotent: running it
twice, or across restarts, archives the same set once. DECISION and pinned entries never
decay and are never evicted (ADR-006); evicted entries are archived with reason
``evicted`` and can be restored, never deleted; each eviction is one audit record.
"""

from __future__ import annotations

import attrs

from tulving.application.governance.audit import AuditTrail
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.write_order import writing
from tulving.domain.entry import evictable
from tulving.domain.errors import ValidationError
from tulving.domain.query import EntryFilter
from tulving.domain.types import ArchiveReason, MemoryType
from tulving.domain.validation import check_unit_interval
from tulving.ports.storage import Archival

PAGE = 1000


@attrs.frozen
class EvictionReport:
    """What ``evict()`` archived (or, with ``dry_run``, would archive): the ids of the
    entries whose decayed importance fell below ``threshold``, of ``examined`` looked at."""

    threshold: float
    examined: int
    evicted: tuple[str, ...]
    dry_run: bool


def evict(
    ctx: MemoryContext, audit: AuditTrail, threshold: float, *, dry_run: bool = False
) -> EvictionReport:
    threshold = check_unit_interval("threshold", threshold)
    if threshold <= 0.0:
        raise ValidationError("threshold must be > 0 (0 would evict nothing)")
    now = ctx.clock.now()
    decaying = tuple(t for t in MemoryType if t is not MemoryType.DECISION)
    flt = EntryFilter(partitions=ctx.visible_partitions(), types=decaying, pinned=False)
    doomed: list[str] = []
    examined = 0
    after: str | None = None
    while True:
        # Keyset pages (ids after the last one seen): OFFSET pages re-read every row
        # before the page, which made a dry run at a million entries take over 14 minutes.
        page = ctx.storage.query(attrs.evolve(flt, after_id=after), limit=PAGE,
                                 newest_first=False)
        if not page:
            break
        after = page[-1].id
        examined += len(page)
        doomed.extend(e.id for e in page if evictable(e) and e.importance_at(now) < threshold)
    if doomed and not dry_run:
        with writing(ctx):  # the audit record exists iff the archiving did
            ctx.storage.archive([Archival(i, ArchiveReason.EVICTED, now) for i in doomed])
            audit.record("evict", {"threshold": threshold},
                         details={"ids": doomed, "examined": examined})
        if ctx.vectors is not None:
            ctx.vectors.remove(doomed)
    return EvictionReport(threshold, examined, tuple(doomed), dry_run)
