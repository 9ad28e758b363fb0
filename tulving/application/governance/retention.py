"""Rollback, retention and purge: taking memories out of use without losing the record.

- ``rollback_to`` undoes this agent's writes after a point: they are archived with
  reason ``rolled_back`` (kept for the audit, hidden from every read including as-of
  reads) and the entries they had superseded or corrected become active again.
- ``apply_retention`` archives by age (TTL in days) and by count per scope. It is
  separate from decay: decay ranks, retention is a rule a compliance officer sets.
  DECISION and pinned entries are never expired or evicted (ADR-006): a cap that
  cannot be met without them is reported (``cap_unmet``), not enforced on them.
- ``purge`` hard-deletes archived entries, but never those the audit trail or a
  supersede/correction/rollback chain needs, unless ``force=True``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

import attrs

from tulving.application.governance.audit import AuditTrail
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.write_order import writing
from tulving.domain.entry import MemoryEntry, evictable
from tulving.domain.entry_factory import check_time
from tulving.domain.errors import ValidationError
from tulving.domain.query import EntryFilter
from tulving.domain.reports import Report
from tulving.domain.types import ArchiveReason, Scope
from tulving.ports.storage import Archival

#: Archive reasons whose entries the audit trail and history chains rely on.
PROTECTED_REASONS = (
    ArchiveReason.ROLLED_BACK,
    ArchiveReason.CORRECTED,
    ArchiveReason.INVALIDATED,
    ArchiveReason.SUPERSEDED,
)


@attrs.frozen
class RollbackReport(Report):
    """What ``rollback_to`` undid: this agent's entries written after ``to`` (archived,
    reason ``rolled_back``) and the earlier versions they had replaced, active again."""

    to: datetime
    rolled_back: tuple[str, ...]
    restored: tuple[str, ...]


@attrs.frozen
class ScopeRetention(Report):
    """What ``apply_retention`` archived in one scope: past its TTL (``expired``), over
    its cap (``evicted``); ``protected`` DECISION and pinned entries it may not touch, and
    by how many they alone exceed the cap (``cap_unmet``)."""

    expired: int
    evicted: int
    protected: int = 0
    cap_unmet: int = 0

    def as_dict(self) -> dict[str, object]:
        """``protected`` and ``cap_unmet`` only when not zero (the shape it always had)."""
        return {k: v for k, v in super().as_dict().items()
                if v or k in ("expired", "evicted")}


@attrs.frozen(eq=False)
class RetentionReport(Mapping[str, ScopeRetention]):
    """``apply_retention``'s report: a mapping of each scope the policy named (``"*"``
    for every scope) to what was archived in it (``report["agent"].expired``)."""

    scopes: Mapping[str, ScopeRetention]

    def __getitem__(self, scope: str) -> ScopeRetention:
        return self.scopes[scope]

    def __iter__(self) -> Iterator[str]:
        return iter(self.scopes)

    def __len__(self) -> int:
        return len(self.scopes)

    def as_dict(self) -> dict[str, object]:
        """Scope by scope, as plain data (what the JSON doors send)."""
        return {label: scope.as_dict() for label, scope in self.scopes.items()}


@attrs.frozen
class PurgeReport(Report):
    """What ``purge`` deleted for good (``purged``; 0 on a ``dry_run``), of ``matched``
    archived entries, by archive reason; and how many it kept because the audit trail,
    a history chain or a summary's sources need them (``kept_for_audit``)."""

    purged: int
    kept_for_audit: int
    matched: int
    by_reason: Mapping[str, int]
    dry_run: bool


def _all_visible(ctx: MemoryContext) -> list[MemoryEntry]:
    return ctx.storage.query(
        EntryFilter(partitions=ctx.visible_partitions(), include_archived=True),
        newest_first=False,
    )


def rollback_to(
    ctx: MemoryContext, audit: AuditTrail, point: datetime, anchor_id: str | None = None
) -> RollbackReport:
    storage = ctx.storage
    now = ctx.clock.now()
    if point > now:
        raise ValidationError("cannot roll back to a point in the future")
    me = ctx.identity.agent_id
    everything = _all_visible(ctx)
    undone = [
        e
        for e in everything
        if e.created_at > point
        and e.agent_id == me
        and e.id != anchor_id
        and e.archive_reason is not ArchiveReason.ROLLED_BACK
    ]
    undone_ids = {e.id for e in undone}
    restore = [
        e
        for e in everything
        if e.id not in undone_ids
        and e.superseded_by in undone_ids
        and e.created_at <= point
        and e.archive_reason in (ArchiveReason.SUPERSEDED, ArchiveReason.CORRECTED)
    ]
    with writing(ctx):
        storage.archive(
            [
                Archival(e.id, ArchiveReason.ROLLED_BACK, now)
                for e in undone
                if e.archived_at is None
            ]
        )
        for e in undone:
            if e.archived_at is not None:
                storage.replace(
                    attrs.evolve(e, archive_reason=ArchiveReason.ROLLED_BACK, updated_at=now)
                )
        storage.unarchive([e.id for e in restore], now)
        for e in restore:
            current = storage.get(e.id)
            assert current is not None
            storage.replace(attrs.evolve(current, superseded_by=None))
        audit.record(
            "rollback",
            {"to": point, "anchor": anchor_id},
            details={
                "to": point.isoformat(),
                "rolled_back": sorted(undone_ids),
                "restored": [e.id for e in restore],
            },
        )
    if ctx.vectors is not None:
        if undone_ids:
            ctx.vectors.remove(undone_ids)
        back = storage.vectors_for([e.id for e in restore])
        if back:
            import numpy as np

            ctx.vectors.add(list(back), np.stack(list(back.values())))
    return RollbackReport(point, tuple(sorted(undone_ids)), tuple(e.id for e in restore))


def _scope_rules(policy: Mapping[str, Any]) -> dict[Scope | None, tuple[float | None, int | None]]:
    if not isinstance(policy, Mapping) or not policy:
        raise ValidationError(
            "retention policy must be a mapping like {'agent': {'ttl_days': 30, 'max_entries': 1000}}"
        )
    rules: dict[Scope | None, tuple[float | None, int | None]] = {}
    for name, rule in policy.items():
        scope = None if name == "*" else Scope.parse(name)
        if not isinstance(rule, Mapping) or set(rule) - {"ttl_days", "max_entries"} or not rule:
            raise ValidationError(f"retention rule for {name!r} takes ttl_days and/or max_entries")
        ttl, cap = rule.get("ttl_days"), rule.get("max_entries")
        if ttl is not None and (
            isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl <= 0
        ):
            raise ValidationError(f"ttl_days for {name!r} must be a positive number")
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
            raise ValidationError(f"max_entries for {name!r} must be a non-negative integer")
        rules[scope] = (ttl, cap)
    return rules


def apply_retention(
    ctx: MemoryContext, audit: AuditTrail, policy: Mapping[str, Any]
) -> RetentionReport:
    """Archive entries past their scope's TTL (``expired``) or over its cap (``evicted``).

    ``policy`` maps a scope name (or ``"*"`` for every scope) to
    ``{"ttl_days": float, "max_entries": int}``.
    """
    rules = _scope_rules(policy)
    now = ctx.clock.now()
    active = ctx.storage.query(EntryFilter(partitions=ctx.visible_partitions()))
    archivals: list[Archival] = []
    taken: set[str] = set()
    report: dict[str, ScopeRetention] = {}
    for scope, (ttl, cap) in rules.items():
        label = "*" if scope is None else scope.value
        in_scope = [e for e in active if (scope is None or e.scope is scope)
                    and e.id not in taken]
        pool = [e for e in in_scope if evictable(e)]
        protected = len(in_scope) - len(pool)
        expired: list[MemoryEntry] = []
        if ttl is not None:
            cutoff = now - timedelta(days=ttl)
            expired = [e for e in pool if e.created_at < cutoff]
        kept = sorted(
            (e for e in pool if e not in expired), key=lambda e: e.created_at, reverse=True
        )
        # the cap counts every active entry of the scope, protected ones included; only
        # the evictable ones can make room
        room = max(0, cap - protected) if cap is not None else None
        evicted = kept[room:] if room is not None else []
        archivals += [Archival(e.id, ArchiveReason.EXPIRED, now) for e in expired]
        archivals += [Archival(e.id, ArchiveReason.EVICTED, now) for e in evicted]
        taken.update(e.id for e in (*expired, *evicted))
        unmet = protected - cap if cap is not None and protected > cap else 0
        report[label] = ScopeRetention(len(expired), len(evicted), protected, unmet)
    with writing(ctx):
        ctx.storage.archive(archivals)
        audit.record(
            "retention",
            dict(policy),
            details={"report": {k: v.as_dict() for k, v in report.items()},
                     "ids": [a.entry_id for a in archivals]},
        )
    if ctx.vectors is not None and archivals:
        ctx.vectors.remove([a.entry_id for a in archivals])
    return RetentionReport(report)


def purge(
    ctx: MemoryContext,
    audit: AuditTrail,
    older_than: datetime | None = None,
    *,
    force: bool = False,
    dry_run: bool = False,
) -> PurgeReport:
    """Hard-delete archived entries (archived before ``older_than`` when given): the one
    purge path, behind ``Memory.purge`` and ``tulving maintenance purge`` alike. What the
    audit trail, a history chain or a summary's sources need is kept unless ``force``;
    ``dry_run`` counts without deleting (and is not audited: nothing changed)."""
    for name, flag in (("force", force), ("dry_run", dry_run)):
        if not isinstance(flag, bool):
            raise ValidationError(f"{name} must be True or False")
    cutoff = check_time("older_than", older_than)
    everything = _all_visible(ctx)
    referenced = {ref for e in everything for ref in (*e.source_entry_ids, e.supersedes) if ref}
    candidates = [
        e
        for e in everything
        if e.archived_at is not None and (cutoff is None or e.archived_at < cutoff)
    ]
    doomed: list[str] = []
    by_reason: dict[str, int] = {}
    kept = 0
    for e in candidates:
        needed = (
            e.archive_reason in PROTECTED_REASONS
            or e.superseded_by is not None
            or e.supersedes is not None
            or e.id in referenced
        )
        if needed and not force:
            kept += 1
            continue
        doomed.append(e.id)
        reason = e.archive_reason.value if e.archive_reason else "unknown"
        by_reason[reason] = by_reason.get(reason, 0) + 1
    report = PurgeReport(0, kept, len(doomed), by_reason, dry_run)
    if dry_run:
        return report
    with writing(ctx):
        report = attrs.evolve(report, purged=ctx.storage.delete(doomed))
        audit.record(
            "purge",
            {"older_than": cutoff, "force": force},
            details={"ids": doomed, "kept_for_audit": kept, "force": force},
        )
    if ctx.vectors is not None and doomed:
        ctx.vectors.remove(doomed)
    return report
