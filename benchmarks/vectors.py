"""Vector index speed: tulving's hnsw and exact adapters next to raw hnswlib and raw numpy.

Run: ``.venv/bin/python benchmarks/vectors.py [--sizes 10000 100000] [--queries 200]``

Same random unit 384-d vectors, same batches (1,000 per add call), same queries (k=10),
same hnswlib parameters (M=16, ef_construction=200, ef=64) in one run. Prints p50/p95 per
add batch and per query, recall@10 against brute force, and the ratio adapter/raw.
Also times allow-list queries (1% and 50% of the ids allowed) and persist/open of hnsw.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hnswlib  # noqa: E402

from tulving.adapters.vectors.exact import ExactIndex  # noqa: E402
from tulving.adapters.vectors.hnsw import HnswIndex  # noqa: E402

DIM, K, BATCH, M, EF_CONSTRUCTION, EF = 384, 10, 1000, 16, 200, 64


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return (time.perf_counter() - start) * 1000, out


def pct(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def report(label: str, add: list[float], query: list[float], recall: float) -> tuple[float, float]:
    a50, a95 = pct(add)
    q50, q95 = pct(query)
    print(
        f"  {label:<22} add/1k p50 {a50:8.2f} ms p95 {a95:8.2f} ms"
        f"   query p50 {q50:7.3f} ms p95 {q95:7.3f} ms   recall@10 {recall:.3f}"
    )
    return a50, q50


def recall_of(found: list[list[str]], truth: list[list[str]]) -> float:
    hits = sum(len(set(f) & set(t)) for f, t in zip(found, truth, strict=True))
    return hits / (K * len(truth))


def run(n: int, n_queries: int) -> None:
    rng = np.random.default_rng(n)
    data = rng.standard_normal((n, DIM)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    queries = rng.standard_normal((n_queries, DIM)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    ids = [f"e{i:07d}" for i in range(n)]
    truth_idx = np.argsort(-(queries @ data.T), axis=1)[:, :K]
    truth = [[ids[i] for i in row] for row in truth_idx]
    batches = [(start, min(start + BATCH, n)) for start in range(0, n, BATCH)]
    print(f"n = {n:,} vectors x {DIM} dims, {n_queries} queries, k = {K}")
    print("  (uniform random 384-d data has no neighbourhood structure: any ANN at ef=64 has")
    print("   low recall on it; compare adapter and raw hnswlib, which share the parameters)")

    # raw hnswlib
    raw = hnswlib.Index(space="cosine", dim=DIM)
    raw.init_index(max_elements=1024, ef_construction=EF_CONSTRUCTION, M=M, random_seed=100)
    raw_add = []
    for s, e in batches:
        if raw.get_current_count() + (e - s) > raw.get_max_elements():
            raw.resize_index(max(raw.get_current_count() + (e - s), 2 * raw.get_max_elements()))
        raw_add.append(timed(lambda s=s, e=e: raw.add_items(data[s:e], np.arange(s, e)))[0])
    raw.set_ef(EF)
    raw_q, raw_found = [], []
    for q in queries:
        ms, (labels, _) = timed(lambda q=q: raw.knn_query(q, k=K, num_threads=1))
        raw_q.append(ms)
        raw_found.append([ids[i] for i in labels[0]])
    ra, rq = report("raw hnswlib", raw_add, raw_q, recall_of(raw_found, truth))

    # tulving hnsw (in memory, then persisted to a temp dir)
    with tempfile.TemporaryDirectory() as tmp:
        ours = HnswIndex(
            str(Path(tmp) / "bench.db"), M=M, ef_construction=EF_CONSTRUCTION, ef_search=EF
        )
        ours.open(DIM)
        ours_add = [timed(lambda s=s, e=e: ours.add(ids[s:e], data[s:e]))[0] for s, e in batches]
        ours_q, ours_found = [], []
        for q in queries:
            ms, res = timed(lambda q=q: ours.query(q, K))
            ours_q.append(ms)
            ours_found.append([r.id for r in res])
        oa, oq = report("tulving hnsw", ours_add, ours_q, recall_of(ours_found, truth))
        print(f"  {'ratio hnsw/raw':<22} add x{oa / ra:.2f}   query x{oq / rq:.2f}")
        for fraction in (0.01, 0.5):
            allowed = set(ids[: max(K, int(n * fraction))])
            allow_q = [
                timed(lambda q=q, allowed=allowed: ours.query(q, K, allow=allowed))[0]
                for q in queries
            ]
            p50, p95 = pct(allow_q)
            print(
                f"  {'hnsw allow ' + format(fraction, '.0%'):<22} query p50 {p50:7.3f} ms"
                f" p95 {p95:7.3f} ms ({len(allowed):,} allowed)"
            )
        persist_ms, _ = timed(ours.persist)
        ours.close()
        reopened = HnswIndex(str(Path(tmp) / "bench.db"))
        open_ms, _ = timed(lambda: reopened.open(DIM))
        assert reopened.count() == n
        print(
            f"  {'hnsw cache':<22} persist {persist_ms:8.1f} ms   open (verify+load) "
            f"{open_ms:8.1f} ms"
        )

    # raw numpy brute force
    matrix = np.empty((0, DIM), np.float32)
    np_add = []
    for s, e in batches:
        ms, matrix = timed(lambda s=s, e=e, m=matrix: np.concatenate([m, data[s:e]]))
        np_add.append(ms)

    def np_query(q: np.ndarray) -> list[str]:
        scores = matrix @ q
        part = np.argpartition(-scores, K - 1)[:K]
        return [ids[i] for i in part[np.argsort(-scores[part])]]

    np_q, np_found = [], []
    for q in queries:
        ms, res = timed(lambda q=q: np_query(q))
        np_q.append(ms)
        np_found.append(res)
    na, nq = report("raw numpy", np_add, np_q, recall_of(np_found, truth))

    exact = ExactIndex()
    exact.open(DIM)
    ex_add = [timed(lambda s=s, e=e: exact.add(ids[s:e], data[s:e]))[0] for s, e in batches]
    ex_q, ex_found = [], []
    for q in queries:
        ms, res = timed(lambda q=q: exact.query(q, K))
        ex_q.append(ms)
        ex_found.append([r.id for r in res])
    ea, eq = report("tulving exact", ex_add, ex_q, recall_of(ex_found, truth))
    print(
        f"  {'ratio exact/numpy':<22} add x{ea / na:.2f}   query x{eq / nq:.2f}"
        "   (raw numpy add = np.concatenate, i.e. no amortised growth)"
    )
    allowed = set(ids[: n // 100])
    allow_q = [timed(lambda q=q: exact.query(q, K, allow=allowed))[0] for q in queries]
    p50, p95 = pct(allow_q)
    print(f"  {'exact allow 1%':<22} query p50 {p50:7.3f} ms p95 {p95:7.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    for n in args.sizes:
        run(n, args.queries)


if __name__ == "__main__":
    main()
