"""Ingest and search at scale: Tulving on PostgreSQL + pgvector next to SQLite + hnswlib.

Same entries, same vectors (hashing embedder, 384-d), same queries, same run. Prints:
ingest entries/s (storage write_many batches of 500 with vectors; PostgreSQL loads
first and then builds its HNSW index, which is counted; "live" is the rate of 2,000 more
entries written into the full store with every index maintained), lexical search p50/p95 (top 10) and vector search p50/p95 (top 10, with and
without an allow-list of half the ids), plus the raw engines underneath (plain hnswlib
knn_query, a plain pgvector ``ORDER BY <=> LIMIT`` through psycopg) as ratios.

    .venv/bin/python benchmarks/postgres_scale.py            # 100k entries
    .venv/bin/python benchmarks/postgres_scale.py --n 20000  # quicker

Uses TULVING_TEST_PG_URL when set, else starts a throwaway server via .ci/postgres.sh.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contract_tests._fixtures import realistic_sentences
from tulving.domain.entry import MemoryEntry, content_hash
from tulving.domain.identity import Identity
from tulving.domain.ids import new_id
from tulving.domain.lexical import query_terms
from tulving.domain.query import EntryFilter
from tulving.domain.types import MemoryType, Scope
from tulving.plugins.registry import AdapterContext
from tulving.testing import postgres as pgtest

IDENTITY = Identity(agent_id="bench", user_id="u", workspace_id="w")
PARTITION = IDENTITY.partition_for(Scope.AGENT, None)
FLT = EntryFilter(partitions=IDENTITY.visible_partitions())
BATCH = 500
VOCAB = [
    f"{a}{b}"
    for a in ("zor", "bel", "kin", "mav", "tup", "rix", "dol", "sen")
    for b in ("ak", "eth", "ion", "ux", "ora", "ist", "amb", "elo", "ipp", "und")
] * 1


def make_corpus(
    n: int, seed: int = 7, start: datetime = datetime(2026, 1, 1, tzinfo=UTC)
) -> tuple[list[MemoryEntry], list[str]]:
    """Templated agent-memory sentences plus Zipf-distributed rare words, so lexical
    queries match anything from a handful to thousands of entries."""
    rng = random.Random(seed)
    words = [f"{w}{i}" for i in range(200) for w in VOCAB[:10]]  # 2000 pseudo-words
    weights = [1.0 / (r + 1) for r in range(len(words))]
    base = realistic_sentences(n, seed=seed)
    entries = []
    for i, text in enumerate(base):
        extra = " ".join(rng.choices(words, weights, k=3))
        content = f"{text} Ticket {extra}."
        at = start + timedelta(milliseconds=i)
        entries.append(
            MemoryEntry(
                id=new_id(at),
                content=content,
                type=MemoryType.FACT,
                agent_id=IDENTITY.agent_id,
                user_id=IDENTITY.user_id,
                workspace_id=IDENTITY.workspace_id,
                scope=Scope.AGENT,
                partition=PARTITION,
                created_at=at,
                updated_at=at,
                valid_from=at,
                last_accessed_at=at,
                content_hash=content_hash(content),
            )
        )
    queries = []
    for _ in range(200):
        queries.append(
            " ".join(rng.choices(words[20:400], k=2))
            + " "
            + rng.choice(
                ["database latency", "backup job", "authentication", "refunds", "cluster upgrade"]
            )
        )
    return entries, queries


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(fn: Callable[[Any], Any], inputs: list[Any]) -> tuple[float, float]:
    for item in inputs[:5]:
        fn(item)  # warm caches and plans
    samples = []
    for item in inputs:
        t = time.perf_counter()
        fn(item)
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples), pct(samples, 0.95)


def ingest(store: Any, index: Any | None, entries: list[MemoryEntry], vecs: np.ndarray) -> float:
    t = time.perf_counter()
    for start in range(0, len(entries), BATCH):
        chunk = entries[start : start + BATCH]
        rows = vecs[start : start + BATCH]
        store.write_many([(e, rows[i]) for i, e in enumerate(chunk)])
        if index is not None:
            index.add([e.id for e in chunk], rows)
    return len(entries) / (time.perf_counter() - t)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    args = parser.parse_args()

    url = pgtest.server_url()
    if url is None:
        print(f"no PostgreSQL server: {pgtest.unavailable_reason()}", file=sys.stderr)
        return 1

    from tulving.adapters.embedders.hashing import create as hashing
    from tulving.adapters.storage.postgres import create as pg_storage
    from tulving.adapters.storage.sqlite import SQLiteStorage
    from tulving.adapters.vectors.hnsw import create as hnsw_index
    from tulving.adapters.vectors.pgvector import create as pg_index

    n = args.n
    print(f"corpus: {n} entries, hashing embedder 384-d, batches of {BATCH}")
    entries, queries = make_corpus(n)
    embedder = hashing(None)
    t = time.perf_counter()
    vecs = embedder.embed([e.content for e in entries])
    print(f"embedding (hashing, not part of ingest): {n / (time.perf_counter() - t):,.0f}/s")
    extra, _ = make_corpus(2000, seed=99, start=datetime(2026, 6, 1, tzinfo=UTC))
    extra_vecs = embedder.embed([e.content for e in extra])
    qvecs = [embedder.embed_query(q) for q in queries]
    terms = [query_terms(q) for q in queries]
    rng = np.random.default_rng(3)
    allow = set(rng.choice([e.id for e in entries], size=n // 2, replace=False).tolist())

    results: dict[str, dict[str, float]] = {}
    schema = pgtest.new_schema_name("bench")
    tmp = tempfile.mkdtemp(prefix="tulving-bench-")
    try:
        # --- PostgreSQL + pgvector ---------------------------------------------------
        pg = pg_storage(AdapterContext(location=url), schema=schema, max_size=4)
        pg.open()
        t = time.perf_counter()
        ingest(pg, None, entries, vecs)
        load_s = time.perf_counter() - t
        t = time.perf_counter()
        pgi = pg_index(AdapterContext(storage=pg))
        pgi.open(embedder.dimension)  # builds the HNSW index over what is stored
        build_s = time.perf_counter() - t
        with pg.pool.connection() as conn:
            conn.execute("ANALYZE")
        r = results["postgres+pgvector"] = {"ingest/s": n / (load_s + build_s)}
        print(f"postgres: load {load_s:.1f} s ({n / load_s:,.0f}/s), HNSW build {build_s:.1f} s")
        r["live ingest/s"] = ingest(pg, None, extra, extra_vecs)  # storage feeds HNSW
        r["lexical p50"], r["lexical p95"] = timed(lambda ts: pg.lexical_search(ts, FLT, 10), terms)
        r["vector p50"], r["vector p95"] = timed(lambda q: pgi.query(q, 10), qvecs)
        r["vector+allow p50"], r["vector+allow p95"] = timed(
            lambda q: pgi.query(q, 10, allow=allow), qvecs[:50]
        )
        raw_sql = "SELECT entry_id FROM embeddings WHERE indexed ORDER BY vector <=> %b LIMIT 10"

        def raw_pg(q: Any) -> Any:
            with pg.pool.connection() as conn:
                return conn.execute(raw_sql, (q,)).fetchall()

        raw = results["raw pgvector SQL"] = {}
        raw["vector p50"], raw["vector p95"] = timed(raw_pg, qvecs)
        r["bytes"] = float(pg.stats()["bytes"])
        pg.close()

        # --- SQLite + hnswlib --------------------------------------------------------
        path = os.path.join(tmp, "bench.db")
        lite = SQLiteStorage(path)
        lite.open()
        hi = hnsw_index(AdapterContext(location=path))
        hi.open(embedder.dimension)
        rate = ingest(lite, hi, entries, vecs)
        s = results["sqlite+hnswlib"] = {"ingest/s": rate}
        s["live ingest/s"] = ingest(lite, hi, extra, extra_vecs)
        s["lexical p50"], s["lexical p95"] = timed(
            lambda ts: lite.lexical_search(ts, FLT, 10), terms
        )
        s["vector p50"], s["vector p95"] = timed(lambda q: hi.query(q, 10), qvecs)
        s["vector+allow p50"], s["vector+allow p95"] = timed(
            lambda q: hi.query(q, 10, allow=allow), qvecs[:50]
        )
        s["bytes"] = float(lite.stats()["bytes"])
        lite.close()

        import hnswlib

        plain = hnswlib.Index(space="cosine", dim=embedder.dimension)
        plain.init_index(max_elements=n, ef_construction=200, M=16)
        t = time.perf_counter()
        plain.add_items(vecs, np.arange(n))
        raw_h = results["raw hnswlib"] = {"ingest/s": n / (time.perf_counter() - t)}
        plain.set_ef(50)
        raw_h["vector p50"], raw_h["vector p95"] = timed(lambda q: plain.knn_query(q, k=10), qvecs)
    finally:
        pgtest.drop_schema(url, schema)

    cols = [
        "ingest/s",
        "live ingest/s",
        "lexical p50",
        "lexical p95",
        "vector p50",
        "vector p95",
        "vector+allow p50",
        "vector+allow p95",
    ]
    print(f"\n{'engine':<18}" + "".join(f"{c:>17}" for c in cols))
    for name, row in results.items():
        cells = []
        for c in cols:
            v = row.get(c)
            cells.append(
                f"{'-':>17}"
                if v is None
                else (f"{v:>17,.0f}" if c.endswith("/s") else f"{v:>14.2f} ms")
            )
        print(f"{name:<18}" + "".join(cells))
    p, s = results["postgres+pgvector"], results["sqlite+hnswlib"]
    print(
        "\nratios (postgres / sqlite): "
        f"ingest {p['ingest/s'] / s['ingest/s']:.2f}x throughput, "
        f"live ingest {p['live ingest/s'] / s['live ingest/s']:.2f}x, "
        f"lexical p50 {p['lexical p50'] / s['lexical p50']:.2f}x time, "
        f"vector p50 {p['vector p50'] / s['vector p50']:.2f}x time"
    )
    print(
        "overhead vs raw engine: "
        f"pgvector adapter p50 {p['vector p50'] / raw['vector p50']:.2f}x raw SQL, "
        f"hnsw adapter p50 {s['vector p50'] / raw_h['vector p50']:.2f}x plain hnswlib"
    )
    print(
        f"size: postgres {p['bytes'] / 1e6:,.0f} MB, sqlite {s['bytes'] / 1e6:,.0f} MB "
        "(sqlite figure excludes the .hnsw cache, written only on persist)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
