"""The ``index`` configuration: your embeddings score and rank, Tulving's serve every door.

What LangGraph's own tests do not check and a user relies on: the vectors are kept with
the item (a reopened store ranks without embedding the items again), an embedding that
fails or returns the wrong shape writes nothing, an async-only ``embed`` works through
the async API, a setting LangGraph does not define is refused, and what a store with your
embeddings wrote is an ordinary memory that another process finds through the CLI.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import PutOp
from langgraph.store.tulving import TulvingStore
from letter_embeddings import LetterEmbeddings

from tulving import ValidationError


class Counting(LetterEmbeddings):
    """LetterEmbeddings that counts the texts it embeds for documents."""

    def __init__(self) -> None:
        super().__init__(dims=64)
        self.documents = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += len(texts)
        return super().embed_documents(texts)


def _store(memory: Any, embed: Any, **index: Any) -> TulvingStore:
    return TulvingStore(memory, index={"embed": embed, **index})


def test_vectors_are_kept_with_the_item(make_memory: Callable[..., Any]) -> None:
    embed = Counting()
    store = _store(make_memory("kept.db"), embed, fields=["text", "tags[*]"])
    store.put(("n",), "a", {"text": "red apple", "tags": ["fruit", "autumn"]})
    store.put(("n",), "b", {"text": "blue car", "tags": ["vehicle"]})
    assert embed.documents == 5                        # one vector per selected text
    store.memory.close()
    again = Counting()
    reopened = _store(make_memory("kept.db"), again, fields=["text"])
    ranked = reopened.search(("n",), query="vehicle")
    assert [r.key for r in ranked] == ["b", "a"]       # b's "vehicle" tag scores 1.0
    assert ranked[0].score == pytest.approx(1.0, abs=1e-5)
    assert again.documents == 0                        # nothing embedded again


def test_an_embedding_that_fails_writes_nothing(make_memory: Callable[..., Any]) -> None:
    def broken(texts: list[str]) -> list[list[float]]:
        raise ConnectionError("embedding service down")

    store = _store(make_memory(), broken)
    with pytest.raises(ConnectionError):
        store.put(("n",), "a", {"text": "kept?"})
    assert store.memory.list_entries().entries == ()


@pytest.mark.parametrize("vectors, message", [
    (lambda texts: [[1.0, 0.0]] * len(texts), "dims=3"),
    (lambda texts: [[1.0, 0.0, 0.0]], "1 vectors for 3 texts"),
    (lambda texts: [[float("nan"), 0.0, 1.0]] * len(texts), "NaN"),
    (lambda texts: [["a", "b", "c"]] * len(texts), "numbers"),
])
def test_vectors_of_the_wrong_shape_are_refused(make_memory: Callable[..., Any],
                                                vectors: Any, message: str) -> None:
    memory = make_memory()
    _store(memory, lambda texts: [[0.0, 1.0, 0.0]] * len(texts), dims=3).put(
        ("n",), "k", {"a": "kept"})
    store = _store(memory, vectors, dims=3, fields=["a", "b"])
    with pytest.raises(ValidationError, match=message):
        store.batch([PutOp(("n",), "k", {"a": "one", "b": "two"}),
                     PutOp(("n",), "other", {"a": "three"})])
    assert [e.content for e in memory.list_entries().entries] == ['{"a": "kept"}']


def test_an_async_embed_function_works_through_the_async_api(
        make_memory: Callable[..., Any]) -> None:
    letters = LetterEmbeddings(dims=32)

    async def embed(texts: list[str]) -> list[list[float]]:
        await asyncio.sleep(0)
        return letters.embed_documents(texts)

    store = _store(make_memory(), embed, fields=["text"])

    async def scenario() -> list[str]:
        await store.aput(("n",), "a", {"text": "zebra"})
        await store.aput(("n",), "b", {"text": "apple"})
        return [r.key for r in await store.asearch(("n",), query="zebras")]

    assert asyncio.run(scenario()) == ["a", "b"]


@pytest.mark.parametrize("index, error", [
    ({"text_fields": ["text"]}, TypeError),
    ({"fields": "text"}, TypeError),
    ({"distance_type": "l2"}, TypeError),
    ({"dims": 0, "embed": LetterEmbeddings(8)}, ValidationError),
])
def test_settings_langgraph_does_not_define_are_refused(
        make_memory: Callable[..., Any], index: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        TulvingStore(make_memory(), index=index)


def test_a_negative_cosine_is_the_score(make_memory: Callable[..., Any]) -> None:
    """The score is the cosine, as LangGraph's SqliteStore and PostgresStore return it:
    opposite vectors score -1, not a clipped 0."""
    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] if t.startswith("up") else [-1.0, 0.0] for t in texts]

    store = _store(make_memory(), embed, fields=["text"])
    store.put(("n",), "a", {"text": "up"})
    (hit,) = store.search(("n",), query="down")
    assert hit.score == pytest.approx(-1.0)


def test_what_it_wrote_is_found_by_another_process(make_memory: Callable[..., Any],
                                                   tmp_path: Path) -> None:
    store = _store(make_memory("door.db"), LetterEmbeddings(dims=32), fields=["text"])
    store.put(("memories", "ann"), "diet", {"text": "Ann is vegetarian", "since": 2019})
    store.memory.close()
    out = subprocess.run(
        [sys.executable, "-m", "tulving.interfaces.cli.main", "search", "vegetarian",
         "--json", "--path", str(tmp_path / "door.db"), "--agent-id", "graph",
         "--embedder", "hashing", "--vectors", "exact"],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    (hit,) = json.loads(out.stdout)["results"]
    assert hit["content"] == "Ann is vegetarian"
    assert hit["key"] == "langgraph/memories/ann/diet"
