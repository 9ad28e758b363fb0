"""Search latency at scale against the raw engines underneath, same data, same run.

Usage::

    .venv/bin/python benchmarks/search_scale.py                 # 10k and 100k entries
    .venv/bin/python benchmarks/search_scale.py --sizes 10000 --queries 300

For each size a fresh embedded Memory (SQLite + hnswlib, hashing embedder) is filled with
synthetic texts (``--corpus realistic``, the default: Zipf-distributed English words;
``--corpus narrow``: template sentences over tens of words; see ``_corpus.py``). Queries
are embedded before timing (the embedder's cost is its own benchmark), so the figures
compare Tulving's search path with:
- raw FTS5: the same OR-of-terms MATCH with bm25() ordering on the same file;
- raw hnswlib: ``knn_query`` on the very hnswlib graph the Memory uses.
Ratios = Tulving p50 / raw p50, against the engine call alone and against the engine call
plus reading the top-k rows (what a caller of the raw engines needs to have memories, not
row numbers); hybrid: against raw FTS5 + raw knn over the pool back to back.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _corpus import CORPORA, mirror_choice, storage_options, wait_for_mirror

from tulving import Memory
from tulving.application.retrieval.options import SearchOptions
from tulving.domain.lexical import query_terms


class PreEmbedded:
    """The real embedder, with query vectors computed before the clock starts."""

    def __init__(self, inner: Any, queries: Sequence[str]) -> None:
        self.inner, self.model_id, self.dimension = inner, inner.model_id, inner.dimension
        self.cache = {q: inner.embed_query(q) for q in queries}

    def embed(self, texts: Sequence[str]) -> Any:
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> Any:
        return self.cache[text]


def timed_together(
    paths: Sequence[tuple[str, Callable[[str], object]]], queries: Sequence[str]
) -> list[tuple[str, float, float]]:
    """p50/p95 of every path, interleaved: each query runs on every path in turn (the
    order rotating), so a slow spell of a shared machine lands on all paths alike and
    the ratios stay comparable; timing one path after the other let such spells move
    a ratio by a third between runs."""
    for q in queries[:20]:
        for _, fn in paths:
            fn(q)  # warm caches
    samples: list[list[float]] = [[] for _ in paths]
    for n, q in enumerate(queries):
        for i in [(n + k) % len(paths) for k in range(len(paths))]:
            started = time.perf_counter()
            paths[i][1](q)
            samples[i].append(time.perf_counter() - started)
    return [(name, 1000 * statistics.median(got), 1000 * float(np.percentile(got, 95)))
            for (name, _), got in zip(paths, samples, strict=True)]


def run(size: int, n_queries: int, top_k: int, folder: Path,
        corpus: str = "realistic", mirror_from: object = "default",
        ) -> list[tuple[str, float, float]]:
    make_texts, make_queries = CORPORA[corpus]
    texts = make_texts(size)
    queries = make_queries(n_queries)
    memory = Memory(folder / f"scale-{size}.db", agent_id="bench", embedder="hashing",
                    vectors="hnsw", options=storage_options(mirror_from))
    started = time.perf_counter()
    for i in range(0, size, 2000):
        memory.store_many({"content": t, "type": "FACT"} for t in texts[i:i + 2000])
    memory.flush()
    print(f"{size} entries stored in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    wait_for_mirror(memory)
    ctx = memory.ctx
    ctx.embedder = PreEmbedded(ctx.embedder, queries)
    index: Any = ctx.vectors._index  # type: ignore[union-attr]  # the raw hnswlib graph
    vectors = {q: ctx.embedder.embed_query(q) for q in queries}
    raw = sqlite3.connect(f"file:{folder / f'scale-{size}.db'}?mode=ro", uri=True)
    raw_sql = ("SELECT rowid, bm25(entries_fts) FROM entries_fts WHERE entries_fts MATCH ? "
               "ORDER BY bm25(entries_fts) LIMIT ?")
    expressions = {q: " OR ".join(f'"{t}"' for t in query_terms(q)) for q in queries}
    pool = max(2 * top_k, SearchOptions().pool)  # what each engine gives hybrid search

    def raw_fts(q: str) -> object:
        return raw.execute(raw_sql, (expressions[q], top_k)).fetchall()

    ef_search = ctx.vectors._ef_search  # type: ignore[union-attr]  # the configured ef

    def knn(vector: Any, k: int) -> Any:
        # Tulving sets ef per query; the raw engine gets the configured one (at least k).
        index.set_ef(max(ef_search, k))
        return index.knn_query(vector, k=k)

    def raw_knn(q: str) -> object:
        return knn(vectors[q], top_k)

    def raw_both(q: str) -> object:
        return (raw.execute(raw_sql, (expressions[q], pool)).fetchall(),
                knn(vectors[q], pool))

    # What a caller of the raw engines must also do to get memories, not row numbers:
    # read the top-k rows (hnswlib labels mapped to ids with a plain dict).
    ids_by_label = dict(ctx.vectors._ids_by_label)  # type: ignore[union-attr]
    marks = ",".join("?" * top_k)
    rows_sql = f"SELECT * FROM entries WHERE id IN ({marks})"
    fts_rows_sql = ("SELECT e.* FROM entries_fts JOIN entries e ON e.rowid = entries_fts.rowid "
                    "WHERE entries_fts MATCH ? ORDER BY entries_fts.rank LIMIT ?")

    def raw_fts_rows(q: str) -> object:
        return raw.execute(fts_rows_sql, (expressions[q], top_k)).fetchall()

    def raw_knn_rows(q: str) -> object:
        labels, _ = knn(vectors[q], top_k)
        ids = [ids_by_label[int(label)] for label in labels[0]]
        return raw.execute(rows_sql, ids).fetchall()

    rowid_sql = f"SELECT * FROM entries WHERE rowid IN ({marks})"

    def raw_both_rows(q: str) -> object:
        lexical, _ = raw_both(q)
        rowids = [r[0] for r in lexical[:top_k]]
        return raw.execute(rowid_sql, rowids + [-1] * (top_k - len(rowids))).fetchall()

    rows = timed_together([
        ("raw FTS5 bm25", raw_fts),
        ("raw hnswlib knn", raw_knn),
        ("raw FTS5 + knn (pool)", raw_both),
        ("raw FTS5 + rows", raw_fts_rows),
        ("raw knn + rows", raw_knn_rows),
        ("raw both (pool) + rows", raw_both_rows),
        ("tulving lexical", lambda q: memory.search(q, top_k, mode="lexical")),
        ("tulving semantic", lambda q: memory.search(q, top_k, mode="semantic")),
        ("tulving hybrid", lambda q: memory.search(q, top_k, mode="hybrid")),
    ], queries)
    raw.close()
    memory.close()
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="realistic",
                        help="realistic: Zipf over ~21k words; narrow: tens of words")
    parser.add_argument("--fulltext-mirror-from", default="default", metavar="ROWS|none",
                        help="the SQLite adapter's fulltext_mirror_from ('none': FTS5 only)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tulving-scale-") as tmp:
        for size in args.sizes:
            rows = dict((n, (p50, p95)) for n, p50, p95 in
                        run(size, args.queries, args.top_k, Path(tmp), args.corpus,
                            mirror_choice(args.fulltext_mirror_from)))
            print(f"\n{size:,} entries ({args.corpus} corpus), top_k={args.top_k}, "
                  f"{args.queries} queries "
                  "(query embedding excluded)")
            print(f"{'path':26s}{'p50 ms':>9s}{'p95 ms':>9s}{'vs engine':>11s}"
                  f"{'vs +rows':>10s}")
            against = {"tulving lexical": ("raw FTS5 bm25", "raw FTS5 + rows"),
                       "tulving semantic": ("raw hnswlib knn", "raw knn + rows"),
                       "tulving hybrid": ("raw FTS5 + knn (pool)", "raw both (pool) + rows")}
            for name, (p50, p95) in rows.items():
                ratios = ""
                if name in against:
                    engine, with_rows = against[name]
                    ratios = (f"{p50 / rows[engine][0]:10.2f}x"
                              f"{p50 / rows[with_rows][0]:9.2f}x")
                print(f"{name:26s}{p50:9.2f}{p95:9.2f}{ratios}")
            print("vs engine: against the engine call alone (ids/row numbers only); "
                  "vs +rows: against the engine plus reading the top-k rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
