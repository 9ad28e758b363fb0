"""Every built-in vector index passes the shared VectorIndex contract."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from contract_tests.vectors import MakeIndex, VectorIndexContract
from tulving.adapters.vectors.exact import ExactIndex
from tulving.plugins.registry import AdapterContext


class TestExactIndex(VectorIndexContract):
    @pytest.fixture
    def make_index(self) -> MakeIndex:
        def make(dimension: int, name: str = "default") -> Any:
            index = ExactIndex(initial_capacity=16)
            index.open(dimension)
            return index

        return make


@pytest.mark.skipif(importlib.util.find_spec("hnswlib") is None, reason="hnswlib not installed")
class TestHnswIndexOnDisk(VectorIndexContract):
    persistent = True

    @pytest.fixture
    def make_index(self, tmp_path: Path) -> MakeIndex:
        from tulving.adapters.vectors.hnsw import create

        def make(dimension: int, name: str = "default") -> Any:
            index = create(AdapterContext(location=str(tmp_path / f"{name}.db")))
            index.open(dimension)
            return index

        return make


@pytest.mark.skipif(importlib.util.find_spec("hnswlib") is None, reason="hnswlib not installed")
class TestHnswIndexInMemory(VectorIndexContract):
    @pytest.fixture
    def make_index(self) -> MakeIndex:
        from tulving.adapters.vectors.hnsw import create

        def make(dimension: int, name: str = "default") -> Any:
            index = create(AdapterContext(location=":memory:"), initial_capacity=64)
            index.open(dimension)
            return index

        return make


@pytest.mark.skipif(importlib.util.find_spec("hnswlib") is None
                    or importlib.util.find_spec("cryptography") is None,
                    reason="hnswlib or the encryption extra not installed")
class TestHnswIndexSealed(VectorIndexContract):
    """The cache of an encrypted store: one AES-GCM sealed file (see hnsw_sealed)."""

    persistent = True

    @pytest.fixture
    def make_index(self, tmp_path: Path) -> MakeIndex:
        from tulving.adapters.vectors.hnsw import create
        from tulving.domain.encryption_key import EncryptionKey

        key = EncryptionKey(b"vector contract passphrase", source="test")

        def make(dimension: int, name: str = "default") -> Any:
            index = create(AdapterContext(location=str(tmp_path / f"{name}.db"),
                                          encryption=key))
            index.open(dimension)
            return index

        return make
