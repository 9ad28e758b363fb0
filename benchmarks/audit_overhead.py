"""What the audit log costs a search: Memory.search with read auditing on vs off, against
the raw engine (a plain SQLite FTS5 bm25 query) on the same data in the same run.

    .venv/bin/python benchmarks/audit_overhead.py [--entries 5000] [--queries 2000]

Read records are queued and appended in batches (see tulving.application.governance.audit), so the
figure to watch is the "audit on / audit off" ratio, which should stay near 1.0; the
batched flush is included in the timing.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from tulving import Memory

WORDS = (
    "deploy release auth token cache index shard replica backup schedule migrate "
    "rollback latency budget agent memory vector lexical curate policy tenant audit "
    "retention erasure signature review trust source webhook"
).split()


def corpus(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(12)) + f" item{i}" for i in range(n)]


def timed_searches(memory: Memory, queries: list[str], mode: str) -> list[float]:
    laps = []
    for q in queries:
        start = time.perf_counter()
        memory.search(q, top_k=10, mode=mode)
        laps.append(time.perf_counter() - start)
    start = time.perf_counter()
    memory.flush()
    laps[-1] += time.perf_counter() - start
    return laps


def raw_fts(path: Path, queries: list[str]) -> list[float]:
    conn = sqlite3.connect(path)
    laps = []
    for q in queries:
        expr = " OR ".join(f'"{w}"' for w in q.split())
        start = time.perf_counter()
        conn.execute(
            "SELECT e.id, -bm25(entries_fts) FROM entries_fts JOIN entries e ON e.rowid ="
            " entries_fts.rowid WHERE entries_fts MATCH ? ORDER BY bm25(entries_fts) LIMIT 10",
            (expr,),
        ).fetchall()
        laps.append(time.perf_counter() - start)
    conn.close()
    return laps


def summary(label: str, laps: list[float], base: float | None) -> float:
    p50 = statistics.median(laps) * 1e6
    mean = statistics.fmean(laps) * 1e6
    ratio = f"  x{mean / base:.2f} vs audit off" if base else ""
    print(f"{label:<28} p50 {p50:8.1f} us   mean {mean:8.1f} us{ratio}")
    return mean


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=2000)
    args = parser.parse_args()
    texts = corpus(args.entries)
    rng = random.Random(11)
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(args.queries)]
    with tempfile.TemporaryDirectory() as tmp:
        memories: dict[bool, Memory] = {}
        for audit in (False, True):
            m = Memory(
                Path(tmp) / f"audit_{audit}.db",
                agent_id="bench",
                embedder="hashing",
                vectors="exact",
                policy={"audit_reads": audit},
            )
            m.store_many({"content": t, "type": "FACT"} for t in texts)
            memories[audit] = m
        # interleave the two configurations in rounds so machine noise hits both alike
        laps: dict[tuple[str, bool], list[float]] = {}
        for mode in ("lexical", "hybrid"):
            for m in memories.values():
                timed_searches(m, queries[:50], mode)  # warm up
            for start in range(0, len(queries), 100):
                chunk = queries[start : start + 100]
                for audit, m in memories.items():
                    laps.setdefault((mode, audit), []).extend(timed_searches(m, chunk, mode))
        for audit, m in memories.items():
            print(f"audit_reads={audit}: {m.ctx.storage.stats()['audit_records']} audit records")
            m.close()
        raw = raw_fts(Path(tmp) / "audit_False.db", queries)
        print(f"\n{args.entries} entries, {args.queries} queries per configuration, top 10")
        raw_mean = summary("raw SQLite FTS5 bm25", raw, None)
        for mode in ("lexical", "hybrid"):
            off = summary(f"search {mode} audit off", laps[(mode, False)], None)
            summary(f"search {mode} audit on", laps[(mode, True)], off)
            print(f"{'':<28} (audit off is x{off / raw_mean:.1f} the raw engine)")


if __name__ == "__main__":
    main()
