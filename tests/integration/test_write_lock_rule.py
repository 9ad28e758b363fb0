"""One lock rule on every path that writes: the Memory's lock before the store's
transaction (``plumbing.write_order``), the tenant's write lock inside it.

Each case runs one public write of a real SQLite Memory and records, at every
transaction the store opens and every tenant write lock it takes, whether this Memory's
lock is held at that moment (a second thread tries to take it). Before the bootstrap
(issue 46), ``rollback_to``, ``apply_retention`` and ``purge`` opened their
transactions without it, so a write of another thread of the same process could
interleave with theirs where the vector index and the session state are concerned.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from tulving import Memory
from tulving.adapters.clock import ManualClock

Case = Callable[[Memory], object]


def _held_elsewhere(lock: Any) -> bool:
    """Whether a thread holds ``lock`` (an RLock): another thread cannot take it."""
    taken: list[bool] = []

    def attempt() -> None:
        got = lock.acquire(blocking=False)
        if got:
            lock.release()
        taken.append(got)

    helper = threading.Thread(target=attempt)
    helper.start()
    helper.join()
    return not taken[0]


class Probe:
    """Wraps the store's ``transaction`` and ``lock_tenant_writes`` of one Memory."""

    def __init__(self, memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[str, bool]] = []
        storage = memory.ctx.storage
        lock = memory.ctx.serial
        transaction = storage.transaction
        tenant_lock = storage.lock_tenant_writes

        def probed_transaction() -> AbstractContextManager[None]:
            self.seen.append(("transaction", _held_elsewhere(lock)))
            return transaction()

        def probed_tenant_lock(tenant: str) -> None:
            self.seen.append(("tenant lock", _held_elsewhere(lock)))
            tenant_lock(tenant)

        monkeypatch.setattr(storage, "transaction", probed_transaction)
        monkeypatch.setattr(storage, "lock_tenant_writes", probed_tenant_lock)


def _bundle(tmp_path: Path, clock: ManualClock) -> io.BytesIO:
    with Memory(str(tmp_path / "source.db"), agent_id="a", embedder="hashing",
                vectors="exact", clock=clock) as source:
        source.store("imported: the staging cluster lives in Frankfurt", type="FACT")
        out = io.BytesIO()
        source.export(out)
    out.seek(0)
    return out


def _prepared(memory: Memory) -> dict[str, Any]:
    """What the cases act on, written before the probe is in place."""
    first = memory.store("the deploy window is Tuesday", type="FACT", key="deploy/window")
    memory.store("the deploy window is Wednesday", type="FACT", key="deploy/window")
    procedure = memory.store("restart the worker, then clear the queue", type="PROCEDURE",
                             key="proc/restart")
    gone = memory.store("a note to forget", type="FACT")
    memory.forget(gone.id)
    # near-duplicates that consolidation merges (tests/integration/test_consolidation.py)
    memory.store("The billing service retries failed webhooks with exponential backoff "
                 "before alerting on call", type="FACT", dedup=False)
    memory.store("The billing service retries failed webhooks with exponential backoff "
                 "before alerting the on call engineer", type="FACT", dedup=False)
    return {"first": first, "procedure": procedure}


CASES: dict[str, Callable[[Memory, dict[str, Any]], object]] = {
    "store": lambda m, _: m.store("the office opens at nine", type="FACT"),
    "store_many": lambda m, _: m.store_many(
        [{"content": f"batch fact {i}", "type": "FACT"} for i in range(3)]),
    "store_lines": lambda m, _: m.store_lines(
        [(1, {"content": "a line", "type": "FACT"})], source="lines"),
    "remember": lambda m, _: m.remember("I prefer green tea in the morning."),
    "forget": lambda m, _: m.forget("deploy/window"),
    "forget hard": lambda m, _: m.forget("deploy/window", hard=True),
    "correct": lambda m, _: m.correct("deploy/window", "the deploy window is Thursday"),
    "record_outcome": lambda m, s: m.record_outcome(s["procedure"].id, True),
    "consolidate": lambda m, _: m.consolidate(dry_run=False),
    "evict": lambda m, _: m.evict(0.99),
    "session": lambda m, _: (m.start_session("ship it"), m.end_session()),
    "clear": lambda m, _: m.clear(scope="agent", confirm=True),
    "rollback_to": lambda m, s: m.rollback_to(s["first"].id),
    "apply_retention": lambda m, _: m.apply_retention({"agent": {"max_entries": 1}}),
    "purge": lambda m, _: m.purge(force=True),
    "maintenance purge": lambda m, _: m.maintenance("purge", force=True, dry_run=False,
                                                    archived_before=m.now()),
    "maintenance reembed": lambda m, _: m.maintenance("reembed"),
    "erase": lambda m, _: m.erase(agent_id="a"),
}


@pytest.fixture
def memory(tmp_path: Path, clock: ManualClock) -> Iterator[Memory]:
    with Memory(str(tmp_path / "m.db"), agent_id="a", embedder="hashing", vectors="exact",
                clock=clock) as m:
        yield m


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_write_takes_the_memorys_lock_before_the_store(
        name: str, memory: Memory, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    state = _prepared(memory)
    clock.advance(days=1)
    probe = Probe(memory, monkeypatch)
    CASES[name](memory, state)
    assert ("tenant lock", True) in probe.seen or ("transaction", True) in probe.seen, (
        f"{name} opened no transaction: the probe saw {probe.seen}")
    unlocked = [what for what, held in probe.seen if not held]
    assert unlocked == [], f"{name}: {unlocked} without the Memory's lock"


def test_an_import_takes_the_memorys_lock_before_the_store(
        tmp_path: Path, memory: Memory, clock: ManualClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = _bundle(tmp_path, clock)
    probe = Probe(memory, monkeypatch)
    report = memory.import_bundle(bundle)
    assert len(report.added) == 1 and probe.seen
    assert [what for what, held in probe.seen if not held] == []


def test_a_view_writes_under_the_lock_of_the_memory_it_came_from(
        memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    view = memory.view(agent_id="b")
    assert view.ctx.serial is memory.ctx.serial
    probe = Probe(view, monkeypatch)
    first = view.store("the view's own note", type="FACT")
    view.rollback_to(first.id)
    assert probe.seen and [what for what, held in probe.seen if not held] == []
