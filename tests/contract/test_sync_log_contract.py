"""The sync log contract suite (``contract_tests.sync_log``) against every built-in store
that keeps a sync log: in memory, SQLite, SQLite encrypted with SQLCipher, PostgreSQL."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from contract_tests.sync_log import SyncLogContract
from tulving.adapters.storage.memory import InMemoryStorage
from tulving.adapters.storage.sqlite import SQLiteStorage
from tulving.domain.encryption_key import EncryptionKey
from tulving.ports.storage import Storage, SyncLog


class TestInMemorySyncLog(SyncLogContract):
    @pytest.fixture
    def make_storage(self) -> Callable[..., Storage]:
        return lambda name="default": InMemoryStorage()


class TestSQLiteSyncLog(SyncLogContract):
    @pytest.fixture
    def make_storage(self, tmp_path: Path) -> Callable[..., Storage]:
        return lambda name="default": SQLiteStorage(str(tmp_path / f"{name}.db"))


@pytest.mark.skipif(importlib.util.find_spec("sqlcipher3") is None,
                    reason="the encryption extra is missing")
class TestEncryptedSQLiteSyncLog(SyncLogContract):
    KEY = EncryptionKey(b"sync log contract passphrase", source="test")

    @pytest.fixture
    def make_storage(self, tmp_path: Path) -> Callable[..., Storage]:
        return lambda name="default": SQLiteStorage(str(tmp_path / f"{name}.db"),
                                                    encryption=self.KEY)

    def test_deltas_are_encrypted_at_rest(self, make_storage: Callable[..., Storage],
                                          tmp_path: Path) -> None:
        """A delta's bytes, its device and the reason of its quarantine are in no file
        beside the store, open (WAL) or closed."""
        marker = b"synclogmarker4417"
        store = make_storage("sealed")
        store.open()
        assert isinstance(store, SyncLog)
        at = datetime(2026, 11, 26, tzinfo=UTC)
        store.sync_append("u1\x1f", "ab12", marker * 50, e2e=False, at=at)
        with store.sync_merger("u1\x1f"):
            store.sync_settle("u1\x1f", 1, "quarantined", marker.decode())
        for closed in (False, True):
            if closed:
                store.close()
            files = [p for p in tmp_path.rglob("*") if p.is_file()]
            assert any(p.name.startswith("sealed.db") for p in files)
            assert [str(p) for p in files if marker in p.read_bytes()] == []


@pytest.mark.postgres
class TestPostgresSyncLog(SyncLogContract):
    @pytest.fixture
    def make_storage(self) -> Iterator[Callable[..., Storage]]:
        from tulving.adapters.storage.postgres import create
        from tulving.plugins.registry import AdapterContext
        from tulving.testing.postgres import drop_schema, new_schema_name, require_server

        url = require_server()
        base = new_schema_name("synclog")
        made: list[str] = []

        def make(name: str = "default") -> Storage:
            schema = f"{base}_{name}"
            made.append(schema)
            store: Storage = create(AdapterContext(location=url), schema=schema, max_size=12)
            return store

        yield make
        for schema in set(made):
            drop_schema(url, schema)
