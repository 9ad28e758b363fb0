"""Export and import throughput against the raw engine, same data, same run.

Usage::

    .venv/bin/python benchmarks/portability.py                  # 10k and 100k entries
    .venv/bin/python benchmarks/portability.py --sizes 10000

For each size an embedded Memory (SQLite + hnswlib, hashing embedder) is filled with the
realistic synthetic corpus (``_corpus.py``), then timed:
- export: ``Memory.export`` to a bundle (vectors included), against the raw baseline of a
  plain SQLite ``SELECT`` of the same rows and vectors streamed to a JSON Lines file;
- import KEEP: ``Memory.import_bundle`` into an empty store with the bundle's vectors
  (the hnswlib graph built as part of it), against a plain ``executemany`` insert of the
  same rows (entries, tags, embeddings) into an empty copy of the whole schema, its
  indexes and full-text triggers included, and against that plus hnswlib building the
  graph of the same vectors (an import's vector index is rebuilt as part of it);
- import AUTO with another embedder (the vectors re-embedded: the embedder's own cost),
  on the smaller size only unless ``--reembed-all``;
- bundle bytes per entry.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from _corpus import realistic_texts

from tulving import Memory


def fill(path: Path, n: int) -> None:
    texts = realistic_texts(n)
    with Memory(path, agent_id="bench", embedder="hashing") as memory:
        for i in range(0, n, 2000):
            memory.store_many({"content": t, "type": "FACT", "tags": [f"t{j % 7}"]}
                              for j, t in enumerate(texts[i:i + 2000], start=i))


def raw_export(db: Path, out: Path) -> float:
    began = time.perf_counter()
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    with open(out, "w", encoding="utf-8") as handle:
        rows = con.execute("SELECT e.*, v.vector FROM entries e "
                           "LEFT JOIN embeddings v ON v.entry_id = e.id ORDER BY e.id")
        for row in rows:
            record = {k: row[k] for k in row.keys() if k != "vector"}  # noqa: SIM118 (a Row iterates values)
            record["vector"] = row["vector"].hex() if row["vector"] is not None else None
            handle.write(json.dumps(record) + "\n")
    con.close()
    return time.perf_counter() - began


def raw_import(db: Path, target: Path) -> float:
    """The same rows into an empty copy of the whole schema (indexes and the full-text
    triggers included: the floor for writing them) with ``executemany``."""
    src = sqlite3.connect(db)
    tables = ("entries", "entry_tags", "embeddings")
    rows = {t: src.execute(f"SELECT * FROM {t}").fetchall() for t in tables}
    schema = [sql for name, sql in src.execute(
        "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")
        if not (name.startswith("entries_fts_") and name[12:] in
                ("data", "idx", "docsize", "config", "content")) and name != "sqlite_sequence"]
    src.close()
    con = sqlite3.connect(target)
    for statement in schema:
        con.execute(statement)
    began = time.perf_counter()
    with con:
        for table in tables:
            if rows[table]:
                marks = ", ".join("?" * len(rows[table][0]))
                con.executemany(f"INSERT INTO {table} VALUES ({marks})", rows[table])
    elapsed = time.perf_counter() - began
    con.close()
    return elapsed


def raw_graph(db: Path) -> float:
    """The vector engine's own cost of what an import must rebuild: hnswlib fed the same
    vectors with the adapter's parameters (cosine, M=16, ef_construction=200)."""
    import hnswlib
    import numpy as np

    con = sqlite3.connect(db)
    blobs = [row[0] for row in con.execute("SELECT vector FROM embeddings")]
    con.close()
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
    began = time.perf_counter()
    index = hnswlib.Index(space="cosine", dim=matrix.shape[1])
    index.init_index(max_elements=len(matrix), ef_construction=200, M=16)
    index.add_items(matrix, np.arange(len(matrix)))
    return time.perf_counter() - began


def run(n: int, workdir: Path, reembed: bool) -> None:
    db = workdir / f"src-{n}.db"
    began = time.perf_counter()
    fill(db, n)
    print(f"\n{n:,} entries stored in {time.perf_counter() - began:.1f} s", file=sys.stderr)
    raw_out = raw_export(db, workdir / f"raw-{n}.jsonl")
    bundle = workdir / f"b-{n}.tulving"
    with Memory(db, agent_id="bench", embedder="hashing") as memory:
        began = time.perf_counter()
        report = memory.export(bundle)
        export_s = time.perf_counter() - began
    raw_in = raw_import(db, workdir / f"raw-{n}.db")
    graph = raw_graph(db)
    with Memory(workdir / f"keep-{n}.db", agent_id="bench", embedder="hashing") as memory:
        began = time.perf_counter()
        keep = memory.import_bundle(bundle, reembedding="keep")
        import_s = time.perf_counter() - began
    assert len(keep.added) == n
    size = bundle.stat().st_size
    print(f"{n:,} entries, {report.vectors:,} vectors; bundle {size / n:.0f} bytes/entry "
          f"({size / 1e6:.1f} MB)")
    print(f"  {'path':34} {'seconds':>8} {'entries/s':>10} {'vs raw':>7}")
    print(f"  {'raw SELECT -> JSON Lines':34} {raw_out:8.2f} {n / raw_out:10,.0f}")
    print(f"  {'export (bundle, vectors)':34} {export_s:8.2f} {n / export_s:10,.0f} "
          f"{export_s / raw_out:6.2f}x")
    print(f"  {'raw executemany insert':34} {raw_in:8.2f} {n / raw_in:10,.0f}")
    print(f"  {'raw hnswlib graph build':34} {graph:8.2f} {n / graph:10,.0f}")
    both = raw_in + graph
    print(f"  {'import KEEP':34} {import_s:8.2f} {n / import_s:10,.0f} "
          f"{import_s / raw_in:6.2f}x rows, {import_s / both:.2f}x rows + graph")
    if reembed:
        with Memory(workdir / f"auto-{n}.db", agent_id="bench", embedder="local") as memory:
            began = time.perf_counter()
            auto = memory.import_bundle(bundle)
            auto_s = time.perf_counter() - began
        print(f"  {'import AUTO, local model re-embeds':34} {auto_s:8.2f} {n / auto_s:10,.0f} "
              f"{auto_s / raw_in:6.2f}x  ({auto.reembedded:,} re-embedded)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--reembed-all", action="store_true",
                        help="also time re-embedding with the local model at every size")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for i, n in enumerate(args.sizes):
            run(n, Path(tmp), reembed=args.reembed_all or i == 0)


if __name__ == "__main__":
    main()
