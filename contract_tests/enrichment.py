"""Contract of the optional ``EnrichmentTasks`` capability (``tulving.ports.storage``):
durable tasks of the work derived from a write, claimed with a lease and finished in the
transaction that writes their result (the rules: ``tulving.domain.enrichment``).

Mixed into ``contract_tests.storage.StorageContract``; skipped with the reason for an
adapter without the capability (a Memory then keeps its tasks in process memory). The
race runs threads against one adapter: a store shared by several connections passes it
only if each claim is one atomic statement.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from contract_tests.builders import Clockwork
from contract_tests.shared_state import RACERS, race
from tulving.domain.enrichment import TaskBacklog
from tulving.domain.errors import ReadOnlyError
from tulving.ports.storage import EnrichmentTasks, Storage

LEASE = timedelta(minutes=5)


def _tasks(storage: Storage) -> EnrichmentTasks:
    if not isinstance(storage, EnrichmentTasks):
        pytest.skip(f"{storage.name} keeps no EnrichmentTasks (optional): a Memory keeps "
                    "its enrichment tasks in process memory")
    return storage


class EnrichmentContract:
    """Mixed into the storage suite; uses its ``storage``, ``make_storage`` and ``clock``."""

    def test_tasks_are_added_once_and_claimed_oldest_first(self, storage: Storage,
                                                            clock: Clockwork) -> None:
        tasks = _tasks(storage)
        at = clock.tick()
        assert tasks.add_tasks("vectors", ["e1", "e2", "e3", "e2"], at) == 3
        assert tasks.add_tasks("vectors", ["e2", "e4"], clock.tick()) == 1  # e2 is queued
        assert tasks.add_tasks("strong", ["e1"], clock.tick()) == 1  # another kind
        assert tasks.add_tasks("vectors", [], clock.tick()) == 0
        now = clock.tick()
        assert tasks.claim_tasks("vectors", "w1", now, now + LEASE, 3) == ["e1", "e2", "e3"]
        assert tasks.task_backlog(now) == {"strong": TaskBacklog(pending=1),
                                           "vectors": TaskBacklog(pending=1, running=3)}
        assert tasks.claim_tasks("vectors", "w2", now, now + LEASE, 10) == ["e4"]
        assert tasks.claim_tasks("vectors", "w2", now, now + LEASE, 10) == []
        assert tasks.claim_tasks("vectors", "w3", now, now + LEASE, 0) == []

    def test_a_live_lease_is_not_claimed_again_a_lapsed_one_is(self, storage: Storage,
                                                               clock: Clockwork) -> None:
        tasks = _tasks(storage)
        tasks.add_tasks("extract", ["s1"], clock.tick())
        now = clock.tick()
        assert tasks.claim_tasks("extract", "w1", now, now + LEASE, 5) == ["s1"]
        assert tasks.claim_tasks("extract", "w2", now + LEASE / 2, now + LEASE * 2, 5) == []
        later = now + LEASE + timedelta(seconds=1)
        assert tasks.claim_tasks("extract", "w2", later, later + LEASE, 5) == ["s1"]
        assert tasks.task_backlog(later) == {"extract": TaskBacklog(running=1)}
        # the first owner's lease was taken over: its finish writes nothing
        assert tasks.finish_tasks("extract", ["s1"], "w1") == []
        assert tasks.finish_tasks("extract", ["s1"], "w2") == ["s1"]
        assert tasks.task_backlog(later) == {}

    def test_finish_returns_the_targets_still_held_in_their_order(
            self, storage: Storage, clock: Clockwork) -> None:
        tasks = _tasks(storage)
        tasks.add_tasks("vectors", ["a", "b", "c"], clock.tick())
        now = clock.tick()
        assert tasks.claim_tasks("vectors", "w1", now, now + LEASE, 2) == ["a", "b"]
        # "c" is not held by w1, "zz" is no task: neither is finished
        assert tasks.finish_tasks("vectors", ["c", "b", "zz", "a"], "w1") == ["b", "a"]
        assert tasks.finish_tasks("vectors", ["a"], "w1") == []  # finished once
        assert tasks.task_backlog(now) == {"vectors": TaskBacklog(pending=1)}

    def test_a_task_exists_iff_its_transaction_committed(self, storage: Storage,
                                                         clock: Clockwork) -> None:
        tasks = _tasks(storage)
        with pytest.raises(RuntimeError), storage.transaction():
            tasks.add_tasks("vectors", ["gone"], clock.tick())
            raise RuntimeError("the write failed")
        with storage.transaction():
            tasks.add_tasks("vectors", ["kept"], clock.tick())
        now = clock.tick()
        assert tasks.claim_tasks("vectors", "w1", now, now + LEASE, 5) == ["kept"]
        # a finish undone with its result's transaction leaves the task held, not gone
        with pytest.raises(RuntimeError), storage.transaction():
            assert tasks.finish_tasks("vectors", ["kept"], "w1") == ["kept"]
            raise RuntimeError("the result's write failed")
        assert tasks.task_backlog(now) == {"vectors": TaskBacklog(running=1)}
        assert tasks.finish_tasks("vectors", ["kept"], "w1") == ["kept"]

    def test_failed_attempts_park_a_task_until_it_is_retried(self, storage: Storage,
                                                             clock: Clockwork) -> None:
        tasks = _tasks(storage)
        tasks.add_tasks("extract", ["bad", "good"], clock.tick())
        for attempt in range(1, 4):
            now = clock.tick()
            assert tasks.claim_tasks("extract", "w1", now, now + LEASE, 5) == ["bad", "good"]
            tasks.release_tasks("extract", ["bad"], "w1", now,
                                error=f"ValidationError: attempt {attempt}", give_up_after=3)
            # a release without an error gives the lease back and counts no attempt
            tasks.release_tasks("extract", ["good"], "w1", now)
        now = clock.tick()
        assert tasks.task_backlog(now) == {"extract": TaskBacklog(pending=1, failed=1)}
        assert tasks.claim_tasks("extract", "w1", now, now + LEASE, 5) == ["good"]
        (failure,) = tasks.failed_tasks()
        assert (failure.kind, failure.target, failure.attempts) == ("extract", "bad", 3)
        assert failure.error == "ValidationError: attempt 3"
        tasks.release_tasks("extract", ["good"], "w1", now)
        assert tasks.claim_tasks("extract", "w2", now, now + LEASE, 5) == ["good"]
        # a failed task is never finished by its last owner
        assert tasks.finish_tasks("extract", ["bad"], "w1") == []
        assert tasks.retry_failed_tasks("other-kind") == 0
        assert tasks.retry_failed_tasks() == 1
        assert tasks.failed_tasks() == []
        assert tasks.claim_tasks("extract", "w3", now, now + LEASE, 5) == ["bad"]

    def test_racing_claims_take_disjoint_tasks(self, storage: Storage,
                                               clock: Clockwork) -> None:
        tasks = _tasks(storage)
        targets = [f"t{i:03d}" for i in range(60)]
        tasks.add_tasks("vectors", targets, clock.tick())
        now = clock.tick()

        def claim(i: int) -> list[str]:
            got: list[str] = []
            while True:
                step = tasks.claim_tasks("vectors", f"w{i}", now, now + LEASE, 4)
                if not step:
                    return got
                got += step

        results = race(RACERS, claim)
        assert all(isinstance(r, list) for r in results), results
        claimed = [t for r in results for t in r]
        assert sorted(claimed) == targets  # each once, none lost

        def finish(i: int) -> list[str]:
            return tasks.finish_tasks("vectors", targets, f"w{i}")

        finished = race(RACERS, finish)
        assert sorted(t for r in finished for t in r) == targets
        assert tasks.task_backlog(now) == {}

    def test_tasks_persist(self, make_storage: Callable[..., Any], clock: Clockwork) -> None:
        store = make_storage("tasks")
        tasks = _tasks(store)
        if not store.capabilities.persistent:
            pytest.skip("the adapter keeps nothing across opens")
        store.open()
        tasks.add_tasks("strong", ["e1", "e2"], clock.tick())
        now = clock.tick()
        assert tasks.claim_tasks("strong", "killed", now, now + LEASE, 1) == ["e1"]
        store.close()
        again = make_storage("tasks")
        again.open()
        try:
            later = now + LEASE + timedelta(seconds=1)
            assert again.task_backlog(now) == {"strong": TaskBacklog(pending=1, running=1)}
            assert again.claim_tasks("strong", "next", later, later + LEASE, 5) == ["e1", "e2"]
        finally:
            again.close()

    def test_a_read_only_open_reads_the_backlog_and_takes_nothing(
        self, make_storage: Callable[..., Any], clock: Clockwork,
        open_read_only: Callable[..., Any] | None,
    ) -> None:
        writer = make_storage("shared-tasks")
        tasks = _tasks(writer)
        if open_read_only is None:
            pytest.skip("adapter is no ReadOnlyOpen (optional)")
        writer.open()
        try:
            tasks.add_tasks("vectors", ["e1"], clock.tick())
            reader = open_read_only("shared-tasks")
            reader.open()
            try:
                now = clock.tick()
                assert reader.task_backlog(now) == {"vectors": TaskBacklog(pending=1)}
                for attempt in (
                        lambda: reader.add_tasks("vectors", ["e2"], now),
                        lambda: reader.claim_tasks("vectors", "r", now, now + LEASE, 5),
                        lambda: reader.finish_tasks("vectors", ["e1"], "r")):
                    with pytest.raises(ReadOnlyError):
                        attempt()
            finally:
                reader.close()
            assert writer.task_backlog(clock.tick()) == {"vectors": TaskBacklog(pending=1)}
        finally:
            writer.close()

    def test_clear_leases_gives_every_lease_back(self, storage: Storage,
                                                 clock: Clockwork) -> None:
        tasks = _tasks(storage)
        tasks.add_tasks("vectors", ["a", "b", "c"], clock.tick())
        now = clock.tick()
        assert tasks.claim_tasks("vectors", "dead", now, now + LEASE, 2) == ["a", "b"]
        assert tasks.clear_leases() == 2
        assert tasks.task_backlog(now) == {"vectors": TaskBacklog(pending=3)}
        assert tasks.claim_tasks("vectors", "next", now, now + LEASE, 5) == ["a", "b", "c"]
        assert tasks.finish_tasks("vectors", ["a"], "dead") == []  # its lease went
