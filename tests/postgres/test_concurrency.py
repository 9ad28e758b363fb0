"""Real processes racing on one PostgreSQL store: keys, touches and the audit chain.

Four spawned processes (each with its own pool, as agents on different machines would
have) interleave keyed writes over a few shared keys, touches of the same ids in shuffled
orders, and audit appends of one tenant. Afterwards every key has exactly one active entry
and one complete supersede chain, touch counts add up exactly, the audit chain is intact,
and nothing deadlocked (the run is bounded).
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import time
from collections import Counter
from typing import Any

import pytest

from tests.postgres._workers import PARTITION, entry, race
from tulving.domain.audit_chain import verify_chain
from tulving.domain.query import EntryFilter
from tulving.domain.types import ArchiveReason

pytestmark = pytest.mark.postgres

PROCESSES = 4
WRITES = 300  # per process
TOUCHES = 100  # per process, each touching every id of TOUCH_SET once
AUDITS = 50  # per process
KEYS = ["shared/alpha", "shared/beta", "shared/gamma", "shared/delta", "shared/epsilon"]
DEADLINE_S = 240


def run_race(pg_url: str, schema: str, touch_ids: list[str]) -> dict[int, list[str]]:
    ctx = mp.get_context("spawn")
    results: Any = ctx.Queue()
    procs = [
        ctx.Process(
            target=race,
            args=(pg_url, schema, n, WRITES, KEYS, touch_ids, TOUCHES, AUDITS, results),
        )
        for n in range(PROCESSES)
    ]
    for p in procs:
        p.start()
    written: dict[int, list[str]] = {}
    problems: list[str] = []
    deadline = time.monotonic() + DEADLINE_S
    try:
        while len(written) + len(problems) < PROCESSES:
            try:
                worker, status, payload = results.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"workers did not finish within {DEADLINE_S}s (deadlock or hang)")
            if status == "ok":
                written[worker] = payload
            else:
                problems.append(f"worker {worker}: {payload}")
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()
    assert not problems, problems
    return written


def test_four_processes_race_on_shared_keys(
    make_pg_storage: Any, pg_url: str, pg_schema: str
) -> None:
    store = make_pg_storage()
    touch_ids = []
    for n in range(3):
        e = entry(f"touched entry {n}", None, "setup")
        store.write(e)
        touch_ids.append(e.id)

    written = run_race(pg_url, pg_schema, touch_ids)

    all_written = [i for ids in written.values() for i in ids]
    assert len(all_written) == PROCESSES * WRITES == len(set(all_written))
    everything = store.query(EntryFilter(partitions=(PARTITION,), include_archived=True))
    by_key: dict[str, list[Any]] = {}
    for e in everything:
        if e.key is not None:
            by_key.setdefault(e.key, []).append(e)
    assert sum(len(v) for v in by_key.values()) == len(all_written)
    assert {e.id for v in by_key.values() for e in v} == set(all_written)

    for key, entries in by_key.items():
        by_id = {e.id: e for e in entries}
        active = [e for e in entries if e.archived_at is None]
        assert len(active) == 1, f"{key}: {len(active)} active entries"
        assert store.active_by_key((PARTITION,), key).id == active[0].id  # type: ignore[union-attr]
        heads = [e for e in entries if e.supersedes is None]
        assert len(heads) == 1, f"{key}: {len(heads)} chain heads (a fork)"
        successors = Counter(e.superseded_by for e in entries if e.superseded_by)
        assert all(n == 1 for n in successors.values()), f"{key}: forked chain"
        # walk the chain from its head: it must visit every write of the key once
        current, seen = heads[0], 1
        while current.superseded_by is not None:
            nxt = by_id[current.superseded_by]
            assert current.archive_reason is ArchiveReason.SUPERSEDED
            assert nxt.supersedes == current.id
            assert current.expired_at == nxt.created_at
            current, seen = nxt, seen + 1
        assert current.id == active[0].id
        assert seen == len(entries), f"{key}: chain has {seen} of {len(entries)} writes"

    for entry_id in touch_ids:
        got = store.get(entry_id)
        assert got is not None and got.access_count == PROCESSES * TOUCHES

    records = store.audit_records("tenant-x")
    assert len(records) == PROCESSES * AUDITS
    assert verify_chain(records) == []
    assert store.maintenance("integrity")["ok"] is True


def test_concurrent_batches_with_overlapping_keys_never_deadlock(
    make_pg_storage: Any, pg_url: str, pg_schema: str
) -> None:
    """Threads writing batches whose keys overlap in opposite orders: the key locks are
    taken in one sorted statement, so both finish and each key keeps one active entry."""
    import threading

    stores = [make_pg_storage(max_size=2) for _ in range(2)]
    errors: list[BaseException] = []
    keys = [f"batch/k{i}" for i in range(12)]

    def writer(n: int) -> None:
        try:
            order = keys if n % 2 == 0 else list(reversed(keys))
            for round_ in range(15):
                batch = [(entry(f"t{n} r{round_} {k}", k, f"t{n}"), None) for k in order]
                stores[n % 2].write_many(batch)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "writers hung"
    assert not errors, errors
    flt = EntryFilter(partitions=(PARTITION,))
    active = stores[0].query(flt)
    assert sorted(e.key for e in active) == sorted(keys)
    assert (
        stores[0].count(EntryFilter(partitions=(PARTITION,), include_archived=True)) == 4 * 15 * 12
    )


def test_memory_facade_on_postgres(pg_url: str, pg_schema: str) -> None:
    """Two Memory objects (two agents) over one PostgreSQL store see shared writes."""
    Memory = pytest.importorskip("tulving").Memory
    opts = {"storage": {"schema": pg_schema}}
    a = Memory(
        pg_url, agent_id="agent-a", user_id="u", workspace_id="w", embedder="hashing", options=opts
    )
    b = Memory(
        pg_url, agent_id="agent-b", user_id="u", workspace_id="w", embedder="hashing", options=opts
    )
    try:
        a.store(
            "the staging database runs PostgreSQL 15", type="FACT", key="infra/db", scope="shared"
        )
        a.store(
            "the staging database runs PostgreSQL 16", type="FACT", key="infra/db", scope="shared"
        )
        assert a.ctx.storage.name == "postgres" and a.ctx.vectors.name == "pgvector"
        hits = b.search("staging database postgres", top_k=5)
        assert [h.entry.content for h in hits][:1] == ["the staging database runs PostgreSQL 16"]
        assert len(hits) == 1  # the superseded version is archived
        assert len(b.history("infra/db")) == 2
    finally:
        a.close()
        b.close()
