"""A write planned before its tenant's write lock and checked under it.

Why: on a store that many processes write (PostgreSQL), a tenant's writes commit one at a
time, so what a write does while it holds its tenant's lock bounds the tenant's write rate
whatever the number of server replicas. Planning (the exact-twin, fact-holder and
near-duplicate reads of :mod:`tulving.application.writing.contradictions`: an index probe
each, and a vector search) needs no lock if the plan is checked against what was written
while it was made. So, on a store with ``WriteMarks``:

1. outside every lock, the tenant's write count is read, then every candidate the plan's
   rules could ask for, for every item of the batch (:meth:`PlannedReads.prefetch`);
2. under the lock, one read (``written_since``) brings the candidates as they are now and
   every entry of the batch's partitions that a writing transaction wrote since that
   count, with its vector; the plan is then made by the same rules from those
   (:class:`CheckedReads`): an entry another writer stored meanwhile is a twin, a
   holder or a neighbour exactly as if it had been read now (its cosine computed here), a
   candidate archived meanwhile no longer counts.

A read the prefetch did not make (the plan took another turn under the lock) is made
from the store then, under the lock: correct, only slower. Keys need no check here: the
store supersedes a key's holder under the key's own lock (``write_many``).

Faster still (``plan_check``): a batch without keys is planned from the prefetch alone
and committed by one storage call (``WriteMarks.commit_planned``: one round trip) that
takes the lock, checks in the store that nothing the plan read changed and nothing
written since could change it (same partition, and the same text, the same fact, or a
vector near enough to be a near duplicate), and writes. A failed check writes nothing;
the writer then plans under the lock as above. Only the plan's candidates of this
tenant are checked: another tenant's entries never change this tenant's decisions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tulving.application.plumbing.context import MemoryContext
from tulving.application.writing.contradictions import (
    CONFLICT_THRESHOLD,
    HOLDERS_READ,
    NEIGHBOURS,
    TWINS_READ,
    StoreReads,
    checks_vectors,
    dedups,
    wants_vector_check,
)
from tulving.application.writing.reinforce import reinforces
from tulving.domain.entry import MemoryEntry
from tulving.domain.identity import tenant_of_partition
from tulving.domain.query import ScoredId
from tulving.ports.storage import PlanCheck, WriteMarks

#: Neighbours read before the lock beyond the ones the rule looks at, so the rule still
#: has its ``NEIGHBOURS`` when a few were archived meanwhile.
SPARE_NEIGHBOURS = 4


class PlannedReads:
    """The candidates of one batch, read before the lock, after the tenant's count."""

    def __init__(self, ctx: MemoryContext, marks: WriteMarks) -> None:
        self.ctx = ctx
        self.marks = marks
        self.mark = marks.write_mark(ctx.identity.tenant)  # first: see ``WriteMarks``
        self.store = StoreReads(ctx)
        self.twin_ids: dict[str, list[str]] = {}
        self.holder_ids: dict[str, list[str]] = {}
        self.hits: dict[str, list[ScoredId]] = {}
        self.restated_ids: dict[str, list[str]] = {}
        self.rows: dict[str, MemoryEntry] = {}  # the candidates as read (plan_reads)

    def prefetch(self, entries: Sequence[MemoryEntry], vectors: Sequence[Any],
                 dedup: Sequence[bool]) -> None:
        """Read what the plan's rules could ask of each entry, whatever they decide."""
        check_vectors = checks_vectors(self.ctx, entries)
        for entry, vector, wanted in zip(entries, vectors, dedup, strict=True):
            use_dedup = wanted and dedups(entry)
            if use_dedup:
                self.twin_ids[entry.id] = self.store.twin_ids(entry)
            if use_dedup and reinforces(entry):
                restated = self.store.restated(entry)
                self.restated_ids[entry.id] = [e.id for e in restated]
                self.rows.update((e.id, e) for e in restated)
            if entry.entity is not None and entry.attribute is not None:
                holders = self.store.holders(entry)
                self.holder_ids[entry.id] = [e.id for e in holders]
                self.rows.update((e.id, e) for e in holders)
            elif wants_vector_check(entry, vector, use_dedup, check_vectors):
                self.hits[entry.id] = self.store.scored(vector,
                                                        NEIGHBOURS + SPARE_NEIGHBOURS)
        missing = sorted(self.candidates() - set(self.rows))
        if missing:
            self.rows.update((e.id, e) for e in self.ctx.storage.get_many(missing))

    def candidates(self) -> set[str]:
        """Every id the prefetch read."""
        ids = {i for found in (*self.twin_ids.values(), *self.holder_ids.values(),
                               *self.restated_ids.values())
               for i in found}
        ids.update(h.id for hits in self.hits.values() for h in hits)
        return ids

    def plan_reads(self) -> CheckedReads:
        """``PlanReads`` from the prefetch alone (nothing written since, as far as it
        knows): the plan ``commit_planned`` checks in the store."""
        return CheckedReads(self, list(self.rows.values()), [])

    def plan_check(self, entries: Sequence[MemoryEntry], vectors: Sequence[Any],
                   dedup: Sequence[bool]) -> PlanCheck:
        """What the store must find unchanged for a plan from ``plan_reads`` to hold."""
        tenant = self.ctx.identity.tenant
        check_vectors = checks_vectors(self.ctx, entries)
        hashes, facts, near = [], [], []
        for entry, vector, wanted in zip(entries, vectors, dedup, strict=True):
            use_dedup = wanted and dedups(entry)
            if use_dedup:
                hashes.append(entry.content_hash)
            if entry.entity is not None and entry.attribute is not None:
                facts.append((entry.entity, entry.attribute))
            elif wants_vector_check(entry, vector, use_dedup, check_vectors):
                near.append(vector)
        mine = sorted(i for i in self.candidates()
                      if i in self.rows and tenant_of_partition(self.rows[i].partition) == tenant)
        return PlanCheck(tenant=tenant, mark=self.mark,
                         partitions=tuple(sorted({e.partition for e in entries})),
                         candidates=tuple(mine), hashes=tuple(sorted(set(hashes))),
                         facts=tuple(sorted(set(facts))), vectors=tuple(near),
                         near=CONFLICT_THRESHOLD)

    def checked(self, entries: Sequence[MemoryEntry]) -> CheckedReads:
        """Under the tenant's write lock: the candidates now, and what was written since
        the count (one read)."""
        now, written = self.marks.written_since(
            self.mark, sorted({e.partition for e in entries}), sorted(self.candidates()))
        return CheckedReads(self, now, written)


class CheckedReads:
    """``PlanReads`` answered from the prefetched candidates as they are now and the
    entries written since the prefetch (see the module doc)."""

    def __init__(self, planned: PlannedReads, now: Sequence[MemoryEntry],
                 written: Sequence[tuple[MemoryEntry, Any]]) -> None:
        self.planned = planned
        self.missed = False  # a read the prefetch had not made went to the store
        self.now = {entry.id: entry for entry in now}
        self.written = [e for e, _ in written]
        import numpy as np  # lazily: `import tulving` stays light

        with_vectors = [(e, v) for e, v in written if v is not None]
        self.written_ids = [e.id for e, _ in with_vectors]
        self.written_vectors = (
            _unit(np.stack([np.asarray(v, dtype=np.float32).reshape(-1)
                            for _, v in with_vectors])) if with_vectors else None)

    def twins(self, entry: MemoryEntry) -> list[MemoryEntry]:
        found = self._active(entry, self.planned.twin_ids, lambda e: (
            e.content_hash == entry.content_hash))
        if found is None:
            return self.planned.store.twins(entry)
        return [found[i] for i in sorted(found)][:TWINS_READ]

    def holders(self, entry: MemoryEntry) -> list[MemoryEntry]:
        found = self._active(entry, self.planned.holder_ids, lambda e: (
            e.entity == entry.entity and e.attribute == entry.attribute))
        if found is None:
            return self.planned.store.holders(entry)
        return [found[i] for i in sorted(found, reverse=True)][:HOLDERS_READ]

    def _active(self, entry: MemoryEntry, prefetched: dict[str, list[str]],
                matches: Callable[[MemoryEntry], bool]) -> dict[str, MemoryEntry] | None:
        """The active ones among ``entry``'s prefetched candidates (as they are now) and
        the entries of its partition written since that ``matches`` accepts; None (a miss,
        noted) when the prefetch read nothing of that kind for ``entry``."""
        known = prefetched.get(entry.id)
        if known is None:
            self.missed = True
            return None
        found = {i: self.now[i] for i in known if i in self.now}
        found.update((e.id, e) for e in self.written
                     if e.partition == entry.partition and matches(e))
        return {i: e for i, e in found.items() if e.is_active}

    def restated(self, entry: MemoryEntry) -> list[MemoryEntry]:
        # A plan that reinforces is written under the lock (``Writer``); one that does
        # not is checked here against what was written since the prefetch.
        found = self._active(entry, self.planned.restated_ids, lambda e: (
            e.type is entry.type))
        if found is None:
            return self.planned.store.restated(entry)
        return [found[i] for i in sorted(found)]

    def neighbours(self, entry: MemoryEntry, vector: Any) -> list[tuple[MemoryEntry, float]]:
        known = self.planned.hits.get(entry.id)
        if known is None:
            self.missed = True
            return self.planned.store.neighbours(entry, vector)
        by_id = {**self.now, **{e.id: e for e in self.written}}
        scores = {h.id: h.score for h in known if h.id in by_id and by_id[h.id].is_active}
        if self.written_vectors is not None:
            import numpy as np

            query = _unit(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0]
            for entry_id, score in zip(self.written_ids, self.written_vectors @ query,
                                       strict=True):
                scores[entry_id] = float(score)
        best = sorted(scores, key=lambda i: (-scores[i], i))[:NEIGHBOURS]
        return [(by_id[i], scores[i]) for i in best if scores[i] >= CONFLICT_THRESHOLD]


def _unit(matrix: Any) -> Any:
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)
