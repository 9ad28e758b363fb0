"""Bytes per memory on disk, by file and by table, against the raw minimum.

Usage::

    .venv/bin/python benchmarks/footprint.py                  # 10k and 100k entries
    .venv/bin/python benchmarks/footprint.py --sizes 10000

An embedded Memory (SQLite + hnswlib, hashing embedder at 384 dimensions, the local
model's width) is filled with the realistic synthetic corpus (``_corpus.py``) and closed;
then every file beside it is measured, and the database's tables and indexes through
SQLite's ``dbstat`` virtual table. The raw minimum, in the same run: the texts, one
float32 vector each and an FTS5 index of the texts, in a fresh SQLite file with nothing
else (what any store of searchable text with vectors must hold).
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np
from _corpus import realistic_texts

from tulving import Memory

DIMENSION = 384


#: ``--vector-format``: how the store keeps vectors on disk (None: float32).
VECTOR_FORMAT: str | None = None


def fill(path: Path, texts: list[str]) -> float:
    began = time.perf_counter()
    options: dict[str, dict[str, object]] = {"embedder": {"dimension": DIMENSION}}
    if VECTOR_FORMAT:
        options["storage"] = {"vector_format": VECTOR_FORMAT}
    with Memory(path, agent_id="bench", embedder="hashing", options=options) as memory:
        for i in range(0, len(texts), 2000):
            memory.store_many({"content": t, "type": "FACT"} for t in texts[i:i + 2000])
    return time.perf_counter() - began


def cold_open(path: Path) -> tuple[float, float]:
    """Seconds from opening the store to the first search answer, in a fresh Memory (the
    page cache is warm: this is the work of opening, not of the disk); and, of that, the
    seconds a raw read of every stored vector takes (what start-up reconciliation reads
    and the hnsw index is handed instead of a saved copy)."""
    options = {"embedder": {"dimension": DIMENSION}}
    began = time.perf_counter()
    with Memory(path, agent_id="bench", embedder="hashing", options=options) as memory:
        memory.search("deploy schedule", top_k=5)
        opened = time.perf_counter() - began
    con = sqlite3.connect(path)
    began = time.perf_counter()
    rows = con.execute("SELECT vector FROM embeddings").fetchall()
    dtype = np.float16 if VECTOR_FORMAT == "float16" else np.float32
    matrix = np.frombuffer(b"".join(r[0] for r in rows), dtype=dtype).astype(np.float32)
    raw = time.perf_counter() - began
    con.close()
    assert matrix.size == len(rows) * DIMENSION
    return opened, raw


def raw_minimum(path: Path, texts: list[str]) -> int:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, content TEXT, vector BLOB)")
    con.execute("CREATE VIRTUAL TABLE f USING fts5(content, content='t', content_rowid='id')")
    rng = np.random.default_rng(3)
    with con:
        for i, text in enumerate(texts):
            vector = rng.standard_normal(DIMENSION).astype(np.float32).tobytes()
            con.execute("INSERT INTO t VALUES (?, ?, ?)", (i, text, vector))
        con.execute("INSERT INTO f(f) VALUES ('rebuild')")
    con.execute("VACUUM")
    con.close()
    return path.stat().st_size


def tables(path: Path) -> list[tuple[str, int]]:
    con = sqlite3.connect(path)
    try:
        rows = con.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name "
                           "ORDER BY SUM(pgsize) DESC").fetchall()
    except sqlite3.OperationalError:  # a SQLite built without dbstat
        rows = []
    con.close()
    return [(str(name), int(size)) for name, size in rows]


def run(n: int, folder: Path) -> None:
    texts = realistic_texts(n)
    store = folder / f"m{n}.db"
    seconds = fill(store, texts)
    files = sorted((p.name, p.stat().st_size) for p in folder.iterdir()
                   if p.name.startswith(store.name))
    total = sum(size for _, size in files)
    minimum = raw_minimum(folder / f"raw{n}.db", texts)
    text_bytes = sum(len(t.encode()) for t in texts)
    print(f"\n{n:,} memories ({seconds:.0f} s to store), {DIMENSION}-d "
          f"{VECTOR_FORMAT or 'float32'} vectors on disk; "
          f"text alone {text_bytes / n:.0f} B/memory")
    print(f"  {'file':34} {'bytes':>12} {'B/memory':>9}")
    for name, size in files:
        print(f"  {name:34} {size:12,d} {size / n:9.0f}")
    print(f"  {'total':34} {total:12,d} {total / n:9.0f}")
    print(f"  {'raw minimum (text+vector+FTS5)':34} {minimum:12,d} {minimum / n:9.0f}"
          f"   ratio {total / minimum:.2f}x")
    print(f"  {'table or index (dbstat)':34} {'bytes':>12} {'B/memory':>9}")
    for name, size in tables(store)[:12]:
        print(f"  {name:34} {size:12,d} {size / n:9.0f}")
    opened, raw = cold_open(store)
    print(f"  cold open to first search answer {opened:.2f} s; a raw read of every stored "
          f"vector {raw:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--vector-format", choices=["float32", "float16"], default=None)
    args = parser.parse_args()
    global VECTOR_FORMAT
    VECTOR_FORMAT = args.vector_format
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            run(n, Path(tmp))


if __name__ == "__main__":
    main()
