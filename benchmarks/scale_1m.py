"""A million memories on one laptop: ingest, footprint, cold open, peak RSS, search and
curate latency, each beside the raw engines underneath, same data, same run.

Usage::

    .venv/bin/python benchmarks/scale_1m.py                        # 1,000,000 entries
    .venv/bin/python benchmarks/scale_1m.py --entries 200000 --queries 200
    .venv/bin/python benchmarks/scale_1m.py --entries 200000 --vectors hnsw   # the other index
    .venv/bin/python benchmarks/scale_1m.py --entries 200000 --folder F --reuse  # measure again

One embedded store (SQLite + the default vector index, or ``--vectors``) is filled with
the realistic synthetic corpus through ``store_many`` with the hashing embedder (a
precomputed-vector stand-in: the model's cost is ``benchmarks/ingest.py``). Reported, each
with issue 35's target:

* ingest entries/s, beside the raw engines' own ingest of the first 100k of the same texts
  and vectors (an ``executemany`` into a table with an FTS5 index, plus the vector
  engine's own add with the store's graph settings);
* bytes per memory on disk, by file;
* cold open to the first search answer and the peak RSS of that process (a fresh
  subprocess that opens the store, searches, then curates), beside a fresh process
  doing the same first answer on the raw engines (FTS5 top-10 and the vector engine's
  own open and knn); and the start-up apart (``startup.py``): ``import tulving``,
  ``tulving --help`` and the first answer, each beside ``import numpy``, by wall and CPU
  time (on a shared machine the CPU figure is the one to read);
* search (lexical, semantic, hybrid top-10) and curate (2,000 tokens) p50/p95 with query
  embedding excluded, beside raw FTS5 bm25, the raw knn and both with their rows
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

import numpy as np
from _corpus import realistic_queries, realistic_texts, wait_for_mirror
from _raw_vectors import engine_name, raw_knn
from curate_scale import raw_engines
from search_scale import PreEmbedded, timed_together
from startup import measure as measure_startup
from startup import report as startup_report

from tulving import Memory
from tulving.application.retrieval.search import build_filter
from tulving.domain.lexical import query_terms

ROOT = Path(__file__).resolve().parents[1]
BATCH = 5000
TYPES = ("FACT", "OBSERVATION", "EPISODE", "DECISION", "PLAN")
#: ``--vectors``: the vector index (None: the library's default).
VECTORS: str | None = None

#: Peak resident memory of this process: VmHWM belongs to the process's own address space
#: (ru_maxrss would also count the parent's, inherited across fork and exec on Linux).
PEAK_RSS = """
def peak_rss_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
"""

COLD_OPEN = PEAK_RSS + """
import json, sys, time
began = time.perf_counter()
from tulving import Memory
kwargs = {"vectors": sys.argv[2]} if sys.argv[2] != "default" else {}
memory = Memory(sys.argv[1], agent_id="bench", embedder="hashing", **kwargs)
memory.search("deploy schedule for the release", top_k=10)
answered = time.perf_counter() - began
memory.curate("deploy schedule for the release", token_budget=2000)
print(json.dumps({"first_answer_s": answered, "vectors": memory.ctx.vectors.name,
                  "peak_rss_mb": peak_rss_mb()}))
memory.close()
"""

#: The same first answer on the raw engines in a fresh process: FTS5's top 10 for the
#: query's words and the vector engine's top 10 for its vector, each opened as its own
#: documentation says (hnswlib loads its index file; usearch memory-maps it).
RAW_COLD_OPEN = PEAK_RSS + """
import json, sqlite3, sys, time
began = time.perf_counter()
import numpy as np
path, engine = sys.argv[1], sys.argv[2]
from tulving.adapters.embedders.hashing import HashingEmbedder
vector = HashingEmbedder().embed_query("deploy schedule for the release")
db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
words = " OR ".join(f'"{w}"' for w in ("deploy", "schedule", "release"))
db.execute("SELECT rowid, bm25(entries_fts) FROM entries_fts WHERE entries_fts MATCH ? "
           "ORDER BY bm25(entries_fts) LIMIT 10", (words,)).fetchall()
if engine == "usearch":
    from usearch.index import Index
    index = Index.restore(path + ".usearch", view=True)
    index.search(vector, 10)
else:
    import hnswlib
    index = hnswlib.Index(space="cosine", dim=len(vector))
    index.load_index(path + ".hnsw")
    index.knn_query(vector, k=10)
answered = time.perf_counter() - began
print(json.dumps({"first_answer_s": answered, "peak_rss_mb": peak_rss_mb()}))
"""


def memory_kwargs() -> dict[str, Any]:
    return {"vectors": VECTORS} if VECTORS else {}


def build(path: Path, texts: list[str]) -> float:
    """Seconds to store every text (closed, cache saved: a store another process opens)."""
    began = time.perf_counter()
    with Memory(path, agent_id="bench", embedder="hashing", **memory_kwargs()) as memory:
        for start in range(0, len(texts), BATCH):
            memory.store_many({"content": t, "type": TYPES[(start + i) % len(TYPES)]}
                              for i, t in enumerate(texts[start:start + BATCH]))
            done = start + BATCH
            if done % 100_000 == 0:
                rate = done / (time.perf_counter() - began)
                print(f"  {done:,} stored ({rate:,.0f}/s)", file=sys.stderr, flush=True)
        memory.flush()
    return time.perf_counter() - began


def raw_ingest(folder: Path, texts: list[str], vectors: np.ndarray, engine: str) -> float:
    """Seconds the raw engines take to hold the same texts and vectors."""
    con = sqlite3.connect(folder / "raw-ingest.db")
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, content TEXT, vector BLOB)")
    con.execute("CREATE VIRTUAL TABLE f USING fts5(content, content='t', content_rowid='id')")
    con.execute("CREATE TRIGGER ti AFTER INSERT ON t BEGIN "
                "INSERT INTO f(rowid, content) VALUES (new.id, new.content); END")
    if engine == "usearch":
        from usearch.index import Index

        graph: Any = Index(ndim=vectors.shape[1], metric="cos", dtype="i8", connectivity=16,
                           expansion_add=128)

        def add(chunk: range) -> None:
            graph.add(np.arange(chunk.start, chunk.stop, dtype=np.uint64),
                      vectors[chunk.start:chunk.stop])
    else:
        import hnswlib

        graph = hnswlib.Index(space="cosine", dim=vectors.shape[1])
        graph.init_index(max_elements=len(texts), M=16, ef_construction=200, random_seed=100)

        def add(chunk: range) -> None:
            graph.add_items(vectors[chunk.start:chunk.stop], np.arange(chunk.start, chunk.stop))
    began = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        chunk = range(start, min(len(texts), start + BATCH))
        with con:
            con.executemany("INSERT INTO t VALUES (?, ?, ?)",
                            ((i, texts[i], vectors[i].astype(np.float16).tobytes())
                             for i in chunk))
        add(chunk)
    took = time.perf_counter() - began
    con.close()
    (folder / "raw-ingest.db").unlink()
    return took


def fresh_process(script: str, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TULVING_")}
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                         text=True, env=env, cwd=ROOT, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def latencies(path: Path, queries: list[str]) -> list[tuple[str, float, float]]:
    memory = Memory(path, agent_id="bench", embedder="hashing", **memory_kwargs())
    memory.startup()
    wait_for_mirror(memory)
    ctx = memory.ctx
    ctx.embedder = PreEmbedded(ctx.embedder, queries)
    knn = raw_knn(memory)
    engine = engine_name(memory)
    vectors = {q: ctx.embedder.embed_query(q) for q in queries}
    raw = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    raw_sql = ("SELECT rowid, bm25(entries_fts) FROM entries_fts WHERE entries_fts MATCH ? "
               "ORDER BY bm25(entries_fts) LIMIT 10")
    expressions = {q: " OR ".join(f'"{t}"' for t in query_terms(q)) for q in queries}
    flt = build_filter(ctx)
    pool = int(statistics.median(len(memory._curator._candidates(q, 2000, flt)[0])
                                 for q in queries[:30]))
    raw_pool = raw_engines(memory, path, pool)
    rows_sql = f"SELECT * FROM entries WHERE id IN ({','.join('?' * 10)})"
    pools = 2 * 50  # hybrid: 50 candidates from each engine

    def raw_hybrid(q: str) -> object:
        lexical = raw.execute(raw_sql.replace("LIMIT 10", f"LIMIT {pools // 2}"),
                              (expressions[q],)).fetchall()
        return lexical, knn(vectors[q], pools // 2)

    rows = timed_together([
        ("raw FTS5 bm25 top-10", lambda q: raw.execute(raw_sql, (expressions[q],)).fetchall()),
        (f"raw {engine} knn top-10", lambda q: knn(vectors[q], 10)),
        (f"raw {engine} knn + rows", lambda q: raw.execute(
            rows_sql, knn(vectors[q], 10)).fetchall()),
        ("raw FTS5 + knn (50 each)", raw_hybrid),
        (f"raw FTS5 + knn + rows ({pool})", raw_pool),
        ("tulving search lexical", lambda q: memory.search(q, 10, mode="lexical")),
        ("tulving search semantic", lambda q: memory.search(q, 10, mode="semantic")),
        ("tulving search hybrid", lambda q: memory.search(q, 10, mode="hybrid")),
        ("tulving curate 2,000 tokens", lambda q: memory.curate(q, token_budget=2000)),
    ], queries)
    raw.close()
    memory.close()
    return rows


def verdict(ok: bool) -> str:
    return "ok " if ok else "MISS"


def main() -> None:
    global VECTORS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--vectors", default=None, help="vector index (default: the library's)")
    parser.add_argument("--folder", type=Path, default=None,
                        help="keep the store here (default: a temporary folder)")
    parser.add_argument("--reuse", action="store_true",
                        help="measure a store already built in --folder (no ingest figures)")
    args = parser.parse_args()
    VECTORS = args.vectors
    folder = args.folder or Path(tempfile.mkdtemp(prefix="tulving-1m-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "million.db"
    queries = realistic_queries(args.queries)
    n = args.entries
    load = os.getloadavg()
    seconds = raw_seconds = None
    sample = min(n, 100_000)
    if not (args.reuse and path.exists()):
        texts = realistic_texts(n)
        seconds = build(path, texts)
        with Memory(None, agent_id="bench", embedder="hashing", storage="memory") as scratch:
            embedder = scratch.ctx.embedder
            assert embedder is not None
            vectors = np.asarray(embedder.embed(texts[:sample]), dtype=np.float32)
        engine = fresh_process(COLD_OPEN, str(path), VECTORS or "default")["vectors"]
        raw_seconds = raw_ingest(folder, texts[:sample], vectors, engine)
        del texts, vectors
    files = sorted((p.name, p.stat().st_size) for p in folder.iterdir()
                   if p.name.startswith(path.name) and not p.name.endswith(".lock"))
    total = sum(size for _, size in files)
    opened = fresh_process(COLD_OPEN, str(path), VECTORS or "default")
    engine = opened["vectors"]
    raw_opened = fresh_process(RAW_COLD_OPEN, str(path), engine)
    started = measure_startup(path)
    rows = latencies(path, queries)

    big = n > 500_000
    open_target, rss_target = (2.0, 1536) if big else (1.0, 600)
    print(f"\n{n:,} memories (SQLite + {engine}, hashing embedder at 384 dimensions), "
          f"{len(queries)} queries, embedding excluded; load average at start "
          f"{load[0]:.1f} on {os.cpu_count()} cores")
    if seconds is not None and raw_seconds is not None:
        print(f"  ingest                     {n / seconds:9,.0f} entries/s  "
              f"(raw FTS5 table + {engine} on the first {sample:,}: "
              f"{sample / raw_seconds:,.0f}/s; Tulving {(n / seconds) / (sample / raw_seconds):.2f}x)")
    per = total / n
    print(f"  on disk                    {per:9,.0f} B/memory  [{verdict(per <= 3000)}"
          f" <= 3,000]  " + ", ".join(f"{name} {size / n:,.0f}" for name, size in files if size))
    print(f"  cold open to first answer  {opened['first_answer_s']:9.2f} s   "
          f"[{verdict(opened['first_answer_s'] <= open_target)} <= {open_target:.0f} s]  "
          f"raw engines {raw_opened['first_answer_s']:.2f} s")
    print("\n".join(startup_report(started)))
    print(f"  peak RSS of that process   {opened['peak_rss_mb']:9,.0f} MB  "
          f"[{verdict(opened['peak_rss_mb'] <= rss_target)} <= {rss_target:,} MB]  "
          f"raw engines {raw_opened['peak_rss_mb']:,.0f} MB (open, search, curate)")
    by_name = {name: (p50, p95) for name, p50, p95 in rows}
    for name, p50, p95 in rows:
        print(f"  {name:32s} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms")
    raw_pool = next(v for k, v in by_name.items() if k.startswith("raw FTS5 + knn + rows"))
    hybrid, curate = by_name["tulving search hybrid"], by_name["tulving curate 2,000 tokens"]
    raw_hybrid = by_name["raw FTS5 + knn (50 each)"]
    print(f"  hybrid p95 {hybrid[1]:.2f} ms [{verdict(hybrid[1] <= 9)} <= 9 ms], "
          f"{hybrid[1] / raw_hybrid[1]:.2f}x the raw pools' p95 "
          f"[{verdict(hybrid[1] <= 2 * raw_hybrid[1])} <= 2x]; curate p95 {curate[1]:.2f} ms "
          f"[{verdict(curate[1] <= 21)} <= 21 ms], {curate[1] / raw_pool[1]:.2f}x the raw pool "
          f"with rows [{verdict(curate[1] <= 2 * raw_pool[1])} <= 2x]")
    print(f"  ratios p50: semantic / raw knn + rows "
          f"{by_name['tulving search semantic'][0] / by_name[f'raw {engine} knn + rows'][0]:.2f}x;"
          f" lexical / raw FTS5 "
          f"{by_name['tulving search lexical'][0] / by_name['raw FTS5 bm25 top-10'][0]:.2f}x;"
          f" curate / raw pool {curate[0] / raw_pool[0]:.2f}x")
    if args.folder is None:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
