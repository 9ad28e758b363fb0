"""Contract of the optional ``WriteMarks`` capability (``tulving.ports.storage``): a write
planned before its tenant's write lock and checked under it, so the lock is held for the
check and the commit only.

Mixed into ``contract_tests.storage.StorageContract``; skipped, naming the capability, for
an adapter without it (its writers decide under the lock, as a single writer does).
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from contract_tests.builders import ALICE, BOB, Clockwork, make_entry
from tulving.domain.records import AuditDraft
from tulving.domain.types import Scope
from tulving.ports.storage import PlanCheck, Storage, WriteMarks

PARTITIONS = (ALICE.partition_for(Scope.AGENT),)


def _marks(storage: Storage) -> WriteMarks:
    if not isinstance(storage, WriteMarks):
        pytest.skip(f"{storage.name} offers no WriteMarks (optional): writes decide "
                    "under the tenant's write lock")
    return storage


def _vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(8).astype(np.float32)
    return v / np.linalg.norm(v)


def _locked_write(storage: Storage, *entries: object, tenant: str = ALICE.tenant) -> None:
    with storage.transaction():
        storage.lock_tenant_writes(tenant)
        for entry in entries:
            storage.write(entry)  # type: ignore[arg-type]


class WriteMarksContract:
    """Mixed into the storage suite; uses its ``storage`` and ``clock``."""

    def test_the_mark_counts_a_tenants_writing_transactions(self, storage: Storage,
                                                            clock: Clockwork) -> None:
        marks = _marks(storage)
        before = marks.write_mark(ALICE.tenant)
        _locked_write(storage, make_entry(clock, "one"))
        _locked_write(storage, make_entry(clock, "two"))
        assert marks.write_mark(ALICE.tenant) == before + 2
        bob = marks.write_mark(BOB.tenant)
        _locked_write(storage, make_entry(clock, "bob's", identity=BOB), tenant=BOB.tenant)
        assert marks.write_mark(ALICE.tenant) == before + 2  # another tenant's count
        assert marks.write_mark(BOB.tenant) == bob + 1

    def test_written_since_returns_what_changed_after_the_mark(self, storage: Storage,
                                                               clock: Clockwork) -> None:
        marks = _marks(storage)
        old = make_entry(clock, "written before the plan")
        _locked_write(storage, old)
        mark = marks.write_mark(ALICE.tenant)
        assert marks.written_since(mark, PARTITIONS, [old.id]) == ([old], [])
        new = make_entry(clock, "written after the plan read")
        with storage.transaction():
            storage.lock_tenant_writes(ALICE.tenant)
            storage.write(new, _vector(1))
        now, changed = marks.written_since(mark, PARTITIONS, [old.id])
        assert now == [old]
        assert [e.id for e, _ in changed] == [new.id]
        np.testing.assert_array_equal(changed[0][1], _vector(1))
        assert marks.written_since(mark, (BOB.partition_for(Scope.AGENT),)) == ([], [])

    def test_a_plan_nothing_outdated_commits_counted_and_audited(self, storage: Storage,
                                                                 clock: Clockwork) -> None:
        marks = _marks(storage)
        mark = marks.write_mark(ALICE.tenant)
        entry = make_entry(clock, "planned before the lock")
        at = clock.tick()
        done = marks.commit_planned(
            PlanCheck(ALICE.tenant, mark, PARTITIONS, ()), [], {}, [(entry, _vector(2))],
            [AuditDraft(ALICE.tenant, at, "agent-a", "store", entry.id, "h")], at)
        assert done is not None
        assert [r.entry_id for r in done.records] == [entry.id] and done.held >= 0
        assert storage.get(entry.id) == entry
        assert marks.write_mark(ALICE.tenant) == mark + 1

    def test_a_plan_whose_candidate_changed_writes_nothing(self, storage: Storage,
                                                           clock: Clockwork) -> None:
        marks = _marks(storage)
        candidate = make_entry(clock, "the plan read this")
        _locked_write(storage, candidate)
        mark = marks.write_mark(ALICE.tenant)
        with storage.transaction():  # meanwhile, another writer changes it
            storage.lock_tenant_writes(ALICE.tenant)
            storage.replace(attrs.evolve(candidate, tags=("changed",),
                                         updated_at=clock.tick()))
        entry = make_entry(clock, "planned on an old read")
        at = clock.tick()
        assert marks.commit_planned(
            PlanCheck(ALICE.tenant, mark, PARTITIONS, (candidate.id,)), [], {},
            [(entry, None)], [AuditDraft(ALICE.tenant, at, "agent-a", "store", entry.id,
                                         "h")], at) is None
        assert storage.get(entry.id) is None

    def test_a_twin_written_since_the_mark_outdates_the_plan(self, storage: Storage,
                                                             clock: Clockwork) -> None:
        marks = _marks(storage)
        mark = marks.write_mark(ALICE.tenant)
        twin = make_entry(clock, "the same words")
        _locked_write(storage, twin)
        entry = make_entry(clock, "the same words")
        at = clock.tick()
        assert marks.commit_planned(
            PlanCheck(ALICE.tenant, mark, PARTITIONS, (), hashes=(entry.content_hash,)),
            [], {}, [(entry, None)], [], at) is None
        assert storage.get(entry.id) is None

    def test_a_plan_is_refused_inside_a_transaction(self, storage: Storage,
                                                    clock: Clockwork) -> None:
        marks = _marks(storage)
        assert marks.plans_ahead()
        entry = make_entry(clock, "joins the transaction instead")
        with storage.transaction():
            assert not marks.plans_ahead()
            at = clock.tick()
            assert marks.commit_planned(
                PlanCheck(ALICE.tenant, marks.write_mark(ALICE.tenant), PARTITIONS, ()),
                [], {}, [(entry, None)], [], at) is None
        assert storage.get(entry.id) is None
