"""pgvector-specific behaviour: shared table, membership flag, HNSW plans, cheap rebuild."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
import pytest

from contract_tests.builders import ALICE, Clockwork, make_entry
from tulving.adapters.storage.memory import InMemoryStorage
from tulving.adapters.vectors.pgvector import PgVectorIndex, create
from tulving.domain.errors import ConfigError, VectorIndexError
from tulving.domain.types import ArchiveReason
from tulving.plugins.registry import AdapterContext
from tulving.ports.storage import Archival

pytestmark = pytest.mark.postgres


def vectors(n: int, dim: int, seed: int = 0) -> Any:
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_needs_the_postgres_storage() -> None:
    with pytest.raises(ConfigError, match="postgres"):
        create(AdapterContext(storage=InMemoryStorage()))
    with pytest.raises(ConfigError):
        create(AdapterContext(storage=None))


def test_index_follows_storage_and_remove_keeps_the_stored_vector(make_pg_storage: Any) -> None:
    store, clock = make_pg_storage(), Clockwork()
    index = create(AdapterContext(storage=store))
    index.open(8)
    entries = [make_entry(clock, f"e{i}") for i in range(5)]
    vecs = vectors(5, 8)
    store.write_many([(e, vecs[i]) for i, e in enumerate(entries)])
    ids = [e.id for e in entries]
    assert index.ids() == set(ids)  # written by storage, indexed at once (any process)
    assert index.query(vecs[2], 1)[0].id == ids[2]

    index.remove([ids[0]])
    assert ids[0] not in index.ids()
    np.testing.assert_array_equal(store.vectors_for([ids[0]])[ids[0]], vecs[0])

    store.archive([Archival(ids[1], ArchiveReason.EVICTED, clock.tick())])
    assert ids[1] not in index.ids()
    store.unarchive([ids[1]], clock.tick())
    assert ids[1] in index.ids()

    superseding = make_entry(clock, "v2", key="k")
    store.write(make_entry(clock, "v1", key="k"), vecs[3])
    first = store.active_by_key(ALICE.visible_partitions(), "k")
    store.write(superseding, vecs[4])
    assert first is not None and first.id not in index.ids() and superseding.id in index.ids()


def test_unfiltered_queries_use_the_hnsw_index(pg_url: str, make_pg_storage: Any) -> None:
    store = make_pg_storage()
    index = create(AdapterContext(storage=store))
    index.open(32)
    n = 1500
    data = vectors(n, 32, seed=1)
    index.add([f"v{i}" for i in range(n)], data)
    with psycopg.connect(pg_url) as conn:
        conn.execute(f"SET search_path TO {store.schema}, public")
        conn.execute("ANALYZE embeddings")
        conn.execute("SET enable_seqscan = off")  # small table: ask "can it use HNSW?"
        q = "[" + ",".join(str(float(x)) for x in data[0]) + "]"
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN SELECT entry_id FROM embeddings WHERE indexed "
                "ORDER BY vector <=> %s::vector LIMIT 10",
                (q,),
            ).fetchall()
        )
    assert "embeddings_hnsw" in plan
    assert index.query(data[7], 1)[0].id == "v7"


def test_rebuild_from_storage_rewrites_nothing(pg_url: str, make_pg_storage: Any) -> None:
    store = make_pg_storage()
    index = create(AdapterContext(storage=store))
    index.open(16)
    ids, data = [f"r{i}" for i in range(500)], vectors(500, 16, seed=2)
    index.add(ids, data)

    def versions() -> dict[str, str]:
        with psycopg.connect(pg_url) as conn:
            conn.execute(f"SET search_path TO {store.schema}, public")
            return dict(conn.execute("SELECT entry_id, xmin::text FROM embeddings").fetchall())

    before = versions()
    index.rebuild(zip(ids, data, strict=True), len(ids))
    assert versions() == before  # no row was rewritten, so no HNSW insert happened
    index.rebuild(zip(ids[:100], data[:100], strict=True), 100)
    assert index.count() == 100


def test_a_stored_dimension_mismatch_reads_empty_until_cleared(make_pg_storage: Any) -> None:
    store, clock = make_pg_storage(), Clockwork()
    e = make_entry(clock, "old model")
    store.write(e, vectors(1, 8)[0])
    index = PgVectorIndex(store)
    index.open(16)  # the embedder changed; the store still holds 8-d vectors
    assert index.count() == 0 and index.ids() == set() and index.query(vectors(1, 16)[0], 3) == []
    with pytest.raises(VectorIndexError):
        index.add(["x"], vectors(1, 16))
    store.clear_vectors()
    index.add(["x"], vectors(1, 16))
    assert index.ids() == {"x"}
