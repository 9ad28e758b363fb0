"""The one write path: what happens on ``store`` (and on every other write).

In order, for a batch:
1. each item becomes a validated entry (:func:`tulving.domain.entry_factory.build_entry`),
   goes through the plugins' ``tulving_before_write`` chain (write policy, PII) and is
   sealed (content hash, signature);
2. the batch is embedded once, each entry read with what was written just before it
   (:mod:`tulving.application.plumbing.representation`);
3. write-time decisions are planned (:mod:`tulving.application.writing.contradictions`):
   supersede by key or fact, deduplicate restatements, flag conflicts;
4. one transaction writes the changed existing entries, the new entries and one audit
   record per item (the record exists if and only if the write happened);
5. the vector index learns the new vectors and forgets the superseded ones (a cache:
   storage is the source of truth, so a crash here is repaired at the next start-up).

Forgetting (archive or hard delete) goes through here too, for the same reasons.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tulving.application.governance.audit import AuditTrail
from tulving.application.governance.integrity import Governance
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.representation import embed_entries
from tulving.application.writing.contradictions import plan_writes
from tulving.application.writing.write_hooks import apply_before_write
from tulving.domain.entry import MemoryEntry
from tulving.domain.entry_factory import build_entry
from tulving.domain.errors import ValidationError
from tulving.domain.types import ArchiveReason
from tulving.domain.write_policy import WritePolicy
from tulving.plugins.hooks import WriteContext
from tulving.ports.storage import Archival, WriteOutcome


class Writer:
    def __init__(self, ctx: MemoryContext, governance: Governance, audit: AuditTrail) -> None:
        self.ctx = ctx
        self.governance = governance
        self.audit = audit

    def write(
        self, batch: list[dict[str, Any]], operation: str, session_id: str | None,
        policy: WritePolicy,
    ) -> list[WriteOutcome]:
        """Write ``batch`` (``store`` keyword dicts) as one all-or-nothing transaction;
        ``policy`` is what the write hooks enforce (the Memory's, read at each write)."""
        ctx = self.ctx
        now = ctx.clock.now()
        dedup = [pop_dedup(fields) for fields in batch]
        hook_ctx = WriteContext(ctx.identity.agent_id, ctx.identity.tenant, operation,
                                policy)
        entries = [
            self.governance.seal(apply_before_write(
                ctx.hooks,
                build_entry(ctx.identity, now, fields, session_id=session_id,
                            model_id=ctx.identity.model_id),
                hook_ctx,
            ))
            for fields in batch
        ]
        vectors: list[Any] = [None] * len(entries)
        if ctx.embedder is not None and entries:
            matrix = embed_entries(ctx, entries)
            vectors = [matrix[i] for i in range(len(entries))]
        self._check_keys(entries)
        plan = plan_writes(ctx, entries, vectors, dedup, now, self.governance.may_change)
        with ctx.storage.transaction():  # the audit record exists iff the write happened
            for changed in plan.updates.values():  # superseded or flagged existing entries
                ctx.storage.replace(self.governance.seal(changed))
            written = ctx.storage.write_many(plan.inserts)
            outcomes = plan.outcomes(written)
            self.audit.record_many([
                self.audit.draft(operation, fields, entry_id=o.entry.id, details={
                    "superseded": o.superseded.id if o.superseded else None,
                    "review": o.entry.review_status.value,
                    "decision": decision,
                })
                for fields, o, decision in zip(batch, outcomes, plan.decisions, strict=True)
            ])
        self._index(written, [v for _, v in plan.inserts])
        if plan.unindex and ctx.vectors is not None:
            ctx.vectors.remove(plan.unindex)
        return outcomes

    def _check_keys(self, entries: Sequence[MemoryEntry]) -> None:
        """A key addresses one entry: writing it again supersedes the holder, which is a
        change of the holder, refused when it is another agent's shared entry."""
        storage = self.ctx.storage
        for entry in entries:
            if entry.key is not None and entry.scope.value not in ("agent", "session"):
                holder = storage.active_by_key([entry.partition], entry.key)
                if holder is not None:
                    self.governance.check_may_change(holder, "supersede")

    def _index(self, outcomes: Sequence[WriteOutcome], vectors: Sequence[Any]) -> None:
        index = self.ctx.vectors
        if index is None:
            return
        gone = [o.superseded.id for o in outcomes if o.superseded is not None]
        new = [(o.entry.id, v) for o, v in zip(outcomes, vectors, strict=True) if v is not None]
        if new:
            import numpy as np  # lazily: `import tulving` stays light

            index.add([i for i, _ in new], np.stack([v for _, v in new]))
        if gone:
            index.remove(gone)

    def forget(self, entry: MemoryEntry, key_or_id: str, *, hard: bool) -> MemoryEntry:
        """Archive ``entry`` (reason ``forgotten``) or, with ``hard``, delete it for good;
        audited in the same transaction."""
        ctx = self.ctx
        with ctx.storage.transaction():
            if hard:
                ctx.storage.delete([entry.id])
            else:
                ctx.storage.archive(
                    [Archival(entry.id, ArchiveReason.FORGOTTEN, ctx.clock.now())])
            self.audit.record("forget", {"key_or_id": key_or_id, "hard": hard},
                              entry_id=entry.id, details={"hard": hard})
        if ctx.vectors is not None:
            ctx.vectors.remove([entry.id])
        return entry


    def forget_many(self, entries: Sequence[MemoryEntry], reason: dict[str, Any], *,
                    hard: bool) -> int:
        """Archive (``forgotten``) or delete ``entries`` in one transaction with one audit
        record naming them (``clear`` by scope)."""
        ctx = self.ctx
        ids = [e.id for e in entries]
        if not ids:
            return 0
        with ctx.storage.transaction():
            if hard:
                count = ctx.storage.delete(ids)
            else:
                now = ctx.clock.now()
                count = ctx.storage.archive(
                    [Archival(i, ArchiveReason.FORGOTTEN, now) for i in ids])
            self.audit.record("clear", reason, details={**reason, "ids": ids, "hard": hard})
        if ctx.vectors is not None:
            ctx.vectors.remove(ids)
        return count


def pop_dedup(fields: dict[str, Any]) -> bool:
    value = fields.pop("dedup", True)
    if not isinstance(value, bool):
        raise ValidationError("dedup must be True or False")
    return value
