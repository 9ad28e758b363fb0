"""A million memories on one laptop: ingest, footprint, cold open, peak RSS, search and
curate latency, each beside the raw engines underneath, same data, same run.

Usage::

    .venv/bin/python benchmarks/scale_1m.py                        # 1,000,000 entries
    .venv/bin/python benchmarks/scale_1m.py --entries 100000 --queries 100

One embedded store (SQLite + hnswlib) is filled with the realistic synthetic corpus
through ``store_many`` with the hashing embedder (a precomputed-vector stand-in: the
model's cost is its own benchmark). Reported:

* ingest entries/s, beside the raw engines' own ingest of the first 100k of the same texts
  and vectors (an ``executemany`` into a table with an FTS5 index, plus hnswlib
  ``add_items`` with the store's M and ef_construction);
* bytes per memory on disk, by file;
* cold open to the first search answer and the peak RSS of that process (a fresh
  subprocess that opens the store and searches);
* search (lexical, semantic, hybrid top-10) and curate (2,000 tokens) p50/p95 with query
  embedding excluded, beside raw FTS5 bm25, raw hnswlib knn and both with their rows
  (``search_scale.py``'s and ``curate_scale.py``'s raw paths), interleaved;

PostgreSQL + pgvector at 100k, with the ratio to SQLite at the same size, is
``postgres_scale.py`` (the same measures on both stores in one run).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import hnswlib
import numpy as np
from _corpus import realistic_queries, realistic_texts, wait_for_mirror
from curate_scale import raw_engines
from search_scale import PreEmbedded, timed_together

from tulving import Memory
from tulving.application.retrieval.search import build_filter
from tulving.domain.lexical import query_terms

ROOT = Path(__file__).resolve().parents[1]
BATCH = 5000
TYPES = ("FACT", "OBSERVATION", "EPISODE", "DECISION", "PLAN")

COLD_OPEN = """
import json, resource, sys, time
began = time.perf_counter()
from tulving import Memory
memory = Memory(sys.argv[1], agent_id="bench", embedder="hashing", vectors="hnsw")
memory.search("deploy schedule for the release", top_k=10)
answered = time.perf_counter() - began
memory.curate("deploy schedule for the release", token_budget=2000)
print(json.dumps({"first_answer_s": answered,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
memory.close()
"""


def build(path: Path, texts: list[str]) -> float:
    """Seconds to store every text (flushed and persisted: a store another process opens)."""
    began = time.perf_counter()
    with Memory(path, agent_id="bench", embedder="hashing", vectors="hnsw") as memory:
        for start in range(0, len(texts), BATCH):
            memory.store_many({"content": t, "type": TYPES[(start + i) % len(TYPES)]}
                              for i, t in enumerate(texts[start:start + BATCH]))
            done = start + BATCH
            if done % 100_000 == 0:
                rate = done / (time.perf_counter() - began)
                print(f"  {done:,} stored ({rate:,.0f}/s)", file=sys.stderr, flush=True)
    return time.perf_counter() - began


def raw_ingest(folder: Path, texts: list[str], vectors: np.ndarray, M: int, ef: int) -> float:
    """Seconds the raw engines take to hold the same texts and vectors."""
    con = sqlite3.connect(folder / "raw-ingest.db")
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, content TEXT, vector BLOB)")
    con.execute("CREATE VIRTUAL TABLE f USING fts5(content, content='t', content_rowid='id')")
    con.execute("CREATE TRIGGER ti AFTER INSERT ON t BEGIN "
                "INSERT INTO f(rowid, content) VALUES (new.id, new.content); END")
    index = hnswlib.Index(space="cosine", dim=vectors.shape[1])
    index.init_index(max_elements=len(texts), M=M, ef_construction=ef, random_seed=100)
    began = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        chunk = range(start, min(len(texts), start + BATCH))
        with con:
            con.executemany("INSERT INTO t VALUES (?, ?, ?)",
                            ((i, texts[i], vectors[i].tobytes()) for i in chunk))
        index.add_items(vectors[chunk.start:chunk.stop], np.arange(chunk.start, chunk.stop))
    took = time.perf_counter() - began
    con.close()
    return took


def cold_open(path: Path) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TULVING_")}
    out = subprocess.run([sys.executable, "-c", COLD_OPEN, str(path)], capture_output=True,
                         text=True, env=env, cwd=ROOT, check=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def latencies(path: Path, queries: list[str]) -> list[tuple[str, float, float]]:
    memory = Memory(path, agent_id="bench", embedder="hashing", vectors="hnsw")
    memory.startup()
    wait_for_mirror(memory)
    ctx = memory.ctx
    ctx.embedder = PreEmbedded(ctx.embedder, queries)
    index: Any = ctx.vectors._index  # type: ignore[union-attr]  # the raw hnswlib graph
    ef_search = ctx.vectors._ef_search  # type: ignore[union-attr]
    vectors = {q: ctx.embedder.embed_query(q) for q in queries}
    raw = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    raw_sql = ("SELECT rowid, bm25(entries_fts) FROM entries_fts WHERE entries_fts MATCH ? "
               "ORDER BY bm25(entries_fts) LIMIT 10")
    expressions = {q: " OR ".join(f'"{t}"' for t in query_terms(q)) for q in queries}

    def raw_knn(q: str) -> object:
        index.set_ef(max(ef_search, 10))
        return index.knn_query(vectors[q], k=10)

    flt = build_filter(ctx)
    pool = int(statistics.median(len(memory._curator._candidates(q, 2000, flt)[0])
                                 for q in queries[:30]))
    raw_pool = raw_engines(memory, path, pool)
    rows = timed_together([
        ("raw FTS5 bm25 top-10", lambda q: raw.execute(raw_sql, (expressions[q],)).fetchall()),
        ("raw hnswlib knn top-10", raw_knn),
        (f"raw FTS5 + knn + rows ({pool})", raw_pool),
        ("tulving search lexical", lambda q: memory.search(q, 10, mode="lexical")),
        ("tulving search semantic", lambda q: memory.search(q, 10, mode="semantic")),
        ("tulving search hybrid", lambda q: memory.search(q, 10, mode="hybrid")),
        ("tulving curate 2,000 tokens", lambda q: memory.curate(q, token_budget=2000)),
    ], queries)
    raw.close()
    memory.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--folder", type=Path, default=None,
                        help="keep the store here (default: a temporary folder)")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="tulving-1m-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "million.db"
    queries = realistic_queries(args.queries)
    texts = realistic_texts(args.entries)

    seconds = build(path, texts)
    sample = min(len(texts), 100_000)
    with Memory(None, agent_id="bench", embedder="hashing", storage="memory") as scratch:
        embedder = scratch.ctx.embedder
        assert embedder is not None
        vectors = np.asarray(embedder.embed(texts[:sample]), dtype=np.float32)
    raw_seconds = raw_ingest(folder, texts[:sample], vectors, 16, 200)
    files = sorted((p.name, p.stat().st_size) for p in folder.iterdir()
                   if p.name.startswith(path.name))
    total = sum(size for _, size in files)
    opened = cold_open(path)
    rows = latencies(path, queries)

    n = args.entries
    print(f"\n{n:,} memories (SQLite + hnswlib, hashing embedder at "
          f"{vectors.shape[1]} dimensions), {len(queries)} queries, embedding excluded")
    print(f"  ingest                     {n / seconds:9,.0f} entries/s  "
          f"(raw FTS5 table + hnswlib on the first {sample:,}: "
          f"{sample / raw_seconds:,.0f}/s; ratio {(sample / raw_seconds) / (n / seconds):.2f}x)")
    print(f"  on disk                    {total / n:9,.0f} B/memory  "
          + ", ".join(f"{name} {size / n:,.0f}" for name, size in files if size))
    print(f"  cold open to first answer  {opened['first_answer_s']:9.2f} s   "
          f"peak RSS {opened['peak_rss_mb']:,.0f} MB (open, search, curate)")
    by_name = {name: (p50, p95) for name, p50, p95 in rows}
    for name, p50, p95 in rows:
        print(f"  {name:32s} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms")
    raw_pool = next(v for k, v in by_name.items() if k.startswith("raw FTS5 + knn"))
    print(f"  ratios p50: semantic / raw knn "
          f"{by_name['tulving search semantic'][0] / by_name['raw hnswlib knn top-10'][0]:.2f}x;"
          f" lexical / raw FTS5 "
          f"{by_name['tulving search lexical'][0] / by_name['raw FTS5 bm25 top-10'][0]:.2f}x;"
          f" curate / raw pool {by_name['tulving curate 2,000 tokens'][0] / raw_pool[0]:.2f}x")
    if args.folder is None:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
