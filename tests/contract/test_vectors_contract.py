"""Every built-in vector index passes the shared VectorIndex contract."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
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


@pytest.mark.skipif(importlib.util.find_spec("usearch") is None, reason="usearch not installed")
class TestUsearchIndexOnDisk(VectorIndexContract):
    """int8 in the graph and no vector source to rescore from: scores are cosine within
    the quantization, and recall@10 on random 64-d vectors is 0.92 (0.95 rescored)."""

    persistent = True
    score_tolerance = 0.02
    min_recall = 0.9

    @pytest.fixture
    def make_index(self, tmp_path: Path) -> MakeIndex:
        from tulving.adapters.vectors.usearch_index import create

        def make(dimension: int, name: str = "default") -> Any:
            index = create(AdapterContext(location=str(tmp_path / f"{name}.db")),
                           overlay_max=64)
            index.open(dimension)
            return index

        return make


@pytest.mark.skipif(importlib.util.find_spec("usearch") is None, reason="usearch not installed")
class TestUsearchIndexReopenedAsView(VectorIndexContract):
    """The same suite on an index reopened from a saved file: a memory-mapped view with
    changes kept beside it (tombstones and the exact overlay), never loaded whole."""

    score_tolerance = 0.02
    min_recall = 0.9

    @pytest.fixture
    def make_index(self, tmp_path: Path) -> MakeIndex:
        from tulving.adapters.vectors.usearch_index import create

        def make(dimension: int, name: str = "default") -> Any:
            location = str(tmp_path / f"{name}.db")
            seed = create(AdapterContext(location=location))
            seed.open(dimension)
            seed.add(["seed-a", "seed-b"], np.eye(2, dimension, dtype=np.float32))
            seed.persist()
            index = create(AdapterContext(location=location), overlay_max=100_000)
            index.open(dimension)
            index.remove(["seed-a", "seed-b"])
            return index

        return make


@pytest.mark.skipif(importlib.util.find_spec("usearch") is None, reason="usearch not installed")
class TestUsearchIndexF16(VectorIndexContract):
    persistent = True
    score_tolerance = 2e-3

    @pytest.fixture
    def make_index(self, tmp_path: Path) -> MakeIndex:
        from tulving.adapters.vectors.usearch_index import create

        def make(dimension: int, name: str = "default") -> Any:
            index = create(AdapterContext(location=str(tmp_path / f"{name}.db")), dtype="f16")
            index.open(dimension)
            return index

        return make


@pytest.mark.skipif(importlib.util.find_spec("usearch") is None, reason="usearch not installed")
class TestUsearchIndexRescoredFromStorage(VectorIndexContract):
    """As a Memory wires it: the int8 graph navigates, and scores come from the vectors
    storage holds (here a dict that holds what was added, as storage would)."""

    persistent = True

    @pytest.fixture
    def make_index(self, tmp_path: Path) -> MakeIndex:
        from tulving.adapters.vectors.usearch_index import UsearchIndex

        stored: dict[str, dict[str, np.ndarray]] = {}

        class Mirrored(UsearchIndex):
            def __init__(self, name: str) -> None:
                self.stored = stored.setdefault(name, {})
                super().__init__(str(tmp_path / f"{name}.db"), overlay_max=64,
                                 vector_source=lambda ids: {i: self.stored[i] for i in ids
                                                            if i in self.stored})

            def add(self, ids: Any, vectors: Any) -> None:
                super().add(ids, vectors)
                matrix = np.asarray(vectors, dtype=np.float32).reshape(len(list(ids)), -1)
                self.stored.update(zip(ids, matrix, strict=True))

        def make(dimension: int, name: str = "default") -> Any:
            index = Mirrored(name)
            index.open(dimension)
            return index

        return make
