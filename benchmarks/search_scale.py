"""Search latency at scale against the raw engines underneath, same data, same run.

Usage::

    .venv/bin/python benchmarks/search_scale.py                 # 10k and 100k entries
    .venv/bin/python benchmarks/search_scale.py --sizes 10000 --queries 300

For each size a fresh embedded Memory (SQLite + hnswlib, hashing embedder) is filled with
varied synthetic texts. Queries are embedded before timing (the embedder's cost is its
own benchmark), so the figures compare Tulving's search path with:
- raw FTS5: the same OR-of-terms MATCH with bm25() ordering on the same file;
- raw hnswlib: ``knn_query`` on the very hnswlib graph the Memory uses.
Ratio = Tulving p50 / raw p50 (hybrid: against raw FTS5 + raw knn back to back).
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tulving import Memory
from tulving.domain.lexical import query_terms

_SUBJECTS = ["the team", "Alice", "Bob", "the agent", "our client", "Priya", "the on-call",
             "Marcus", "the auditor", "the scheduler", "Chen", "the billing job"]
_VERBS = ["decided to", "agreed to", "failed to", "planned to", "refused to", "tried to",
          "remembered to", "forgot to", "started to", "needs to"]
_ACTIONS = ["migrate", "rotate", "deploy", "archive", "review", "benchmark", "refactor",
            "rename", "document", "monitor", "throttle", "shard", "cache", "encrypt"]
_OBJECTS = ["the ledger database", "the auth tokens", "the nightly export", "the search index",
            "the invoice service", "the staging cluster", "the feature flags", "the audit log",
            "the upload bucket", "the payment webhook", "the user profiles", "the ML pipeline",
            "the email templates", "the rate limiter", "the backup policy", "the API gateway"]
_WHEN = ["on Monday", "after the outage", "before the release", "next sprint", "last week",
         "in March", "by Friday", "during the freeze", "after review", "tomorrow"]
_WHY = ["because latency doubled", "to cut costs", "for compliance", "after a customer report",
        "since the vendor changed", "to unblock the mobile team", "as the SLO requires",
        "because tests were flaky", "to reduce on-call load", "after the security review"]


def synthetic_texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        sentence = (f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_ACTIONS)} "
                    f"{rng.choice(_OBJECTS)} {rng.choice(_WHEN)} {rng.choice(_WHY)}")
        if rng.random() < 0.4:
            sentence += f"; ticket {rng.randint(100, 99999)} tracks it"
        if rng.random() < 0.3:
            sentence += f" and {rng.choice(_SUBJECTS)} will {rng.choice(_ACTIONS)} " \
                        f"{rng.choice(_OBJECTS)}"
        out.append(f"{sentence} (note {i})")
    return out


def synthetic_queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [f"why did {rng.choice(_SUBJECTS)} {rng.choice(_ACTIONS)} {rng.choice(_OBJECTS)}"
            for _ in range(n)]


class PreEmbedded:
    """The real embedder, with query vectors computed before the clock starts."""

    def __init__(self, inner: Any, queries: Sequence[str]) -> None:
        self.inner, self.model_id, self.dimension = inner, inner.model_id, inner.dimension
        self.cache = {q: inner.embed_query(q) for q in queries}

    def embed(self, texts: Sequence[str]) -> Any:
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> Any:
        return self.cache[text]


def timed(fn: Callable[[str], object], queries: Sequence[str]) -> tuple[float, float]:
    for q in queries[:20]:
        fn(q)  # warm caches
    samples = []
    for q in queries:
        started = time.perf_counter()
        fn(q)
        samples.append(time.perf_counter() - started)
    return 1000 * statistics.median(samples), 1000 * float(np.percentile(samples, 95))


def run(size: int, n_queries: int, top_k: int, folder: Path) -> list[tuple[str, float, float]]:
    texts = synthetic_texts(size)
    queries = synthetic_queries(n_queries)
    memory = Memory(folder / f"scale-{size}.db", agent_id="bench", embedder="hashing",
                    vectors="hnsw")
    started = time.perf_counter()
    for i in range(0, size, 2000):
        memory.store_many({"content": t, "type": "FACT"} for t in texts[i:i + 2000])
    memory.flush()
    print(f"{size} entries stored in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    ctx = memory.ctx
    ctx.embedder = PreEmbedded(ctx.embedder, queries)
    index: Any = ctx.vectors._index  # type: ignore[union-attr]  # the raw hnswlib graph
    vectors = {q: ctx.embedder.embed_query(q) for q in queries}
    raw = sqlite3.connect(f"file:{folder / f'scale-{size}.db'}?mode=ro", uri=True)
    raw_sql = ("SELECT rowid, bm25(entries_fts) FROM entries_fts WHERE entries_fts MATCH ? "
               "ORDER BY bm25(entries_fts) LIMIT ?")
    expressions = {q: " OR ".join(f'"{t}"' for t in query_terms(q)) for q in queries}
    pool = max(2 * top_k, 50)

    def raw_fts(q: str) -> object:
        return raw.execute(raw_sql, (expressions[q], top_k)).fetchall()

    def raw_knn(q: str) -> object:
        return index.knn_query(vectors[q], k=top_k)

    def raw_both(q: str) -> object:
        return (raw.execute(raw_sql, (expressions[q], pool)).fetchall(),
                index.knn_query(vectors[q], k=pool))

    rows = []
    for name, fn in (
        ("raw FTS5 bm25", raw_fts),
        ("raw hnswlib knn", raw_knn),
        ("raw FTS5 + knn (pool)", raw_both),
        ("tulving lexical", lambda q: memory.search(q, top_k, mode="lexical")),
        ("tulving semantic", lambda q: memory.search(q, top_k, mode="semantic")),
        ("tulving hybrid", lambda q: memory.search(q, top_k, mode="hybrid")),
    ):
        p50, p95 = timed(fn, queries)
        rows.append((name, p50, p95))
    raw.close()
    memory.close()
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--top-k", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tulving-scale-") as tmp:
        for size in args.sizes:
            rows = dict((n, (p50, p95)) for n, p50, p95 in
                        run(size, args.queries, args.top_k, Path(tmp)))
            print(f"\n{size:,} entries, top_k={args.top_k}, {args.queries} queries "
                  "(query embedding excluded)")
            print(f"{'path':26s}{'p50 ms':>9s}{'p95 ms':>9s}{'ratio p50':>11s}")
            against = {"tulving lexical": "raw FTS5 bm25", "tulving semantic": "raw hnswlib knn",
                       "tulving hybrid": "raw FTS5 + knn (pool)"}
            for name, (p50, p95) in rows.items():
                ratio = f"{p50 / rows[against[name]][0]:.2f}x" if name in against else ""
                print(f"{name:26s}{p50:9.2f}{p95:9.2f}{ratio:>11s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
