"""PostgreSQL-specific behaviour beyond the storage contract suite."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import psycopg
import pytest

from contract_tests.builders import ALICE, Clockwork, make_entry
from tulving.adapters.storage.postgres import create
from tulving.adapters.storage.postgres.connection import redact
from tulving.adapters.storage.postgres.schema import MIGRATIONS
from tulving.domain.errors import ConfigError, StorageError, ValidationError
from tulving.domain.query import EntryFilter
from tulving.plugins.registry import AdapterContext

pytestmark = pytest.mark.postgres

PARTS = ALICE.visible_partitions()


def unit(seed: int, dim: int = 8) -> Any:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def test_location_never_shows_the_password(pg_url: str, make_pg_storage: Any) -> None:
    store = make_pg_storage()
    assert store.capabilities.multi_process_writers and store.capabilities.native_vectors
    assert store.location == redact(pg_url) and "tulving:tulving@" not in store.location
    assert redact("postgresql://u:s3cret@h:5/db?password=x&sslmode=require") == (
        "postgresql://u@h:5/db?sslmode=require"
    )
    assert "s3cret" not in repr(store.stats())


def test_factory_rejects_bad_configuration() -> None:
    with pytest.raises(ConfigError):
        create(AdapterContext(location="/tmp/file.db"))
    with pytest.raises(ConfigError):
        create(AdapterContext(location="postgresql://u@127.0.0.1/db"), turbo=True)
    with pytest.raises(ConfigError):
        create(AdapterContext(location="postgresql://u@127.0.0.1/db"), min_size=5, max_size=2)


def test_unreachable_server_is_a_storage_error() -> None:
    store = create(AdapterContext(location="postgresql://u:p@127.0.0.1:1/db"))
    with pytest.raises(StorageError) as info:
        store.open()
    assert "p@" not in str(info.value)


def test_migrations_are_recorded_and_concurrent_opens_are_safe(pg_url: str, pg_schema: str) -> None:
    stores = [create(AdapterContext(location=pg_url), schema=pg_schema) for _ in range(4)]
    errors: list[BaseException] = []

    def open_one(s: Any) -> None:
        try:
            s.open()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors, errors
        assert stores[0].get_meta("schema_version") == str(len(MIGRATIONS))
    finally:
        for s in stores:
            s.close()


def test_a_newer_schema_is_refused(pg_url: str, make_pg_storage: Any, pg_schema: str) -> None:
    store = make_pg_storage()
    store.set_meta("schema_version", str(len(MIGRATIONS) + 1))
    with pytest.raises(StorageError, match="newer"):
        create(AdapterContext(location=pg_url), schema=pg_schema).open()


def test_schemas_isolate_stores(pg_url: str, make_pg_storage: Any) -> None:
    clock = Clockwork()
    mine = make_pg_storage()
    other = make_pg_storage(schema=mine.schema + "_other")
    try:
        mine.write(make_entry(clock, "only in mine"))
        assert other.count(EntryFilter(partitions=PARTS)) == 0
    finally:
        other.close()
        from tulving.testing.postgres import drop_schema

        drop_schema(pg_url, mine.schema + "_other")


def test_nested_transactions_join_and_roll_back_together(make_pg_storage: Any) -> None:
    store, clock = make_pg_storage(), Clockwork()
    a, b = make_entry(clock, "outer"), make_entry(clock, "inner")
    with pytest.raises(RuntimeError), store.transaction():
        store.write(a)
        with store.transaction():
            store.write(b)
        raise RuntimeError("after the inner block committed nothing yet")
    assert store.get(a.id) is None and store.get(b.id) is None


def test_open_transaction_is_invisible_to_other_threads(make_pg_storage: Any) -> None:
    store, clock = make_pg_storage(), Clockwork()
    e = make_entry(clock, "pending")
    seen: list[object] = []
    with store.transaction():
        store.write(e)
        assert store.get(e.id) is not None  # this thread reads its own transaction
        t = threading.Thread(target=lambda: seen.append(store.get(e.id)))
        t.start()
        t.join()
    assert seen == [None]
    assert store.get(e.id) is not None


def test_vector_dimension_is_fixed_by_the_first_write(make_pg_storage: Any) -> None:
    store, clock = make_pg_storage(), Clockwork()
    store.write(make_entry(clock, "eight"), unit(1, 8))
    bad = make_entry(clock, "sixteen")
    with pytest.raises(ValidationError):
        store.write(bad, unit(2, 16))
    assert store.get(bad.id) is None
    store.clear_vectors()  # a new model's space may have another dimension
    store.write(bad, unit(2, 16))
    assert store.vectors_for([bad.id])[bad.id].shape == (16,)


def test_lexical_search_uses_the_gin_index_and_ts_rank(pg_url: str, make_pg_storage: Any) -> None:
    store, clock = make_pg_storage(), Clockwork()
    store.write_many(
        [(make_entry(clock, f"note {i} about kiwis and apples"), None) for i in range(50)]
    )
    hits = store.lexical_search(["kiwi"], EntryFilter(partitions=PARTS), 100)
    assert len(hits) == 50 and all(h.score > 0 for h in hits)
    with psycopg.connect(pg_url) as conn:
        conn.execute(f"SET search_path TO {store.schema}, public")
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN SELECT id FROM entries WHERE search_tsv @@ to_tsquery('english', 'kiwi')"
            ).fetchall()
        )
    assert "entries_fts" in plan


def test_touch_in_opposite_orders_from_threads_adds_up(make_pg_storage: Any) -> None:
    store, clock = make_pg_storage(), Clockwork()
    entries = [make_entry(clock, f"e{i}") for i in range(20)]
    store.write_many([(e, None) for e in entries])
    ids = [e.id for e in entries]
    at = clock.tick()

    def work(n: int) -> None:
        for _ in range(30):
            store.touch(ids if n % 2 else ids[::-1], at)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert all(e.access_count == 120 for e in store.get_many(ids))


def test_stats_and_maintenance(make_pg_storage: Any) -> None:
    store, clock = make_pg_storage(), Clockwork()
    store.write(make_entry(clock), unit(3))
    stats = store.stats()
    assert stats["engine"] == "postgresql" and stats["rows"] == 1 and stats["vectors"] == 1
    assert stats["bytes"] > 0 and stats["vector_dimension"] == 8
    assert store.maintenance("checkpoint")["ok"] is True
    assert store.maintenance("integrity") == {"action": "integrity", "ok": True, "problems": []}
