"""usearch against hnswlib, the two engines under Tulving's vector adapters (issue 35).

Usage::

    .venv/bin/python benchmarks/vector_engines.py --size 200000
    .venv/bin/python benchmarks/vector_engines.py --size 1000000 --cache /tmp/vec-cache
    .venv/bin/python benchmarks/vector_engines.py --size 30000 --vectors minilm.npy \\
        --query-vectors minilm-queries.npy      # real model vectors, if you have them

Same vectors for both (by default the hashing embedder's vectors of the realistic
synthetic corpus, as ``scale_1m.py`` stores them), same graph settings as the adapters
(M / connectivity 16; hnswlib ef_construction 200, usearch expansion_add 128; search
breadth 64), 2 threads to build. For each engine: build time, file size, a fresh
process's open and first query (seconds and its own peak RSS, VmHWM), query p50 at k=10
and recall@10 against exact cosine; for usearch also recall after rescoring twice k
candidates with the exact vectors (what the adapter does with storage's vectors).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

K, EF, THREADS = 10, 64, 2

OPEN = """
import json, sys, time
began = time.perf_counter()
import numpy as np
engine, path, dim = sys.argv[1], sys.argv[2], int(sys.argv[3])
query = np.ones(dim, dtype=np.float32) / dim ** 0.5
if engine == "usearch":
    from usearch.index import Index
    index = Index.restore(path, view=True)
    index.search(query, 10, threads=1)
else:
    import hnswlib
    index = hnswlib.Index(space="cosine", dim=dim)
    index.load_index(path)
    index.knn_query(query, k=10)
took = time.perf_counter() - began
with open("/proc/self/status") as status:
    peak = next(int(l.split()[1]) / 1024 for l in status if l.startswith("VmHWM:"))
print(json.dumps({"open_s": took, "peak_rss_mb": peak}))
"""


def hashing_vectors(size: int, queries: int, cache: Path | None) -> tuple[np.ndarray, np.ndarray]:
    if cache is not None and (cache / f"x{size}.npy").exists():
        return np.load(cache / f"x{size}.npy"), np.load(cache / f"q{queries}.npy")
    from _corpus import realistic_queries, realistic_texts

    from tulving.adapters.embedders.hashing import HashingEmbedder

    embedder = HashingEmbedder()
    texts = realistic_texts(size)
    x = np.concatenate([embedder.embed(texts[i:i + 20_000]) for i in range(0, size, 20_000)])
    q = np.stack([embedder.embed_query(t) for t in realistic_queries(queries)])
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        np.save(cache / f"x{size}.npy", x)
        np.save(cache / f"q{queries}.npy", q)
    return x.astype(np.float32), q.astype(np.float32)


def exact_top(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    best = np.zeros((len(q), K), dtype=np.int64)
    scores = np.full((len(q), K), -np.inf, dtype=np.float32)
    for start in range(0, len(x), 100_000):
        chunk = q @ x[start:start + 100_000].T
        merged = np.concatenate([scores, chunk], axis=1)
        ids = np.concatenate([best, np.arange(start, start + chunk.shape[1])[None, :].repeat(
            len(q), 0)], axis=1)
        order = np.argsort(-merged, axis=1)[:, :K]
        scores = np.take_along_axis(merged, order, 1)
        best = np.take_along_axis(ids, order, 1)
    return best


def recall(found: list[Any], truth: np.ndarray) -> float:
    return float(np.mean([len(set(map(int, f[:K])) & set(t.tolist())) / K
                          for f, t in zip(found, truth, strict=True)]))


def fresh_open(engine: str, path: Path, dim: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", OPEN, engine, str(path), str(dim)],
                         capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run_usearch(x: np.ndarray, q: np.ndarray, truth: np.ndarray, folder: Path) -> dict[str, Any]:
    from usearch.index import Index

    index = Index(ndim=x.shape[1], metric="cos", dtype="i8", connectivity=16,
                  expansion_add=128, expansion_search=EF)
    began = time.perf_counter()
    index.add(np.arange(len(x), dtype=np.uint64), x, threads=THREADS)
    build = time.perf_counter() - began
    path = folder / "engine.usearch"
    index.save(str(path))
    del index
    view = Index.restore(str(path), view=True)
    view.expansion_search = EF
    found, rescored, times = [], [], []
    for vector in q:
        began = time.perf_counter()
        matches = view.search(vector, 2 * K, threads=1)
        times.append(time.perf_counter() - began)
        keys = np.asarray(matches.keys, dtype=np.int64)
        found.append(keys[:K])
        rescored.append(keys[np.argsort(-(x[keys] @ vector))][:K])
    return {"build_s": build, "file_mb": path.stat().st_size / 1e6,
            "query_p50_ms": 1000 * statistics.median(times), "recall": recall(found, truth),
            "recall_rescored": recall(rescored, truth), **fresh_open("usearch", path, x.shape[1])}


def run_hnswlib(x: np.ndarray, q: np.ndarray, truth: np.ndarray, folder: Path) -> dict[str, Any]:
    import hnswlib

    index = hnswlib.Index(space="cosine", dim=x.shape[1])
    index.init_index(max_elements=len(x), M=16, ef_construction=200, random_seed=100)
    index.set_num_threads(THREADS)
    began = time.perf_counter()
    index.add_items(x, np.arange(len(x)))
    build = time.perf_counter() - began
    index.set_ef(EF)
    found, times = [], []
    for vector in q:
        began = time.perf_counter()
        labels, _ = index.knn_query(vector, k=K, num_threads=1)
        times.append(time.perf_counter() - began)
        found.append(labels[0])
    path = folder / "engine.hnsw"
    index.save_index(str(path))
    return {"build_s": build, "file_mb": path.stat().st_size / 1e6,
            "query_p50_ms": 1000 * statistics.median(times), "recall": recall(found, truth),
            "recall_rescored": None, **fresh_open("hnswlib", path, x.shape[1])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--cache", type=Path, default=None,
                        help="keep the generated vectors here (they take minutes at 1M)")
    parser.add_argument("--vectors", type=Path, default=None, help=".npy of unit vectors")
    parser.add_argument("--query-vectors", type=Path, default=None)
    parser.add_argument("--engines", nargs="+", default=["usearch", "hnswlib"])
    args = parser.parse_args()
    if args.vectors is not None:
        x = np.load(args.vectors).astype(np.float32)[:args.size]
        q = np.load(args.query_vectors).astype(np.float32)
        source = args.vectors.name
    else:
        x, q = hashing_vectors(args.size, args.queries, args.cache)
        source = "hashing embedder, realistic corpus"
    truth = exact_top(x, q)
    load = os.getloadavg()[0]
    rows = {}
    with tempfile.TemporaryDirectory(prefix="tulving-engines-") as folder:
        for engine in args.engines:
            run = run_usearch if engine == "usearch" else run_hnswlib
            rows[engine] = run(x, q, truth, Path(folder))
    print(f"{len(x):,} vectors ({source}, {x.shape[1]}-d), {len(q)} queries, k={K}, "
          f"search breadth {EF}, {THREADS} build threads; load average {load:.1f}")
    for engine, row in rows.items():
        rescored = (f" (rescored from 2k: {row['recall_rescored']:.3f})"
                    if row["recall_rescored"] is not None else "")
        print(f"  {engine:8s} build {row['build_s']:8.1f} s  file {row['file_mb']:8.1f} MB  "
              f"fresh open + first query {row['open_s']:6.2f} s at {row['peak_rss_mb']:6.0f} MB"
              f"  query p50 {row['query_p50_ms']:.2f} ms  recall@10 {row['recall']:.3f}"
              f"{rescored}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
