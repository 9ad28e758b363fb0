"""curate() latency at 10k and 100k entries against the raw search it builds on.

Usage: ``.venv/bin/python benchmarks/curate_scale.py [--sizes 10000 100000] [--queries 50]``

Hashing embedder (so the figures are about Tulving, not a model), SQLite + hnswlib, a
2,000-token budget, the realistic corpus of ``_corpus.py`` by default (``--corpus narrow``
for the template one). Prints p50/p95 of the raw engines doing curate's retrieval by hand
(FTS5 bm25 + hnswlib knn for the same pool size, then reading those rows), of
``Memory.search`` (hybrid, top 10), of the candidate retrieval curate runs, and of
``curate()``; the query embedding is timed separately, as the target is stated without it.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import CORPORA, mirror_choice, storage_options, wait_for_mirror

from tulving import Memory
from tulving.application.retrieval.options import SearchOptions
from tulving.application.retrieval.search import build_filter
from tulving.domain.lexical import query_terms


def percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return (1000 * statistics.median(ordered), 1000 * ordered[int(0.95 * (len(ordered) - 1))])


def timed(paths: Sequence[Callable[[str], object]],
          queries: Sequence[str]) -> list[tuple[float, float]]:
    """p50/p95 of each path, interleaved query by query (the order rotating) so that a
    slow spell of a shared machine falls on every path alike."""
    samples: list[list[float]] = [[] for _ in paths]
    for n, q in enumerate(queries):
        for i in [(n + k) % len(paths) for k in range(len(paths))]:
            started = time.perf_counter()
            paths[i](q)
            samples[i].append(time.perf_counter() - started)
    return [percentiles(got) for got in samples]


def run(size: int, n_queries: int, folder: Path, corpus: str,
        mirror_from: object = "default") -> None:
    rng = random.Random(size)
    make_texts, make_queries = CORPORA[corpus]
    texts = make_texts(size)
    memory = Memory(folder / f"scale{size}.db", agent_id="bench", embedder="hashing",
                    vectors="hnsw", options=storage_options(mirror_from))
    started = time.perf_counter()
    batch = 2000
    for start in range(0, size, batch):
        memory.store_many({"content": text, "type": rng.choice(
            ["FACT", "OBSERVATION", "EPISODE", "DECISION", "PLAN"])}
            for text in texts[start:start + batch])
    ingest = time.perf_counter() - started
    wait_for_mirror(memory)
    queries = make_queries(n_queries)
    for q in queries[:5]:  # warm caches
        memory.curate(q, token_budget=2000)
    embedder = memory.ctx.embedder
    assert embedder is not None
    flt = build_filter(memory.ctx)
    curator = memory._curator
    pool_size = int(statistics.median(len(curator._candidates(q, 2000, flt)[0])
                                      for q in queries[:50]))  # the usual pool
    # each engine gives hybrid retrieval at least SearchOptions.pool candidates
    pool_size = max(pool_size, SearchOptions().pool)
    raw = raw_engines(memory, folder / f"scale{size}.db", pool_size)
    embed, raw_pool, search, pool, curate = timed([
        embedder.embed_query,
        raw,
        lambda q: memory.search(q, 10),
        lambda q: curator._candidates(q, 2000, flt),
        lambda q: memory.curate(q, token_budget=2000),
    ], queries)
    memory.close()
    print(f"\n{size:,} entries, {corpus} corpus (ingest {size / ingest:,.0f} entries/s), "
          f"{len(queries)} queries, budget 2,000 tokens")
    rows = [
        ("query embedding (hashing)", embed),
        (f"raw FTS5 + knn + rows ({pool_size})", raw_pool),
        ("search hybrid top-10", search),
        (f"curate candidates ({pool_size})", pool),
        ("curate", curate),
    ]
    for label, (p50, p95) in rows:
        print(f"  {label:32s} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms")
    print(f"  curate / raw engines           p50 {curate[0] / raw_pool[0]:.2f}x  "
          f"p95 {curate[1] / raw_pool[1]:.2f}x")
    print(f"  curate p95 minus embedding     {curate[1] - embed[1]:7.2f} ms (target <= 20 ms)")


def raw_engines(memory: Memory, path: Path, pool: int) -> Callable[[str], object]:
    """What curate's retrieval costs on the raw engines: FTS5 bm25 and the vector engine's
    knn (the graph the Memory uses) for a pool of candidates, then reading those rows (no
    fusion, ranking or packing)."""
    from _raw_vectors import raw_knn

    knn = raw_knn(memory)
    embedder = memory.ctx.embedder
    assert embedder is not None
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    # The best rows by bm25 from the full-text index alone, then those rows: joining
    # entries inside the MATCH query would read every matching row before the LIMIT.
    fts = ("SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? "
           "ORDER BY bm25(entries_fts) LIMIT ?")

    def run(query: str) -> object:
        expression = " OR ".join(f'"{t}"' for t in query_terms(query))
        rowids = [r[0] for r in connection.execute(fts, (expression, pool))]
        lexical = connection.execute(
            f"SELECT * FROM entries WHERE rowid IN ({','.join('?' * len(rowids))})",
            rowids).fetchall()
        ids = knn(embedder.embed_query(query), pool)  # Tulving sets ef per query; so does knn
        marks = ",".join("?" * len(ids))
        return lexical, connection.execute(
            f"SELECT * FROM entries WHERE id IN ({marks})", ids).fetchall()

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="realistic",
                        help="realistic: Zipf over ~21k words; narrow: tens of words")
    parser.add_argument("--fulltext-mirror-from", default="default", metavar="ROWS|none",
                        help="the SQLite adapter's fulltext_mirror_from ('none': FTS5 only)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            run(size, args.queries, Path(folder), args.corpus,
                mirror_choice(args.fulltext_mirror_from))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
