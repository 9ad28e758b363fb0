"""What encryption at rest costs: the same store plain and encrypted, same data, same run.

Usage::

    .venv/bin/python benchmarks/encryption.py                  # 10k and 100k entries
    .venv/bin/python benchmarks/encryption.py --sizes 10000 --queries 200

For each size two embedded Memories (SQLite + hnswlib, hashing embedder) are filled with
the same synthetic texts (``_corpus.py``'s realistic corpus), one plain (stdlib sqlite3)
and one encrypted (SQLCipher, ``encryption="env:..."``). Everything is interleaved so a
slow spell of a shared machine lands on both alike: ingest alternates batches of 2,000
between the two stores; search and curate run each query on both in turn (query
embeddings computed before timing). Targets (issue 17): encrypted/plain ≤ 1.3x on search
and curate p50, ≤ 1.5x on ingest, at 100k.

It also measures the vector cache question: opening the store with its cache (plain: three
files; encrypted: one AES-GCM sealed file), writing the cache on close, and the
alternative of writing no cache for encrypted stores, i.e. rebuilding the hnsw graph from
the stored embeddings on every open; plus the one-off key derivation (PBKDF2, once per
process and file) and ``tulving encrypt`` (the conversion) of the plain store.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _corpus import CORPORA, wait_for_mirror
from search_scale import PreEmbedded, timed_together

from tulving import Memory
from tulving.application.bootstrap import change_encryption
from tulving.application.governance.encryption import parse_encryption
from tulving.domain import sealing

KEY_ENV = "TULVING_BENCH_ENCRYPTION_KEY"
os.environ.setdefault(KEY_ENV, "benchmark passphrase, not a secret")
BATCH = 2000


def open_memory(path: Path, encrypted: bool) -> Memory:
    return Memory(path, agent_id="bench", embedder="hashing", vectors="hnsw",
                  encryption=f"env:{KEY_ENV}" if encrypted else None)


def timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def ingest(memories: dict[str, Memory], texts: Sequence[str]) -> dict[str, float]:
    spent = dict.fromkeys(memories, 0.0)
    for n, i in enumerate(range(0, len(texts), BATCH)):
        batch = [{"content": t, "type": "FACT"} for t in texts[i:i + BATCH]]
        order = list(memories) if n % 2 == 0 else list(reversed(memories))
        for name in order:
            spent[name] += timed(lambda m=memories[name], b=batch: m.store_many(b))
    for name, memory in memories.items():
        spent[name] += timed(memory.flush)  # the vector cache written: part of ingesting
    return spent


def cache_figures(path: Path, encrypted: bool) -> dict[str, float]:
    """Open with the cache, close writing it, and open with no cache (rebuild)."""
    figures: dict[str, float] = {}
    sealing._master.cache_clear()
    memory = open_memory(path, encrypted)
    figures["open (cache, cold key)"] = timed(memory.startup)
    vectors: Any = memory.ctx.vectors
    vectors._dirty = True  # force a full write of the cache
    figures["write cache"] = timed(vectors.persist)
    memory.close()
    memory = open_memory(path, encrypted)
    figures["open (cache)"] = timed(memory.startup)
    memory.close()
    for suffix in (".hnsw", ".hnsw.json", ".hnsw.vectors", ".hnsw.sealed"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    memory = open_memory(path, encrypted)
    figures["open (rebuild from db)"] = timed(memory.startup)
    memory.close()
    return figures


def run(size: int, n_queries: int, folder: Path) -> None:
    make_texts, make_queries = CORPORA["realistic"]
    texts, queries = make_texts(size), make_queries(n_queries)
    paths = {"plain": folder / f"plain-{size}.db", "encrypted": folder / f"enc-{size}.db"}
    memories = {name: open_memory(path, name == "encrypted") for name, path in paths.items()}
    for memory in memories.values():
        memory.startup()
    spent = ingest(memories, texts)
    for memory in memories.values():
        wait_for_mirror(memory)
        memory.ctx.embedder = PreEmbedded(memory.ctx.embedder, queries)
    p, e = memories["plain"], memories["encrypted"]
    rows = timed_together([
        ("plain lexical", lambda q: p.search(q, 10, mode="lexical")),
        ("encrypted lexical", lambda q: e.search(q, 10, mode="lexical")),
        ("plain semantic", lambda q: p.search(q, 10, mode="semantic")),
        ("encrypted semantic", lambda q: e.search(q, 10, mode="semantic")),
        ("plain hybrid", lambda q: p.search(q, 10, mode="hybrid")),
        ("encrypted hybrid", lambda q: e.search(q, 10, mode="hybrid")),
        ("plain curate", lambda q: p.curate(q, token_budget=2000)),
        ("encrypted curate", lambda q: e.curate(q, token_budget=2000)),
    ], queries)
    for memory in memories.values():
        memory.close()
    sizes = {name: sum(f.stat().st_size for f in folder.iterdir()
                       if f.name.startswith(path.name)) for name, path in paths.items()}
    p50 = {name: (a, b) for name, a, b in rows}

    print(f"\n{size:,} entries, {n_queries} queries (query embedding excluded)")
    print(f"{'':22s}{'plain':>12s}{'encrypted':>12s}{'ratio':>8s}")
    rate = {k: size / v for k, v in spent.items()}
    print(f"{'ingest entries/s':22s}{rate['plain']:12,.0f}{rate['encrypted']:12,.0f}"
          f"{spent['encrypted'] / spent['plain']:7.2f}x  (time ratio; target <= 1.5x)")
    for op in ("lexical", "semantic", "hybrid", "curate"):
        a, b = p50[f"plain {op}"][0], p50[f"encrypted {op}"][0]
        target = "  (target <= 1.3x)" if op in ("hybrid", "curate") else ""
        print(f"{op + ' p50 ms':22s}{a:12.2f}{b:12.2f}{b / a:7.2f}x{target}")
        a95, b95 = p50[f"plain {op}"][1], p50[f"encrypted {op}"][1]
        print(f"{op + ' p95 ms':22s}{a95:12.2f}{b95:12.2f}{b95 / a95:7.2f}x")
    print(f"{'bytes on disk':22s}{sizes['plain']:12,d}{sizes['encrypted']:12,d}"
          f"{sizes['encrypted'] / sizes['plain']:7.2f}x")

    figures = {name: cache_figures(path, name == "encrypted") for name, path in paths.items()}
    print(f"{'vector cache, seconds':22s}{'plain':>12s}{'encrypted':>12s}")
    for what in figures["plain"]:
        print(f"{what:22s}{figures['plain'][what]:12.2f}{figures['encrypted'][what]:12.2f}")

    key = parse_encryption(f"env:{KEY_ENV}")
    sealing._master.cache_clear()
    salt = sealing.new_salt()
    kdf = timed(lambda: sealing.subkey(key, salt, "probe"))  # type: ignore[arg-type]
    copy = folder / f"convert-{size}.db"
    shutil.copy(paths["plain"], copy)
    convert = timed(lambda: change_encryption(str(copy), None, key))
    print(f"key derivation (PBKDF2-SHA512, 256k, once per process and file): {kdf:.2f} s")
    print(f"tulving encrypt of the plain store (export + check + rename): {convert:.1f} s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tulving-encryption-") as tmp:
        for size in args.sizes:
            folder = Path(tmp) / str(size)
            folder.mkdir()
            run(size, args.queries, folder)
            shutil.rmtree(folder)
    print(f"\nmachine load: {os.getloadavg()[0]:.2f} (1-minute average)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
