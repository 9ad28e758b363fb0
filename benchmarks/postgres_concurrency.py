"""Write throughput of many agent processes on one PostgreSQL store (what SQLite cannot do).

Each process opens its own pool (as agents on different machines would) and writes
entries one per transaction, as an agent stores memories: 384-d unit vectors, half of the
writes under keys drawn from a small shared pool (so supersedes contend on the same keys),
the HNSW index maintained by PostgreSQL. Then the same processes touch a shared set of
ids (access statistics). Prints aggregate writes/s and per-write latency for 1 and 4
processes, the scaling ratio, touches/s, and the single-process SQLite + hnswlib rate on
the same workload as the embedded reference (SQLite admits one writer process).

    .venv/bin/python benchmarks/postgres_concurrency.py [--writes 1000] [--no-index]

Uses TULVING_TEST_PG_URL when set, else starts a throwaway server via .ci/postgres.sh.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tulving.domain.entry import MemoryEntry, content_hash
from tulving.domain.identity import Identity
from tulving.domain.ids import new_id
from tulving.domain.query import EntryFilter
from tulving.domain.types import MemoryType, Scope
from tulving.plugins.registry import AdapterContext
from tulving.testing import postgres as pgtest

DIM = 384
KEYS = [f"shared/topic-{i}" for i in range(100)]
IDENTITY = Identity(agent_id="bench", user_id="u", workspace_id="w")
PARTITION = IDENTITY.partition_for(Scope.SHARED, None)


def make_entry(worker: int, step: int, key: str | None) -> MemoryEntry:
    at = datetime.now(UTC)
    content = f"agent {worker} observation {step}: the deploy of service {step % 37} finished"
    return MemoryEntry(
        id=new_id(at),
        content=content,
        type=MemoryType.OBSERVATION,
        agent_id=f"a{worker}",
        user_id="u",
        workspace_id="w",
        scope=Scope.SHARED,
        partition=PARTITION,
        key=key,
        created_at=at,
        updated_at=at,
        valid_from=at,
        last_accessed_at=at,
        content_hash=content_hash(content),
    )


def unit_vectors(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def worker(
    url: str,
    schema: str,
    n: int,
    writes: int,
    touch_ids: list[str],
    touches: int,
    go: Any,
    out: Any,
) -> None:
    from tulving.adapters.storage.postgres import create

    store = create(AdapterContext(location=url), schema=schema, max_size=2)
    store.open()
    rng = random.Random(n)
    vecs = unit_vectors(writes, seed=1000 + n)
    go.wait()
    lat: list[float] = []
    start = time.time()
    for i in range(writes):
        key = rng.choice(KEYS) if i % 2 else None
        t = time.perf_counter()
        store.write(make_entry(n, i, key), vecs[i])
        lat.append(time.perf_counter() - t)
    end = time.time()
    t_start = time.time()
    for _ in range(touches):
        ids = touch_ids[:]
        rng.shuffle(ids)
        store.touch(ids, datetime.now(UTC))
    t_end = time.time()
    store.close()
    out.put((n, start, end, lat, t_start, t_end))


def run(url: str, processes: int, writes: int, touches: int, index: bool) -> dict[str, float]:
    from tulving.adapters.storage.postgres import create
    from tulving.adapters.vectors.pgvector import create as pg_index

    schema = pgtest.new_schema_name("conc")
    store = create(AdapterContext(location=url), schema=schema)
    store.open()
    try:
        if index:
            pg_index(AdapterContext(storage=store)).open(DIM)
        else:
            store.ensure_vector_dimension(DIM)
        seed = [make_entry(99, i, None) for i in range(20)]
        store.write_many([(e, None) for e in seed])
        touch_ids = [e.id for e in seed]
        ctx = mp.get_context("spawn")
        go, out = ctx.Event(), ctx.Queue()
        procs = [
            ctx.Process(target=worker, args=(url, schema, n, writes, touch_ids, touches, go, out))
            for n in range(processes)
        ]
        for p in procs:
            p.start()
        time.sleep(0.5)
        go.set()
        reports = [out.get(timeout=1800) for _ in procs]
        for p in procs:
            p.join()
        start = min(r[1] for r in reports)
        end = max(r[2] for r in reports)
        lat = [x for r in reports for x in r[3]]
        t_span = max(r[5] for r in reports) - min(r[4] for r in reports)
        # correctness on the way out: one active entry per key, counts exact
        flt = EntryFilter(partitions=(PARTITION,))
        active_keys = [e.key for e in store.query(flt) if e.key]
        assert len(active_keys) == len(set(active_keys))
        assert all(e.access_count == processes * touches for e in store.get_many(touch_ids))
        return {
            "writes/s": processes * writes / (end - start),
            "p50 ms": statistics.median(lat) * 1000,
            "p95 ms": sorted(lat)[int(0.95 * (len(lat) - 1))] * 1000,
            "touch calls/s": processes * touches / t_span if t_span > 0 else 0.0,
        }
    finally:
        store.close()
        pgtest.drop_schema(url, schema)


def sqlite_reference(writes: int) -> dict[str, float]:
    from tulving.adapters.storage.sqlite import SQLiteStorage
    from tulving.adapters.vectors.hnsw import create as hnsw_index

    path = os.path.join(tempfile.mkdtemp(prefix="tulving-conc-"), "m.db")
    store = SQLiteStorage(path)
    store.open()
    index = hnsw_index(AdapterContext(location=path))
    index.open(DIM)
    rng = random.Random(0)
    vecs = unit_vectors(writes, seed=7)
    lat = []
    start = time.perf_counter()
    for i in range(writes):
        key = rng.choice(KEYS) if i % 2 else None
        t = time.perf_counter()
        out = store.write(make_entry(0, i, key), vecs[i])
        index.add([out.entry.id], vecs[i][None, :])
        if out.superseded is not None:
            index.remove([out.superseded.id])
        lat.append(time.perf_counter() - t)
    elapsed = time.perf_counter() - start
    store.close()
    return {
        "writes/s": writes / elapsed,
        "p50 ms": statistics.median(lat) * 1000,
        "p95 ms": sorted(lat)[int(0.95 * (len(lat) - 1))] * 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writes", type=int, default=1000, help="writes per process")
    parser.add_argument("--touches", type=int, default=200, help="touch calls per process")
    parser.add_argument("--no-index", action="store_true", help="no HNSW index (storage only)")
    args = parser.parse_args()
    url = pgtest.server_url()
    if url is None:
        print(f"no PostgreSQL server: {pgtest.unavailable_reason()}", file=sys.stderr)
        return 1
    index = not args.no_index
    print(
        f"{args.writes} writes + {args.touches} touch calls (20 ids) per process, "
        f"{DIM}-d vectors, HNSW index {'on' if index else 'off'}, {os.cpu_count()} cores"
    )
    rows = {f"postgres x{p}": run(url, p, args.writes, args.touches, index) for p in (1, 4)}
    rows["sqlite+hnswlib x1"] = sqlite_reference(args.writes)
    print(f"\n{'setup':<20}{'writes/s':>12}{'p50 ms':>10}{'p95 ms':>10}{'touch calls/s':>15}")
    for name, r in rows.items():
        touch = f"{r['touch calls/s']:>15,.0f}" if "touch calls/s" in r else f"{'-':>15}"
        print(f"{name:<20}{r['writes/s']:>12,.0f}{r['p50 ms']:>10.2f}{r['p95 ms']:>10.2f}{touch}")
    one, four = rows["postgres x1"], rows["postgres x4"]
    print(
        f"\nscaling 1 -> 4 writer processes: {four['writes/s'] / one['writes/s']:.2f}x "
        f"aggregate writes/s; postgres x4 / sqlite x1: "
        f"{four['writes/s'] / rows['sqlite+hnswlib x1']['writes/s']:.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
