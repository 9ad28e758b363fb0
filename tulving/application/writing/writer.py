"""The one write path: what happens on ``store`` (and on every other write).

In order, for a batch:
1. each item becomes a validated entry (:func:`tulving.domain.entry_factory.build_entry`),
   goes through the plugins' ``tulving_before_write`` chain (write policy, PII), gets the
   spans every door will mask (:func:`tulving.domain.redaction.find_masks`, kept with it so
   showing it later only applies them) and is sealed (content hash, signature);
2. the batch is embedded once, each entry read with what was written just before it
   (:mod:`tulving.application.plumbing.representation`);
3. under the Memory's lock and in one writing transaction (the tenant's write lock taken
   first, :mod:`tulving.application.plumbing.write_order`), write-time decisions are
   planned from what the store holds now (:mod:`tulving.application.writing.contradictions`;
   on a store with ``WriteMarks``, from candidates read before the lock and checked under
   it against what was written meanwhile, :mod:`tulving.application.writing.write_plans`):
   supersede by key or fact, deduplicate restatements, flag conflicts; then the same
   transaction supersedes and links existing entries by targeted updates (only the link
   fields, rows locked in id order, never a row rewritten from an older read), inserts
   the new entries and writes one audit record per item (the record exists if and only
   if the write happened);
4. the vector index learns the new vectors and forgets the superseded ones (a cache:
   storage is the source of truth, so a crash here is repaired at the next start-up).
   With storage's vector change log it reads them back from the log (``catch_up``): the
   index then follows commits in their order, and its saved position stays exact.

Steps 1-2 (validation, hooks, embedding: the slow part) run outside every lock, so
writers of one memory embed in parallel and queue only to decide and commit. Forgetting
(archive or hard delete) goes through here too, for the same reasons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from tulving.application.governance.audit import AuditTrail
from tulving.application.governance.erasure import every_version, scrub
from tulving.application.governance.integrity import Governance
from tulving.application.plumbing import deadline
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.deferred_vectors import KIND as DEFERRED_VECTORS
from tulving.application.plumbing.enrichment import Enricher
from tulving.application.plumbing.representation import embed_entries
from tulving.application.plumbing.vector_sync import catch_up, follows_log, save_index
from tulving.application.plumbing.write_order import (
    after_commit,
    commit_at_once,
    inside_writing,
    writing,
)
from tulving.application.writing.contradictions import WritePlan, plan_writes
from tulving.application.writing.write_hooks import apply_before_write
from tulving.application.writing.write_plans import PlannedReads
from tulving.domain.entry import MemoryEntry
from tulving.domain.entry_factory import build_entry
from tulving.domain.errors import TulvingError, ValidationError
from tulving.domain.records import AuditDraft
from tulving.domain.redaction import find_masks
from tulving.domain.types import ArchiveReason, MemoryType
from tulving.domain.write_policy import WritePolicy
from tulving.plugins.hooks import WriteContext
from tulving.ports.storage import Archival, Supersession, WriteMarks, WriteOutcome
from tulving.ports.vectors import IndexInStore


class Writer:
    def __init__(self, ctx: MemoryContext, governance: Governance, audit: AuditTrail,
                 enricher: Enricher) -> None:
        self.ctx = ctx
        self.governance = governance
        self.audit = audit
        #: Where a write queues what derives from it (plumbing.enrichment).
        self.enricher = enricher
        #: The Memory's lock: this process's writers decide and commit one at a time.
        self.serial = ctx.serial

    def write(
        self, batch: list[dict[str, Any]], operation: str, session_id: str | None,
        policy: WritePolicy, *, defer_vectors: bool = False, enrich: Sequence[str] = (),
    ) -> list[WriteOutcome]:
        """Write ``batch`` (``store`` keyword dicts) as one all-or-nothing transaction;
        ``policy`` is what the write hooks enforce (the Memory's, read at each write).
        ``defer_vectors``: commit the entries without vectors and queue their embedding
        (the ``vectors`` enrichment) in the same transaction, so the call returns without
        running the model; they are found by full text at once, by vector once the
        worker has run (decisions that need a vector, near duplicates, are not taken).
        ``enrich``: further enrichment kinds queued, in the same transaction, for every
        entry the write inserts (``remember()``'s turns: what is read off them)."""
        ctx = self.ctx
        now = ctx.clock.now()
        dedup = [pop_dedup(fields) for fields in batch]
        named = [unnamed_kept(fields) for fields in batch]
        hook_ctx = WriteContext(ctx.identity.agent_id, ctx.identity.tenant, operation,
                                policy)
        entries = [
            apply_before_write(
                ctx.hooks,
                build_entry(ctx.identity, now, fields, session_id=session_id,
                            model_id=ctx.identity.model_id),
                hook_ctx,
            )
            for fields in batch
        ]
        # what every door will mask, found once here and kept with the entry (see masks)
        entries = [self.governance.seal(attrs.evolve(e, masks=find_masks(e)))
                   for e in self._keep_unnamed(entries, named)]
        vectors: list[Any] = [None] * len(entries)
        deferred = defer_vectors and ctx.embedder is not None
        if ctx.embedder is not None and entries and not deferred:
            matrix = embed_entries(ctx, entries)
            vectors = [matrix[i] for i in range(len(entries))]
        deadline.check("the write")
        planned = None
        earlier: list[AuditDraft] = []  # read records a failed planned commit took
        if (isinstance(ctx.storage, WriteMarks) and ctx.storage.plans_ahead()
                and not inside_writing() and not enrich):
            # plan now, check under the lock (write_plans)
            planned = PlannedReads(ctx, ctx.storage)
            planned.prefetch(entries, vectors, dedup)
            done, earlier = self._commit_planned(ctx.storage, planned, batch, entries,
                                                 vectors, dedup, now, operation, deferred)
            if done is not None:
                return done
        with self.serial:
            with writing(ctx):  # the audit record exists iff the write happened
                # a call past its deadline (a server's --timeout) waited here for the lock
                # and its caller has been answered: it must not commit now
                deadline.check("the write")
                self._check_keys(entries)
                plan = plan_writes(ctx, entries, vectors, dedup, now,
                                   self.governance.may_change,
                                   planned.checked(entries) if planned else None)
                lost = self._supersede(plan, now)
                for entry in plan.reinforced.values():  # evidence added, in this transaction
                    ctx.storage.replace(self.governance.seal(entry))
                written = ctx.storage.write_many(plan.inserts)
                if plan.links:
                    ctx.storage.link_conflicts(sorted(plan.links), now)
                self._queue_enrichment([o.entry.id for o in written], deferred, enrich)
                outcomes = plan.outcomes(written)
                self.audit.record_many(self._drafts(operation, batch, outcomes, plan),
                                       earlier=earlier)
            if not in_store(ctx.vectors):
                if inside_writing():
                    # A write inside another's transaction (an enrichment's commit): the
                    # index follows once that commits, never while it holds the store
                    # (the index's lock is taken before the store's, never after).
                    after_commit(lambda: self._update_index(written, plan, lost))
                else:
                    # Still under the lock: the next writer's near-duplicate check must
                    # find these vectors in an index this process keeps (storage already
                    # has them).
                    self._update_index(written, plan, lost)
        # An index inside the store (pgvector) was changed by the commit itself: the
        # vectors written are indexed, the superseded ones un-flagged; nothing to add.
        return outcomes

    def _drafts(self, operation: str, batch: Sequence[dict[str, Any]],
                outcomes: Sequence[WriteOutcome], plan: WritePlan) -> list[AuditDraft]:
        """One audit record per item: what it became and which decision made it so."""
        return [
            self.audit.draft(operation, fields, entry_id=o.entry.id, details={
                "superseded": o.superseded.id if o.superseded else None,
                "review": o.entry.review_status.value,
                "decision": decision,
                **({"evidence": o.entry.metadata.get("evidence")}
                   if decision == "reinforce" else {}),
            })
            for fields, o, decision in zip(batch, outcomes, plan.decisions, strict=True)
        ]

    def retype(self, changes: Mapping[str, tuple[MemoryType, float]], operation: str) -> int:
        """Give entries another type and importance (a turn the rules read as a decision,
        plan or procedure, once they have read it), signed anew and audited, in the
        caller's writing transaction or one of its own; returns how many changed."""
        ctx = self.ctx
        changed = 0
        with writing(ctx):
            for entry in ctx.storage.get_many(sorted(changes)):
                kind, importance = changes[entry.id]
                if not entry.is_active or entry.type is kind:
                    continue
                ctx.storage.replace(self.governance.seal(attrs.evolve(
                    entry, type=kind, importance=importance, updated_at=ctx.clock.now())))
                self.audit.record(operation, {"retype": kind.value}, entry_id=entry.id,
                                  details={"decision": "retype", "from": entry.type.value,
                                           "to": kind.value})
                changed += 1
        return changed

    def _queue_enrichment(self, inserted: Sequence[str], deferred: bool,
                          enrich: Sequence[str] = ()) -> None:
        """Inside the write's transaction: what derives from the entries it inserts."""
        if deferred:
            self.enricher.queue(DEFERRED_VECTORS, inserted)
        for kind in enrich:
            self.enricher.queue(kind, inserted)
        self.enricher.queue_on_write(inserted)

    def _commit_planned(self, marks: WriteMarks, planned: PlannedReads,
                        batch: Sequence[dict[str, Any]], entries: Sequence[MemoryEntry],
                        vectors: Sequence[Any], dedup: Sequence[bool], now: Any,
                        operation: str, deferred: bool,
                        ) -> tuple[list[WriteOutcome] | None, list[AuditDraft]]:
        """A batch without keys, planned from the prefetch and committed by one storage
        call that checks the plan under the tenant's lock (``write_plans``). None when
        this path does not apply or the check failed (nothing was written then), with
        the queued read records it took for the write under the lock to append."""
        ctx = self.ctx
        if (any(e.key is not None for e in entries)
                or (ctx.vectors is not None and not in_store(ctx.vectors))):
            return None, []  # a key's holder, an index in this process: under the locks
        reads = planned.plan_reads()
        plan = plan_writes(ctx, entries, vectors, dedup, now, self.governance.may_change,
                           reads)
        if reads.missed or plan.reinforced:
            return None, []
        inserted = {e.id for e, _ in plan.inserts}
        flags = {side: plan.updates[side].conflict_ids for pair in plan.links
                 for side in pair if side not in inserted and side in plan.updates}
        outcomes = plan.outcomes([WriteOutcome(entry=e) for e, _ in plan.inserts])
        check = planned.plan_check(entries, vectors, dedup)
        drafts = self._drafts(operation, batch, outcomes, plan)
        supersede = self._supersessions(plan, now)
        earlier = self.audit.take_reads()
        inserted_ids = [e.id for e, _ in plan.inserts]
        tasks = [(DEFERRED_VECTORS, i) for i in inserted_ids if deferred]
        tasks += self.enricher.on_write(inserted_ids)
        try:
            committed = commit_at_once(ctx, lambda: marks.commit_planned(
                check, supersede, flags, plan.inserts, [*earlier, *drafts], now,
                tasks=tasks))
        except BaseException:
            self.audit.requeue_reads(earlier)
            raise
        if committed is None:
            return None, earlier
        if tasks:
            self.enricher.wake()
        return outcomes, []

    def _supersessions(self, plan: WritePlan, now: Any) -> list[Supersession]:
        """The plan's supersedes as targeted updates (signed anew: ``valid_until`` moved)."""
        return [Supersession(old_id, changed.superseded_by or "", changed.archived_at or now,
                             changed.valid_until or now, self.governance.seal(changed).signature)
                for old_id, changed in plan.updates.items()
                if changed.archived_at is not None and changed.superseded_by is not None]

    def _update_index(self, written: Sequence[WriteOutcome], plan: WritePlan,
                      lost: set[str]) -> None:
        self._index(written, [v for _, v in plan.inserts])
        gone = [i for i in plan.unindex if i not in lost]
        if gone and self.ctx.vectors is not None:
            self.ctx.vectors.remove(gone)

    def _supersede(self, plan: WritePlan, now: Any) -> set[str]:
        """Supersede the existing entries the plan replaces, by targeted updates; returns
        the ids left alone: one another writer archived first (a writer outside this lock
        order) is not superseded twice, and the new entry that meant to replace it is
        written as a plain addition rather than as a second successor."""
        items = self._supersessions(plan, now)
        if not items:
            return set()
        lost = {i.entry_id for i in items} - set(self.ctx.storage.supersede_entries(items))
        if lost:
            plan.inserts[:] = [
                (attrs.evolve(e, supersedes=None) if e.supersedes in lost else e, v)
                for e, v in plan.inserts]
        return lost

    def check(self, batch: Sequence[dict[str, Any]], policy: WritePolicy) -> list[str | None]:
        """What ``write`` would refuse in ``batch``, item by item (None: accepted), with
        nothing written: the fields' validation and the write policy, as ``write`` runs
        them. A bulk import checks a whole file with it before its first batch."""
        ctx = self.ctx
        now = ctx.clock.now()
        hook_ctx = WriteContext(ctx.identity.agent_id, ctx.identity.tenant, "check", policy)
        problems: list[str | None] = []
        for fields in batch:
            fields = dict(fields)
            try:
                pop_dedup(fields)
                unnamed_kept(fields)
                apply_before_write(ctx.hooks, build_entry(ctx.identity, now, fields),
                                   hook_ctx)
            except TulvingError as exc:
                problems.append(f"{type(exc).__name__}: {exc}")
            else:
                problems.append(None)
        return problems

    def _keep_unnamed(
        self, entries: list[MemoryEntry], kept: list[frozenset[str]]
    ) -> list[MemoryEntry]:
        """A write under a key that an active entry holds supersedes it, and keeps what it
        does not name: the tags, importance, pinned flag and metadata of the version it
        replaces (correcting a pinned decision's wording must not unpin it). A field the
        write names, even as empty (``tags=[]``, ``metadata={}``, ``pinned=False``), is
        taken as given: that is how a caller clears one."""
        storage = self.ctx.storage
        latest: dict[tuple[str, str], MemoryEntry] = {}  # earlier writes of this batch
        out = []
        for entry, keep in zip(entries, kept, strict=True):
            if entry.key is not None:
                slot = (entry.partition, entry.key)
                holder = latest.get(slot) or (
                    storage.active_by_key([entry.partition], entry.key) if keep else None)
                if holder is not None and keep:
                    entry = attrs.evolve(entry, **{
                        name: _inherited(holder, entry, name) for name in keep})
                latest[slot] = entry
            out.append(entry)
        return out

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
        if follows_log(self.ctx):
            catch_up(self.ctx)
            save_index(self.ctx)  # when the cache file lacks enough to be worth a rewrite
            return
        gone = [o.superseded.id for o in outcomes if o.superseded is not None]
        new = [(o.entry.id, v) for o, v in zip(outcomes, vectors, strict=True) if v is not None]
        if new:
            import numpy as np  # lazily: `import tulving` stays light

            index.add([i for i, _ in new], np.stack([v for _, v in new]))
        if gone:
            index.remove(gone)

    def forget(self, entry: MemoryEntry, key_or_id: str, *, hard: bool) -> MemoryEntry:
        """Archive ``entry`` (reason ``forgotten``) or, with ``hard``, erase it: every
        version of its key and what was derived from them (``erasure.every_version``),
        deleted and scrubbed from the files; audited in the same transaction, without
        content (the key or id hashed, how many versions went)."""
        ctx = self.ctx
        doomed = every_version(ctx, entry) if hard else [entry.id]
        with self.serial, writing(ctx):
            if hard:
                ctx.storage.delete(doomed)
            else:
                ctx.storage.archive(
                    [Archival(entry.id, ArchiveReason.FORGOTTEN, ctx.clock.now())])
            details: dict[str, Any] = {"hard": hard}
            if hard:
                details["erased"] = len(doomed)
            self.audit.record("forget", {"key_or_id": key_or_id, "hard": hard},
                              entry_id=entry.id, details=details)
        if hard:
            scrub(ctx, doomed)
        elif ctx.vectors is not None:
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


#: What a write under a held key keeps from the version it supersedes unless it names it.
KEPT_ON_SUPERSEDE = ("tags", "importance", "pinned", "metadata")


def unnamed_kept(fields: dict[str, Any]) -> frozenset[str]:
    """The fields of ``KEPT_ON_SUPERSEDE`` this write leaves unnamed (absent or None; a
    None is dropped from ``fields`` so the entry gets the plain default)."""
    for name in KEPT_ON_SUPERSEDE:
        if name in fields and fields[name] is None:
            del fields[name]
    return frozenset(name for name in KEPT_ON_SUPERSEDE if name not in fields)


def _inherited(holder: MemoryEntry, entry: MemoryEntry, name: str) -> Any:
    if name == "metadata":  # the governance note describes its own write: this one's
        kept = {k: v for k, v in holder.metadata.items() if k != "governance"}
        if "governance" in entry.metadata:
            kept["governance"] = entry.metadata["governance"]
        return kept
    return getattr(holder, name)


def pop_dedup(fields: dict[str, Any]) -> bool:
    value = fields.pop("dedup", True)
    if not isinstance(value, bool):
        raise ValidationError("dedup must be True or False")
    return value


def in_store(index: object) -> bool:
    """Whether the vector index lives in storage's engine (``IndexInStore``: the commit
    indexes what it writes)."""
    return isinstance(index, IndexInStore) and bool(index.in_store)
