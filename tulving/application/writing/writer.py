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
   With storage's vector change log it reads them back from the log (``catch_up``): the
   index then follows commits in their order, and its saved position stays exact.

Forgetting (archive or hard delete) goes through here too, for the same reasons.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from tulving.application.governance.audit import AuditTrail
from tulving.application.governance.integrity import Governance
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.representation import embed_entries
from tulving.application.plumbing.vector_sync import catch_up, follows_log, save_index
from tulving.application.writing.contradictions import plan_writes
from tulving.application.writing.write_hooks import apply_before_write
from tulving.domain.entry import MemoryEntry
from tulving.domain.entry_factory import build_entry
from tulving.domain.errors import TulvingError, ValidationError
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
        entries = [self.governance.seal(e) for e in self._keep_unnamed(entries, named)]
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
