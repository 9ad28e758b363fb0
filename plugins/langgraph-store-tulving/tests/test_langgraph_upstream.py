"""LangGraph's own store tests, case by case, with only the store's construction swapped.

Ported from the langgraph repository (read, not copied): the vector-search tests of
``libs/checkpoint-sqlite/tests/test_store.py`` (SqliteStore) and of
``libs/checkpoint/tests/test_store.py`` (InMemoryStore, sync and async), and every test of
``libs/checkpoint-sqlite/tests/test_ttl.py``. Where upstream builds
``SqliteStore.from_conn_string(path, index={"dims", "embed", "text_fields"})`` or
``InMemoryStore(index=...)``, these build ``TulvingStore(memory, index={"dims", "embed",
"fields"})`` over a real SQLite Memory; the embedding is a character-frequency one of the
same kind as upstream's ``CharacterEmbeddings`` (``letter_embeddings``). The TTL tests
run on Tulving's manual clock where upstream sleeps (``clock.advance(seconds=2)`` for
``time.sleep(2)``), except the sweeper's, which runs its real thread.

Left out, with the reason: checks of SQLite's own tables, migrations and SQL helpers
(``test_nonnull_migrations``, ``test_escape_glob_literal``, ...), and
``test_async_batched_vector_search_concurrent``, which tests ``AsyncBatchedBaseStore``'s
merging of concurrent calls into one batch (a mock store), not a store. The non-vector
tests of the same files are in ``test_langgraph_conformance.py``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.store.tulving import TulvingStore
from letter_embeddings import LetterEmbeddings

from tulving.adapters.clock import ManualClock


@pytest.fixture
def fake_embeddings() -> LetterEmbeddings:
    return LetterEmbeddings(dims=500)


@pytest.fixture
def vector_store(make_memory: Callable[..., Any], fake_embeddings: LetterEmbeddings
                 ) -> Callable[..., TulvingStore]:
    """``create_vector_store(fake_embeddings, text_fields=...)`` of upstream."""
    count = iter(range(1000))

    def make(text_fields: list[str] | None = None) -> TulvingStore:
        return TulvingStore(make_memory(f"v{next(count)}.db"),
                            index={"dims": fake_embeddings.dims, "embed": fake_embeddings,
                                   "fields": text_fields})
    return make


def _cosine(x: list[float], y: list[float]) -> float:
    dot = sum(a * b for a, b in zip(x, y, strict=True))
    norms = sum(a * a for a in x) ** 0.5 * sum(b * b for b in y) ** 0.5
    return dot / norms if norms else 0.0


# ---- libs/checkpoint-sqlite/tests/test_store.py ------------------------------------------
def test_vector_store_initialization(vector_store: Callable[..., TulvingStore],
                                     fake_embeddings: LetterEmbeddings) -> None:
    store = vector_store()
    assert store.index_config is not None
    assert store.embeddings == fake_embeddings
    assert store.index_config["dims"] == fake_embeddings.dims
    assert store.index_config.get("fields") is None
    store = vector_store(["content", "title"])
    assert store.embeddings == fake_embeddings
    assert store.index_config is not None
    assert store.index_config["fields"] == ["content", "title"]


DOCS = [("doc1", {"text": "short text"}), ("doc2", {"text": "longer text document"}),
        ("doc3", {"text": "longest text document here"}),
        ("doc4", {"description": "text in description field"}),
        ("doc5", {"content": "text in content field"}), ("doc6", {"body": "text in body field"})]


def test_vector_insert_with_auto_embedding(vector_store: Callable[..., TulvingStore]) -> None:
    store = vector_store()
    for key, value in DOCS:
        store.put(("test",), key, value)
    order = [r.key for r in store.search(("test",), query="long text")]
    assert "doc2" in order and "doc3" in order


def test_vector_update_with_embedding(vector_store: Callable[..., TulvingStore]) -> None:
    store = vector_store()
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})
    initial = store.search(("test",), query="Zany Xerxes")
    assert initial and initial[0].key == "doc1"
    initial_score = initial[0].score
    assert initial_score is not None
    store.put(("test",), "doc1", {"text": "new text about dogs"})
    after = next((r.score for r in store.search(("test",), query="Zany Xerxes")
                  if r.key == "doc1"), 0.0)
    assert after is not None and after < initial_score
    for r in store.search(("test",), query="new text about dogs"):
        if r.key == "doc1":
            assert r.score is not None and r.score > after
    store.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    found = store.search(("test",), query="new text about dogs", limit=3)
    assert not any(r.key == "doc4" for r in found)


FILTERED = [("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
            ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
            ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
            ("doc4", {"text": "blue car", "color": "blue", "score": 3.5})]


def test_vector_search_with_filters(vector_store: Callable[..., TulvingStore]) -> None:
    store = vector_store()
    for key, value in FILTERED:
        store.put(("test",), key, value)
    results = store.search(("test",), query="apple", filter={"color": "red"})
    assert len(results) == 2 and results[0].key == "doc1"
    results = store.search(("test",), query="car", filter={"color": "red"})
    assert results and results[0].key == "doc2"
    results = store.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}})
    assert len(results) == 3 and results[0].key == "doc4"
    assert {"doc1", "doc3"} <= {r.key for r in results}
    results = store.search(("test",), query="apple",
                           filter={"score": {"$gte": 4.0}, "color": "green"})
    assert results and results[0].key == "doc3"


def test_vector_search_pagination(vector_store: Callable[..., TulvingStore]) -> None:
    store = vector_store()
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = store.search(("test",), query="test", limit=2)
    page2 = store.search(("test",), query="test", limit=2, offset=2)
    assert len(page1) == len(page2) == 2
    assert not {r.key for r in page1} & {r.key for r in page2}
    assert page1[0].score >= page1[1].score      # type: ignore[operator]
    assert page2[0].score >= page2[1].score      # type: ignore[operator]
    every = store.search(("test",), query="test", limit=10)
    assert len(every) == 5
    assert every[0].score >= every[2].score      # type: ignore[operator]


def test_vector_search_edge_cases(vector_store: Callable[..., TulvingStore]) -> None:
    store = vector_store()
    store.put(("test",), "doc1", {"text": "test document"})
    for query in ["", None, "test " * 100, "test!@#$%^&*()"]:
        assert len(store.search(("test",), query=query)) == 1


def test_embed_with_path(vector_store: Callable[..., TulvingStore]) -> None:
    store = vector_store(["key0", "key1", "key3"])
    store.put(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"})  # no key0
    store.put(("test",), "doc2", {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"})
    results = store.search(("test",), query="xxx")          # doc1.key1 and doc2.key3
    assert len(results) == 2 and results[0].key != results[1].key
    assert results[0].score > 0.9 and results[1].score > 0.9     # type: ignore[operator]
    for query, first in [("uuu", "doc2"), ("zzz", "doc1")]:
        results = store.search(("test",), query=query)
        assert len(results) == 2 and results[0].key == first
        assert results[0].score > results[1].score               # type: ignore[operator]
    results = store.search(("test",), query="www")          # key2 is not indexed
    assert len(results) == 2 and results[0].key != results[1].key
    assert results[0].score < 0.9 and results[1].score < 0.9     # type: ignore[operator]


def test_embed_with_path_operation_config(vector_store: Callable[..., TulvingStore]) -> None:
    store = vector_store(["key17"])
    store.put(("test",), "doc3", {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"},
              index=["key0", "key1"])
    store.put(("test",), "doc4", {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"},
              index=["key1", "key3"])
    for query, first in [("aaa", "doc3"), ("ggg", "doc4")]:
        results = store.search(("test",), query=query)
        assert len(results) == 2 and results[0].key == first
        assert len({r.key for r in results}) == 2
        assert results[0].score > results[1].score              # type: ignore[operator]
    results = store.search(("test",), query="bbb")
    assert len(results) == 2 and results[0].key != results[1].key
    assert abs(results[0].score - results[1].score) < 0.1      # type: ignore[operator]
    results = store.search(("test",), query="ccc")
    assert len(results) == 2 and all(r.score < 0.9 for r in results)  # type: ignore[operator]
    store.put(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    results = store.search(("test",))
    assert len(results) == 3 and any(r.key == "doc5" for r in results)


@pytest.mark.parametrize("query", ["aaa", "bbb", "ccc", "abcd", "poisson"])
def test_scores(vector_store: Callable[..., TulvingStore], fake_embeddings: LetterEmbeddings,
                query: str) -> None:
    store = vector_store(["key0"])
    doc = {"key0": "aaa"}
    store.put(("test",), "doc", doc, index=["key0", "key1"])
    results = store.search((), query=query)
    expected = _cosine(fake_embeddings.embed_query(query),
                       fake_embeddings.embed_query(doc["key0"]))
    assert len(results) == 1
    assert results[0].score == pytest.approx(expected, abs=1e-3)


def test_basic_store_operations(vector_store: Callable[..., TulvingStore]) -> None:
    store = vector_store(["key0", "key1", "key3"])
    uid = uuid.uuid4().hex
    namespace = (uid, "test", "documents")
    assert store.search((uid,)) == []
    value = {"title": "Test Document", "content": "Hello, World!"}
    store.put(namespace, "doc1", value)
    item = store.get(namespace, "doc1")
    assert item is not None and (item.namespace, item.key, item.value) == (
        namespace, "doc1", value)
    assert item.created_at is not None and item.updated_at is not None
    updated_value = {"title": "Updated Test Document", "content": "Hello, LangGraph!"}
    store.put(namespace, "doc1", updated_value)
    updated = store.get(namespace, "doc1")
    assert updated is not None and updated.value == updated_value
    assert updated.updated_at >= item.updated_at
    assert store.get((uid, "test", "other_documents"), "doc1") is None
    store.put(namespace, "doc2", {"title": "Another Document", "content": "Greetings!"})
    items = store.search((uid, "test"), limit=10)
    assert {i.key for i in items} == {"doc1", "doc2"}
    assert (uid, "test", "documents") in store.list_namespaces(prefix=(uid, "test"))
    store.delete(namespace, "doc1")
    store.delete(namespace, "doc2")
    assert store.get(namespace, "doc1") is None and store.get(namespace, "doc2") is None
    assert store.search((uid, "test"), limit=10) == []


def test_list_namespaces_operations(vector_store: Callable[..., TulvingStore]) -> None:
    store = vector_store(["key0", "key1", "key3"])
    p = str(uuid.uuid4())
    namespaces = [(p, "test", "documents", "public", p), (p, "test", "documents", "private", p),
                  (p, "test", "images", "public", p), (p, "test", "images", "private", p),
                  (p, "prod", "documents", "public", p),
                  (p, "prod", "documents", "some", "nesting", "public", p),
                  (p, "prod", "documents", "private", p)]
    for namespace in namespaces:
        store.put(namespace, "dummy", {"content": "dummy"})
    found = store.list_namespaces(prefix=(p, "test"))
    assert len(found) == 4 and all(ns[1] == "test" for ns in found)
    found = store.list_namespaces(prefix=(p, "test", "documents"))
    assert len(found) == 2 and all(ns[1:3] == ("test", "documents") for ns in found)
    found = store.list_namespaces(suffix=("public", p))
    assert len(found) == 4 and all(ns[-2] == "public" for ns in found)
    found = store.list_namespaces(prefix=(p, "test"), suffix=("public", p))
    assert len(found) == 2 and all(ns[1] == "test" and ns[-2] == "public" for ns in found)
    found = store.list_namespaces(prefix=(p, "*", "documents"))
    assert len(found) == 5 and all(ns[2] == "documents" for ns in found)
    found = store.list_namespaces(suffix=("*", "public", p))
    assert len(found) == 4 and all(ns[-2] == "public" for ns in found)
    assert store.list_namespaces(suffix=("some", "*", "public", p)) == [
        (p, "prod", "documents", "some", "nesting", "public", p)]
    assert all(len(ns) <= 3 for ns in store.list_namespaces(max_depth=3))
    found = store.list_namespaces(max_depth=4, prefix=(p, "*", "documents"))
    assert len(set(found)) == len(found) == 5
    assert len(store.list_namespaces(prefix=(p,), limit=3)) == 3
    assert len(store.list_namespaces(prefix=(p,), offset=3)) == len(namespaces) - 3
    every = store.list_namespaces(prefix=(p,))
    assert len(every) == len(namespaces) and set(every) == set(namespaces)
    for namespace in namespaces:
        store.delete(namespace, "dummy")


def test_search_items(vector_store: Callable[..., TulvingStore]) -> None:
    store = vector_store(["key0", "key1", "key3"])
    base = "test_search_items"
    namespaces = [(base, "documents", "user1"), (base, "documents", "user2"),
                  (base, "reports", "department1"), (base, "reports", "department2")]
    values = [{"title": "Doc 1", "author": "John Doe", "tags": ["important"]},
              {"title": "Doc 2", "author": "Jane Smith", "tags": ["draft"]},
              {"title": "Report A", "author": "John Doe", "tags": ["final"]},
              {"title": "Report B", "author": "Alice Johnson", "tags": ["draft"]}]
    for ns, value in zip(namespaces, values, strict=True):
        store.put(ns, f"item_{ns[-1]}", value)
    docs = store.search((base, "documents"))
    assert len(docs) == 2 and all(i.namespace[1] == "documents" for i in docs)
    reports = store.search((base, "reports"))
    assert len(reports) == 2 and all(i.namespace[1] == "reports" for i in reports)
    first, second = store.search((base,), limit=2, offset=0), store.search((base,), limit=2,
                                                                             offset=2)
    assert len(first) == len(second) == 2
    assert {i.key for i in first}.isdisjoint({i.key for i in second})
    assert len(store.search((base,))) == 4
    john = store.search((base,), filter={"author": "John Doe"})
    assert len(john) == 2 and all(i.value["author"] == "John Doe" for i in john)
    drafts = store.search((base,), filter={"tags": ["draft"]})
    assert len(drafts) == 2 and all("draft" in i.value["tags"] for i in drafts)
    for ns in namespaces:
        store.delete(ns, f"item_{ns[-1]}")


NON_ASCII = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]


def test_non_ascii(vector_store: Callable[..., TulvingStore]) -> None:
    store = vector_store()
    for i, text in enumerate(NON_ASCII, 1):
        store.put(("user_123", "memories"), str(i), {"text": text})
    for i, text in enumerate(NON_ASCII, 1):
        assert store.search(("user_123", "memories"), query=text)[0].key == str(i)


# ---- libs/checkpoint/tests/test_store.py (InMemoryStore; the async ones) --------------------
def test_async_vector_insert_with_auto_embedding(
        vector_store: Callable[..., TulvingStore]) -> None:
    store = vector_store()

    async def scenario() -> list[str]:
        for key, value in DOCS:
            await store.aput(("test",), key, value)
        return [r.key for r in await store.asearch(("test",), query="long text")]

    order = asyncio.run(scenario())
    assert "doc2" in order and "doc3" in order


def test_async_vector_update_with_embedding(vector_store: Callable[..., TulvingStore]) -> None:
    store = vector_store()

    async def scenario() -> None:
        await store.aput(("test",), "doc1", {"text": "zany zebra Xerxes"})
        await store.aput(("test",), "doc2", {"text": "something about dogs"})
        await store.aput(("test",), "doc3", {"text": "text about birds"})
        initial = await store.asearch(("test",), query="Zany Xerxes")
        assert initial and initial[0].key == "doc1"
        initial_score = initial[0].score
        await store.aput(("test",), "doc1", {"text": "new text about dogs"})
        after = next((r.score for r in await store.asearch(("test",), query="Zany Xerxes")
                      if r.key == "doc1"), 0.0)
        assert after < initial_score                                # type: ignore[operator]
        for r in await store.asearch(("test",), query="new text about dogs"):
            if r.key == "doc1":
                assert r.score > after                              # type: ignore[operator]
        await store.aput(("test",), "doc4", {"text": "new text about dogs"}, index=False)
        found = await store.asearch(("test",), query="new text about dogs", limit=3)
        assert not any(r.key == "doc4" for r in found)

    asyncio.run(scenario())


def test_async_vector_search_with_filters(vector_store: Callable[..., TulvingStore]) -> None:
    store = vector_store()

    async def scenario() -> None:
        for key, value in FILTERED:
            await store.aput(("test",), key, value)
        results = await store.asearch(("test",), query="apple", filter={"color": "red"})
        assert len(results) == 2 and results[0].key == "doc1"
        results = await store.asearch(("test",), query="car", filter={"color": "red"})
        assert results[0].key == "doc2"
        results = await store.asearch(("test",), query="bbbbluuu",
                                      filter={"score": {"$gt": 3.2}})
        assert len(results) == 3 and results[0].key == "doc4"
        results = await store.asearch(("test",), query="apple",
                                      filter={"score": {"$gte": 4.0}, "color": "green"})
        assert results[0].key == "doc3"

    asyncio.run(scenario())


def test_async_vector_search_pagination(vector_store: Callable[..., TulvingStore]) -> None:
    store = vector_store()

    async def scenario() -> None:
        for i in range(5):
            await store.aput(("test",), f"doc{i}", {"text": f"test document number {i}"})
        page1 = await store.asearch(("test",), query="test", limit=2)
        page2 = await store.asearch(("test",), query="test", limit=2, offset=2)
        assert len(page1) == len(page2) == 2 and page1[0].key != page2[0].key
        assert len(await store.asearch(("test",), query="test", limit=10)) == 5

    asyncio.run(scenario())


def test_async_embed_with_path(vector_store: Callable[..., TulvingStore]) -> None:
    """InMemoryStore's test_embed_with_path (async): equal best scores are equal."""
    store, no_defaults = vector_store(["key0", "key1", "key3"]), vector_store(["key17"])

    async def scenario() -> None:
        await store.aput(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"})
        await store.aput(("test",), "doc2", {"key0": "uuu", "key1": "vvv", "key2": "www",
                                             "key3": "xxx"})
        results = await store.asearch(("test",), query="xxx")
        assert len(results) == 2 and results[0].key != results[1].key
        best = results[0].score
        assert best is not None and results[1].score == pytest.approx(best, abs=1e-5)
        results = await store.asearch(("test",), query="uuu")
        assert results[0].key == "doc2" and results[0].score > results[1].score  # type: ignore[operator]
        assert results[0].score == pytest.approx(best, abs=1e-5)
        results = await store.asearch(("test",), query="www")
        assert len(results) == 2 and all(r.score < best for r in results)  # type: ignore[operator]

        await no_defaults.aput(("test",), "doc3", {"key0": "aaa", "key1": "bbb", "key2": "ccc",
                                                   "key3": "ddd"}, index=["key0", "key1"])
        await no_defaults.aput(("test",), "doc4", {"key0": "eee", "key1": "bbb", "key2": "fff",
                                                   "key3": "ggg"}, index=["key1", "key3"])
        for query, first in [("aaa", "doc3"), ("ggg", "doc4")]:
            results = await no_defaults.asearch(("test",), query=query)
            assert len(results) == 2 and results[0].key == first
            assert results[0].score > results[1].score              # type: ignore[operator]
        results = await no_defaults.asearch(("test",), query="bbb")
        assert results[0].key != results[1].key and results[0].score == results[1].score
        results = await no_defaults.asearch(("test",), query="ccc")
        assert len(results) == 2 and all(r.score < best for r in results)  # type: ignore[operator]
        await no_defaults.aput(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
        results = await no_defaults.asearch(("test",), query="hhh")
        assert len(results) == 3
        assert next(r for r in results if r.key == "doc5").score is None

    asyncio.run(scenario())


def test_vector_store_initialization_in_memory_form(
        make_memory: Callable[..., Any], fake_embeddings: LetterEmbeddings) -> None:
    """InMemoryStore's test_vector_store_initialization: the config is kept as given."""
    store = TulvingStore(make_memory(), index={"dims": fake_embeddings.dims,
                                               "embed": fake_embeddings})
    assert store.index_config is not None
    assert store.index_config["dims"] == fake_embeddings.dims
    assert store.index_config["embed"] == fake_embeddings


# ---- libs/checkpoint-sqlite/tests/test_ttl.py -------------------------------------------
@pytest.fixture
def ttl_store(make_memory: Callable[..., Any]) -> Callable[..., tuple[TulvingStore, Any]]:
    """``SqliteStore.from_conn_string(path, ttl=...)`` of upstream, on a manual clock."""
    def make(ttl: dict[str, Any] | None = None) -> tuple[TulvingStore, Any]:
        clock = ManualClock()
        return TulvingStore(make_memory("ttl.db", clock=clock), ttl=ttl), clock  # type: ignore[arg-type]
    return make


def test_ttl_basic(ttl_store: Callable[..., tuple[TulvingStore, Any]]) -> None:
    store, clock = ttl_store({"default_ttl": 1 / 60})
    store.put(("test",), "item1", {"value": "test"})
    item = store.get(("test",), "item1")
    assert item is not None and item.value["value"] == "test"
    clock.advance(seconds=2)
    store.sweep_ttl()
    assert store.get(("test",), "item1") is None


def test_ttl_refresh(ttl_store: Callable[..., tuple[TulvingStore, Any]]) -> None:
    store, clock = ttl_store({"default_ttl": 1 / 60, "refresh_on_read": True})
    store.put(("test",), "item1", {"value": "test"})
    clock.advance(seconds=0.5)
    assert store.sweep_ttl() == 0
    assert store.get(("test",), "item1", refresh_ttl=True) is not None
    clock.advance(seconds=0.5)
    assert store.sweep_ttl() == 0
    item = store.get(("test",), "item1")
    assert item is not None and item.value["value"] == "test"
    clock.advance(seconds=1.75)
    assert store.sweep_ttl() == 1
    assert store.get(("test",), "item1") is None


def test_ttl_sweeper(ttl_store: Callable[..., tuple[TulvingStore, Any]]) -> None:
    """The sweeper is a real thread, every second (upstream's 2 s TTL, 1 s interval)."""
    store, clock = ttl_store({"default_ttl": 2 / 60, "sweep_interval_minutes": 1 / 60})
    store.start_ttl_sweeper()
    try:
        store.put(("test",), "item1", {"value": "test"})
        assert store.get(("test",), "item1") is not None
        clock.advance(seconds=3.5)
        deadline = time.monotonic() + 10                # swept by the thread: archived
        while store.memory.list_entries(tags=["lgttl"]).entries and time.monotonic() < deadline:
            time.sleep(0.2)
        assert store.memory.list_entries(tags=["lgttl"]).entries == ()
        assert store.get(("test",), "item1") is None
    finally:
        assert store.stop_ttl_sweeper(timeout=5)


def test_ttl_custom_value(ttl_store: Callable[..., tuple[TulvingStore, Any]]) -> None:
    store, clock = ttl_store()
    store.put(("test",), "item1", {"value": "short"}, ttl=1 / 60)
    store.put(("test",), "item2", {"value": "long"}, ttl=3 / 60)
    clock.advance(seconds=2)
    store.sweep_ttl()
    assert store.get(("test",), "item1") is None
    assert store.get(("test",), "item2") is not None
    clock.advance(seconds=4)
    store.sweep_ttl()
    assert store.get(("test",), "item2") is None


def test_ttl_override_default(ttl_store: Callable[..., tuple[TulvingStore, Any]]) -> None:
    store, clock = ttl_store({"default_ttl": 5 / 60})
    store.put(("test",), "item1", {"value": "override"}, ttl=1 / 60)
    store.put(("test",), "item2", {"value": "default"})
    store.put(("test",), "item3", {"value": "permanent"}, ttl=None)
    clock.advance(seconds=2)
    store.sweep_ttl()
    assert store.get(("test",), "item1") is None
    assert store.get(("test",), "item2") is not None
    assert store.get(("test",), "item3") is not None
    clock.advance(seconds=4)
    store.sweep_ttl()
    assert store.get(("test",), "item2") is None
    assert store.get(("test",), "item3") is not None


def test_search_with_ttl(ttl_store: Callable[..., tuple[TulvingStore, Any]]) -> None:
    store, clock = ttl_store({"default_ttl": 1 / 60})
    store.put(("test",), "item1", {"value": "apple"})
    store.put(("test",), "item2", {"value": "banana"})
    results = store.search(("test",), filter={"value": "apple"})
    assert [r.key for r in results] == ["item1"]
    clock.advance(seconds=2)
    store.sweep_ttl()
    assert store.search(("test",), filter={"value": "apple"}) == []


def test_async_ttl_basic(ttl_store: Callable[..., tuple[TulvingStore, Any]]) -> None:
    store, clock = ttl_store({"default_ttl": 1 / 60})

    async def scenario() -> None:
        await store.aput(("test",), "item1", {"value": "test"})
        item = await store.aget(("test",), "item1")
        assert item is not None and item.value["value"] == "test"
        clock.advance(seconds=2)
        store.sweep_ttl()
        assert await store.aget(("test",), "item1") is None

    asyncio.run(scenario())


def test_async_ttl_refresh(ttl_store: Callable[..., tuple[TulvingStore, Any]]) -> None:
    store, clock = ttl_store({"default_ttl": 1 / 60, "refresh_on_read": True})

    async def scenario() -> None:
        await store.aput(("test",), "item1", {"value": "test"})
        clock.advance(seconds=0.5)
        assert await store.aget(("test",), "item1", refresh_ttl=True) is not None
        clock.advance(seconds=0.5)
        item = await store.aget(("test",), "item1")
        assert item is not None and item.value["value"] == "test"
        clock.advance(seconds=2)
        store.sweep_ttl()
        assert await store.aget(("test",), "item1") is None

    asyncio.run(scenario())


def test_async_ttl_sweeper(ttl_store: Callable[..., tuple[TulvingStore, Any]]) -> None:
    store, clock = ttl_store({"default_ttl": 2 / 60, "sweep_interval_minutes": 1 / 60})

    async def scenario() -> None:
        store.start_ttl_sweeper()
        await store.aput(("test",), "item1", {"value": "test"})
        assert await store.aget(("test",), "item1") is not None
        clock.advance(seconds=3.5)
        for _ in range(50):
            if not store.memory.list_entries(tags=["lgttl"]).entries:
                break
            await asyncio.sleep(0.2)
        assert await store.aget(("test",), "item1") is None
        assert store.memory.list_entries(tags=["lgttl"]).entries == ()
        assert store.stop_ttl_sweeper(timeout=5)

    asyncio.run(scenario())


def test_async_search_with_ttl(ttl_store: Callable[..., tuple[TulvingStore, Any]]) -> None:
    store, clock = ttl_store({"default_ttl": 1 / 60})

    async def scenario() -> None:
        await store.aput(("test",), "item1", {"value": "apple"})
        await store.aput(("test",), "item2", {"value": "banana"})
        results = await store.asearch(("test",), filter={"value": "apple"})
        assert [r.key for r in results] == ["item1"]
        clock.advance(seconds=2)
        store.sweep_ttl()
        assert await store.asearch(("test",), filter={"value": "apple"}) == []

    asyncio.run(scenario())


def test_async_asearch_refresh_ttl(ttl_store: Callable[..., tuple[TulvingStore, Any]]) -> None:
    store, clock = ttl_store({"default_ttl": 4 / 60, "refresh_on_read": True})
    namespace = ("docs", "user1")

    async def scenario() -> None:
        await store.aput(namespace, "item1", {"text": "content1", "id": 1})
        await store.aput(namespace, "item2", {"text": "content2", "id": 2})
        clock.advance(seconds=3)
        found = await store.asearch(namespace, filter={"id": 1}, refresh_ttl=True)
        assert [r.key for r in found] == ["item1"]
        clock.advance(seconds=2)
        store.sweep_ttl()
        item1 = await store.aget(namespace, "item1", refresh_ttl=False)
        assert item1 is not None and item1.value["text"] == "content1"
        assert await store.aget(namespace, "item2", refresh_ttl=False) is None
        clock.advance(seconds=2.5)
        store.sweep_ttl()
        assert await store.aget(namespace, "item1", refresh_ttl=False) is None

    asyncio.run(scenario())
