"""The storage contract suite run against the built-in SQLite and in-memory adapters."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from contract_tests.governance import BackChannel
from contract_tests.storage import StorageContract
from tulving.adapters.storage.memory import InMemoryStorage
from tulving.adapters.storage.sqlite import SQLiteStorage
from tulving.ports.storage import Storage

from .back_channels import InMemoryBackChannel, SQLiteBackChannel


class TestSQLiteStorage(StorageContract):
    @pytest.fixture
    def make_storage(self, tmp_path: Path) -> Callable[..., Storage]:
        def make(name: str = "default") -> Storage:
            return SQLiteStorage(str(tmp_path / f"{name}.db"))

        return make

    @pytest.fixture
    def open_read_only(self, tmp_path: Path) -> Callable[..., Storage]:
        return lambda name="default": SQLiteStorage(str(tmp_path / f"{name}.db"),
                                                    read_only=True)

    @pytest.fixture
    def reopen_with_key(self, tmp_path: Path) -> Callable[..., Storage]:
        return lambda name, key: SQLiteStorage(str(tmp_path / f"{name}.db"), encryption=key)

    @pytest.fixture
    def back_channel(self, storage: Storage) -> BackChannel:
        assert isinstance(storage, SQLiteStorage)
        return SQLiteBackChannel(storage.path)


class TestSQLiteStorageFullTextMirror(TestSQLiteStorage):
    """The same suite with full-text search answered by the in-memory mirror of the FTS5
    index from the first row (by default it takes over from 5,000 rows)."""

    @pytest.fixture
    def make_storage(self, tmp_path: Path) -> Callable[..., Storage]:
        def make(name: str = "default") -> Storage:
            return SQLiteStorage(str(tmp_path / f"{name}.db"), fulltext_mirror_from=0)

        return make


class TestInMemoryStorage(StorageContract):
    @pytest.fixture
    def make_storage(self) -> Callable[..., Storage]:
        return lambda name="default": InMemoryStorage()

    @pytest.fixture
    def back_channel(self, storage: Storage) -> BackChannel:
        assert isinstance(storage, InMemoryStorage)
        return InMemoryBackChannel(storage)
