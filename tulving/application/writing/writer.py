"""The one write path: what happens on ``store`` (and on every other write).

In order, for a batch:
1. each item becomes a validated entry (:func:`tulving.domain.entry_factory.build_entry`),
   goes through the plugins' ``tulving_before_write`` chain (write policy, PII) and is
   sealed (content hash, signature);
2. the batch is embedded once, each entry read with what was written just before it
   (:mod:`tulving.application.plumbing.representation`);
3. under the Memory's lock and in one writing transaction (the tenant's write lock taken
   first, :mod:`tulving.application.plumbing.write_order`), write-time decisions are
   planned from what the store holds now (:mod:`tulving.application.writing.contradictions`):
   supersede by key or fact, deduplicate restatements, flag conflicts; then the same
   transaction supersedes and links existing entries by targeted updates (only the link
   fields, rows locked in id order, never a row rewritten from an older read), inserts
   the new entries and writes one audit record per item (the record exists if and only
   if the write happened);
4. the vector index learns the new vectors and forgets the superseded ones (a cache:
   storage is the source of truth, so a crash here is repaired at the next start-up).

Steps 1-2 (validation, hooks, embedding: the slow part) run outside every lock, so
writers of one memory embed in parallel and queue only to decide and commit. Forgetting
(archive or hard delete) goes through here too, for the same reasons.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import attrs

from tulving.application.governance.audit import AuditTrail
from tulving.application.governance.integrity import Governance
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.representation import embed_entries
from tulving.application.plumbing.write_order import writing
from tulving.application.writing.contradictions import WritePlan, plan_writes
from tulving.application.writing.write_hooks import apply_before_write
from tulving.domain.entry import MemoryEntry
from tulving.domain.entry_factory import build_entry
from tulving.domain.errors import ValidationError
from tulving.domain.types import ArchiveReason
from tulving.domain.write_policy import WritePolicy
from tulving.plugins.hooks import WriteContext
from tulving.ports.storage import Archival, Supersession, WriteOutcome


class Writer:
    def __init__(self, ctx: MemoryContext, governance: Governance, audit: AuditTrail,
                 serial: threading.RLock | None = None) -> None:
        self.ctx = ctx
        self.governance = governance
        self.audit = audit
        #: The Memory's lock: this process's writers decide and commit one at a time.
        self.serial = serial if serial is not None else threading.RLock()

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
        with self.serial:
            with writing(ctx):  # the audit record exists iff the write happened
                self._check_keys(entries)
                plan = plan_writes(ctx, entries, vectors, dedup, now,
                                   self.governance.may_change)
                lost = self._supersede(plan, now)
                written = ctx.storage.write_many(plan.inserts)
                if plan.links:
                    ctx.storage.link_conflicts(sorted(plan.links), now)
                outcomes = plan.outcomes(written)
                self.audit.record_many([
                    self.audit.draft(operation, fields, entry_id=o.entry.id, details={
                        "superseded": o.superseded.id if o.superseded else None,
                        "review": o.entry.review_status.value,
                        "decision": decision,
                    })
                    for fields, o, decision in zip(batch, outcomes, plan.decisions,
                                                   strict=True)
                ])
            # Still under the lock: the next writer's near-duplicate check must find these
            # vectors in an index kept in this process (a cache; storage already has them).
            self._index(written, [v for _, v in plan.inserts])
            gone = [i for i in plan.unindex if i not in lost]
            if gone and ctx.vectors is not None:
                ctx.vectors.remove(gone)
        return outcomes

    def _supersede(self, plan: WritePlan, now: Any) -> set[str]:
        """Supersede the existing entries the plan replaces, by targeted updates; returns
        the ids left alone: one another writer archived first (a writer outside this lock
        order) is not superseded twice, and the new entry that meant to replace it is
        written as a plain addition rather than as a second successor."""
        wanted = {old_id: changed for old_id, changed in plan.updates.items()
                  if changed.archived_at is not None and changed.superseded_by is not None}
        if not wanted:
            return set()
        items = [Supersession(old_id, changed.superseded_by or "", changed.archived_at or now,
                              changed.valid_until or now,
                              self.governance.seal(changed).signature)
                 for old_id, changed in wanted.items()]
        lost = set(wanted) - set(self.ctx.storage.supersede_entries(items))
        if lost:
            plan.inserts[:] = [
                (attrs.evolve(e, supersedes=None) if e.supersedes in lost else e, v)
                for e, v in plan.inserts]
        return lost

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
        with self.serial, writing(ctx):
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
        with self.serial, writing(ctx):
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
