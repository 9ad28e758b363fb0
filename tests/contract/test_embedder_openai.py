"""The embedder contract run against the openai adapter talking to the stub server.

The stub's vectors are feature-hashed words, so the suite runs with ``semantic = False``
(shared words must still rank higher; paraphrases without shared words are not expected).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from contract_tests.embedder import EmbedderContract
from tulving.adapters.embedders.openai import create
from tulving.plugins.registry import AdapterContext
from tulving.testing.openai_server import OpenAIStubServer

KEY_ENV = "TULVING_TEST_EMBED_CONTRACT_KEY"


def _embedder(server: OpenAIStubServer, **options: Any) -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, "sk-contract")
        return create(
            AdapterContext(),
            model="stub-embed",
            base_url=server.base_url,
            api_key_env=KEY_ENV,
            timeout=5.0,
            max_retries=1,
            retry_backoff=0.01,
            **options,
        )


@pytest.fixture(scope="module")
def plain_embedder() -> Iterator[Any]:
    with OpenAIStubServer(default_dimension=48) as server:
        yield _embedder(server, batch_size=32)


@pytest.fixture(scope="module")
def shortened_embedder() -> Iterator[Any]:
    with OpenAIStubServer(normalize_embeddings=True) as server:
        yield _embedder(server, dimensions=24, batch_size=64)


class TestOpenAIEmbedder(EmbedderContract):
    semantic = False

    @pytest.fixture
    def embedder(self, plain_embedder: Any) -> Any:
        return plain_embedder


class TestOpenAIEmbedderWithDimensions(EmbedderContract):
    """``dimensions`` set, and a server that already normalises (as OpenAI does)."""

    semantic = False

    @pytest.fixture
    def embedder(self, shortened_embedder: Any) -> Any:
        return shortened_embedder
