"""Governance services of one Memory: signing, review, integrity checks and health.

The write policy itself runs as a plugin hook (:mod:`tulving.plugins.policies`); this
module holds what needs the Memory's adapters: the signing key read from the
environment, human review of held entries, the tamper check and the health report.
Corrections, rollback/retention and erasure live in their own modules.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import attrs

from tulving.application.governance.audit import AuditTrail
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.write_order import writing
from tulving.domain.entry import MemoryEntry, content_hash
from tulving.domain.errors import ValidationError
from tulving.domain.query import EntryFilter
from tulving.domain.reports import Report
from tulving.domain.signing import sign, signature_valid
from tulving.domain.types import ArchiveReason, ReviewStatus
from tulving.domain.write_policy import WritePolicy, check_may_change, may_change

#: Trust bands of the health report: [0, 0.6) low, [0.6, 0.85) medium, [0.85, 1] high.
TRUST_BANDS = (("low", 0.6), ("medium", 0.85), ("high", float("inf")))


@attrs.frozen
class Tampered(Report):
    """An entry ``verify`` found changed since it was written, and how it knows."""

    id: str
    reason: str


@attrs.frozen
class IntegrityReport(Report):
    """``verify``: ``checked`` visible entries (archived included), each content against
    its hash and, with a signing key, its signature (``signatures_checked``);
    ``tampered`` lists the ones that fail, ``ok`` says there are none."""

    ok: bool
    checked: int
    signed: int
    unsigned: int
    signatures_checked: bool
    tampered: tuple[Tampered, ...]


@attrs.frozen
class HealthReport(Report):
    """``health``: active entries by trust band (``TRUST_BANDS``), held for review,
    rejected, with unresolved conflicts; archived entries by reason (``rolled_back`` on
    its own too); whether entries are signed."""

    active: int
    trust_bands: Mapping[str, int]
    pending_review: int
    rejected: int
    unresolved_conflicts: int
    rolled_back: int
    archived: Mapping[str, int]
    signing: bool


def trust_band(trust: float) -> str:
    for name, upper in TRUST_BANDS:
        if trust < upper:
            return name
    return TRUST_BANDS[-1][0]


class Governance:
    def __init__(
        self,
        ctx: MemoryContext,
        policy: WritePolicy,
        audit: AuditTrail,
        signing_key: bytes | None,
    ) -> None:
        self.ctx = ctx
        self.policy = policy
        self.audit = audit
        self.signing_key = signing_key

    def seal(self, entry: MemoryEntry) -> MemoryEntry:
        """Sign ``entry`` when a key is configured (after every write hook has run)."""
        if self.signing_key is None:
            return entry
        return attrs.evolve(entry, signature=sign(entry, self.signing_key))

    def check_may_change(self, entry: MemoryEntry, action: str) -> None:
        """ScopeError unless this agent may change ``entry`` (see ``may_change``)."""
        check_may_change(entry, self.ctx.identity.agent_id, self.policy, action)

    def may_change(self, entry: MemoryEntry) -> bool:
        return may_change(entry, self.ctx.identity.agent_id, self.policy)

    # review -----------------------------------------------------------------------
    def review(self, entry: MemoryEntry, approve: bool) -> MemoryEntry:
        if not isinstance(approve, bool):
            raise ValidationError("approve must be True or False")
        status = ReviewStatus.APPROVED if approve else ReviewStatus.REJECTED
        now = self.ctx.clock.now()
        changed = attrs.evolve(entry, review_status=status, updated_at=now)
        storage = self.ctx.storage
        with writing(self.ctx):
            storage.replace(changed)
            self.audit.record(
                "review",
                {"id": entry.id, "approve": approve},
                entry_id=entry.id,
                details={"status": status.value},
            )
        return changed

    def pending_review(self) -> list[MemoryEntry]:
        entries = self.ctx.storage.query(EntryFilter(partitions=self.ctx.visible_partitions()))
        return [e for e in entries if e.review_status is ReviewStatus.PENDING]

    # integrity --------------------------------------------------------------------
    def verify(self) -> IntegrityReport:
        """Check every visible entry (archived included): content hash and signature."""
        entries = self.ctx.storage.query(
            EntryFilter(partitions=self.ctx.visible_partitions(), include_archived=True)
        )
        tampered: list[Tampered] = []
        signed = unsigned = 0
        for entry in entries:
            if content_hash(entry.content) != entry.content_hash:
                tampered.append(Tampered(entry.id, "content does not match its hash"))
                continue
            if entry.signature is None:
                unsigned += 1
                continue
            signed += 1
            if self.signing_key is not None and not signature_valid(entry, self.signing_key):
                tampered.append(Tampered(entry.id, "signature does not match"))
        return IntegrityReport(not tampered, len(entries), signed, unsigned,
                               self.signing_key is not None, tuple(tampered))

    def health(self) -> HealthReport:
        visible = self.ctx.visible_partitions()
        storage = self.ctx.storage
        active = storage.query(EntryFilter(partitions=visible))
        bands: Counter[str] = Counter({name: 0 for name, _ in TRUST_BANDS})
        pending = rejected = conflicts = 0
        for entry in active:
            bands[trust_band(entry.trust)] += 1
            pending += entry.review_status is ReviewStatus.PENDING
            rejected += entry.review_status is ReviewStatus.REJECTED
            conflicts += bool(entry.conflict_ids)
        archived = {
            reason.value: storage.count(EntryFilter(partitions=visible, archive_reasons=(reason,)))
            for reason in ArchiveReason
        }
        return HealthReport(len(active), dict(bands), pending, rejected, conflicts,
                            archived[ArchiveReason.ROLLED_BACK.value], archived,
                            self.signing_key is not None)
