"""A start that fails releases everything it opened (issue 46): the store and the vector
index, not the store alone.

The start fails where it really can after the index opened: the entries stored without
an embedder are embedded at startup (``embed_missing``), and the embedding service (the
OpenAI-compatible server on 127.0.0.1, reached by the real client) refuses. Before the
bootstrap, ``startup`` closed the store and left the index open.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tulving import Memory
from tulving.adapters.embedders.openai import create as openai_embedder
from tulving.adapters.storage.sqlite import SQLiteStorage
from tulving.adapters.vectors.exact import ExactIndex
from tulving.domain.errors import EmbedderError, TulvingError, VectorIndexError
from tulving.plugins.registry import AdapterContext
from tulving.testing.openai_server import OpenAIStubServer

KEY_ENV = "TULVING_TEST_STARTUP_KEY"


def test_a_failed_start_closes_the_store_and_the_index(
        tmp_path: Path, server: OpenAIStubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-startup-0123456789")
    path = str(tmp_path / "m.db")
    with Memory(path, agent_id="a", embedder=None) as m:  # stored without vectors
        m.store("the staging cluster lives in Frankfurt", type="FACT")
    embedder = openai_embedder(AdapterContext(), model="stub-embed", dimensions=16,
                               base_url=server.base_url, api_key_env=KEY_ENV, max_retries=0,
                               timeout=2.0)
    storage = SQLiteStorage(path)
    index = ExactIndex()
    server.fail_next(5, status=400, path="/embeddings")
    memory = Memory(path, agent_id="a", embedder=embedder, storage=storage, vectors=index)
    with pytest.raises(EmbedderError):
        memory.startup()
    assert server.requests_to("/embeddings")  # it failed embedding, after the index opened
    with pytest.raises(VectorIndexError, match="not open"):
        index.add(["x"], np.ones((1, 16), dtype=np.float32))
    with pytest.raises(TulvingError):  # the store's connection is gone too
        storage.get_meta("embedding_model_id")
    assert memory.state == "not started"
    # nothing is left holding the file: the next start (the service back) succeeds
    server.clear_faults()
    with Memory(path, agent_id="a", embedder=embedder, vectors="exact") as again:
        assert again.search("staging cluster", 1, mode="semantic")
