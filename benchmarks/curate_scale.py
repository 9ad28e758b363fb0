"""curate() latency at 10k and 100k entries against the raw search it builds on.

Usage: ``.venv/bin/python benchmarks/curate_scale.py [--sizes 10000 100000] [--queries 50]``

Hashing embedder (so the figures are about Tulving, not a model), SQLite + hnswlib, a
2,000-token budget. Prints p50/p95 of ``Memory.search`` (hybrid, top 10), of the
candidate retrieval curate runs (hybrid over its pool), and of ``curate()``; the query
embedding is timed separately and reported, as the target is stated without it.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tulving import Memory
from tulving.application.search import build_filter

VOCAB = ("deploy release cluster cache latency billing invoice customer refund login token "
         "session database index migration schema backup restore alert pager incident "
         "queue worker retry timeout network proxy certificate rotate secret config flag "
         "feature rollout canary metric dashboard budget sprint roadmap design review "
         "test flaky pipeline build artifact docker image kubernetes node pod memory cpu "
         "disk storage bucket region failover replica shard partition lock deadlock").split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(rng.randint(8, 30))).capitalize() + "."


def percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return (1000 * statistics.median(ordered), 1000 * ordered[int(0.95 * (len(ordered) - 1))])


def timed(fn: Callable[[str], object], queries: Sequence[str]) -> tuple[float, float]:
    samples = []
    for q in queries:
        started = time.perf_counter()
        fn(q)
        samples.append(time.perf_counter() - started)
    return percentiles(samples)


def run(size: int, n_queries: int, folder: Path) -> None:
    rng = random.Random(size)
    memory = Memory(folder / f"scale{size}.db", agent_id="bench", embedder="hashing",
                    vectors="hnsw")
    started = time.perf_counter()
    batch = 2000
    for start in range(0, size, batch):
        memory.store_many({"content": sentence(rng), "type": rng.choice(
            ["FACT", "OBSERVATION", "EPISODE", "DECISION", "PLAN"])}
            for _ in range(min(batch, size - start)))
    ingest = time.perf_counter() - started
    queries = [" ".join(rng.choice(VOCAB) for _ in range(4)) for _ in range(n_queries)]
    for q in queries[:5]:  # warm caches
        memory.curate(q, token_budget=2000)
    embedder = memory.ctx.embedder
    assert embedder is not None
    embed = timed(embedder.embed_query, queries)
    search = timed(lambda q: memory.search(q, 10), queries)
    flt = build_filter(memory.ctx)
    pool = timed(lambda q: memory._searcher.ranked_ids(q, "hybrid", flt, 250), queries)
    curate = timed(lambda q: memory.curate(q, token_budget=2000), queries)
    memory.close()
    print(f"\n{size:,} entries (ingest {size / ingest:,.0f} entries/s)")
    print(f"  query embedding (hashing)   p50 {embed[0]:7.2f} ms  p95 {embed[1]:7.2f} ms")
    print(f"  search hybrid top-10        p50 {search[0]:7.2f} ms  p95 {search[1]:7.2f} ms")
    print(f"  curate candidate pool (250) p50 {pool[0]:7.2f} ms  p95 {pool[1]:7.2f} ms")
    print(f"  curate 2,000 tokens         p50 {curate[0]:7.2f} ms  p95 {curate[1]:7.2f} ms")
    print(f"  curate / search ratio       p50 {curate[0] / search[0]:.2f}x  "
          f"p95 {curate[1] / search[1]:.2f}x")
    print(f"  curate p95 minus embedding  {curate[1] - embed[1]:7.2f} ms (target <= 20 ms)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            run(size, args.queries, Path(folder))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
