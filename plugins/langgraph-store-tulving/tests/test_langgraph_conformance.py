"""The store behaves as LangGraph's own stores wherever ``BaseStore`` defines the behaviour.

Written from the langgraph repository's store tests (read, not copied):
``libs/checkpoint-sqlite/tests/test_store.py`` and ``test_async_store.py`` (SqliteStore),
``libs/checkpoint-postgres/tests/test_store.py`` and ``test_async_store.py``
(PostgresStore: TTL and ``omit_expired``), ``libs/checkpoint/tests/test_store.py``
(InMemoryStore, the namespace rules). Each test names the upstream tests it follows;
``test_langgraph_reference.py`` also runs scenarios on ``InMemoryStore`` side by side.

Where the store differs on purpose (the README says so): a query search is ranked by
Tulving's hybrid ranking (full text + vectors), so a page is in ranked order while each
``score`` is the cosine similarity of query and item, as LangGraph's stores define it; a
page's scores need not descend. Checks of a store's SQL (migrations, query plans, the
escaping helpers) have no counterpart here.
"""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, date, datetime
from typing import Any
from uuid import UUID

import numpy as np
import pytest
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore
from langgraph.store.tulving import TulvingStore


def _keys(items: list[Any]) -> list[str]:
    return [i.key for i in items]


def _namespaces(store: Any, prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
    return {i.namespace for i in store.search(prefix, limit=100)}


# ---- operations and batches -------------------------------------------------------------
def test_basic_operations(store: TulvingStore) -> None:
    """test_basic_store_ops, test_basic_store_operations"""
    ns = ("test", "documents")
    assert store.search(("test",)) == []
    store.put(ns, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    first = store.get(ns, "doc1")
    assert (first.namespace, first.key, first.value) == (
        ns, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    assert first.created_at is not None and first.updated_at is not None
    store.put(ns, "doc1", {"title": "Updated", "content": "Hello, LangGraph!"})
    updated = store.get(ns, "doc1")
    assert updated.value == {"title": "Updated", "content": "Hello, LangGraph!"}
    assert updated.updated_at >= first.updated_at
    assert store.get(("test", "other_documents"), "doc1") is None
    store.put(ns, "doc2", {"title": "Another", "content": "Greetings!"})
    assert set(_keys(store.search(("test",), limit=10))) == {"doc1", "doc2"}
    assert ("test", "documents") in store.list_namespaces(prefix=("test",))
    store.delete(ns, "doc1")
    store.delete(ns, "doc2")
    assert store.get(ns, "doc1") is None and store.search(("test",), limit=10) == []


def test_batches_of_each_kind(store: TulvingStore) -> None:
    """test_batch_get_ops, test_batch_put_ops, test_batch_search_ops,
    test_batch_list_namespaces_ops"""
    assert store.batch([PutOp(("test",), "key1", {"data": "value1"}),
                        PutOp(("test",), "key2", {"data": "value2"}),
                        PutOp(("test",), "key3", None)]) == [None, None, None]
    got = store.batch([GetOp(("test",), "key1"), GetOp(("test",), "key2"),
                       GetOp(("test",), "key3")])
    assert [g.key if g else None for g in got] == ["key1", "key2", None]
    for ns, key, tag in [(("t", "foo"), "k1", "a"), (("t", "bar"), "k2", "a"),
                         (("t", "baz"), "k3", "b")]:
        store.put(ns, key, {"data": key, "tag": tag})
    tagged, two, foo = store.batch([SearchOp(("t",), {"tag": "a"}, 10, 0),
                                    SearchOp(("t",), None, 2, 0),
                                    SearchOp(("t", "foo"), None, 10, 0)])
    assert {i.key for i in tagged} == {"k1", "k2"} and len(two) == 2
    assert [i.namespace for i in foo] == [("t", "foo")]
    for ns in [("d", "documents", "public"), ("d", "documents", "private"),
               ("d", "images", "public"), ("p", "documents", "public")]:
        store.put(ns, "x", {"content": "doc"})
    every, shallow, public = store.batch([
        ListNamespacesOp(None, None, 100, 0), ListNamespacesOp(None, 2, 100, 0),
        ListNamespacesOp((MatchCondition("suffix", ("public",)),), None, 100, 0)])
    assert len([n for n in every if n[0] in ("d", "p")]) == 4
    assert all(len(n) <= 2 for n in shallow)
    assert {n for n in public} == {("d", "documents", "public"), ("d", "images", "public"),
                                   ("p", "documents", "public")}


# ---- search without a query -------------------------------------------------------------
def test_search_filters_and_pages(store: TulvingStore) -> None:
    """test_search, test_search_items"""
    base = "test_search_items"
    for ns, value in [((base, "documents", "user1"), {"title": "Doc 1", "author": "John Doe",
                                                      "tags": ["important"]}),
                      ((base, "documents", "user2"), {"title": "Doc 2", "author": "Jane",
                                                      "tags": ["draft"]}),
                      ((base, "reports", "dep1"), {"title": "Report A", "author": "John Doe",
                                                   "tags": ["final"]}),
                      ((base, "reports", "dep2"), {"title": "Report B", "author": "Alice",
                                                   "tags": ["draft"]})]:
        store.put(ns, f"item_{ns[-1]}", value)
    assert len(store.search((base, "documents"))) == 2
    first, second = store.search((base,), limit=2), store.search((base,), limit=2, offset=2)
    assert len(first) == len(second) == 2 and not set(_keys(first)) & set(_keys(second))
    assert len(store.search((base,), offset=2)) == 2
    assert {i.value["author"] for i in store.search((base,), filter={"author": "John Doe"})} \
        == {"John Doe"}
    assert len(store.search((base,), filter={"tags": ["draft"]})) == 2


@pytest.mark.parametrize("limit, offset", [(-1, 0), (-2, 1), (3, -2), (2, 1), (100, 0)])
def test_negative_limits_and_offsets_page_as_the_reference_store_does(
        store: TulvingStore, limit: int, offset: int) -> None:
    """InMemoryStore's search pages ``found[offset:offset + limit]`` (negative bounds count
    from the end): ``limit=-1`` is every item but the last, not nothing."""
    reference = InMemoryStore()
    for i in range(6):
        for target in (reference, store):
            target.put(("docs",), f"d{i}", {"text": f"document {i}", "n": i})
    ours = store.search(("docs",), limit=limit, offset=offset)
    theirs = reference.search(("docs",), limit=limit, offset=offset)
    assert len(ours) == len(theirs)
    ranked = store.search(("docs",), query="document", limit=limit, offset=offset)
    assert len(ranked) == len(theirs)
    assert store.list_namespaces(limit=limit, offset=offset) == \
        reference.list_namespaces(limit=limit, offset=offset)


# ---- filters ----------------------------------------------------------------------------
def test_filter_values_are_literals(store: TulvingStore) -> None:
    """test_sql_injection_filter_values, test_sql_injection_vulnerability (a filter is
    evaluated on the value, never as query text)"""
    for key, access in [("doc1", "public"), ("doc2", "private"), ("doc3", "secret")]:
        store.put(("docs",), key, {"access": access, "title": key})
    for bad in ["public' OR '1'='1", "public'; --", "public' UNION SELECT * FROM store --",
                "public\x00' OR '1'='1", "''''", "public' OR 'א'='א"]:
        assert store.search(("docs",), filter={"access": bad}) == []
    assert store.search(("docs",), filter={"access') = 'public' OR '1'='1": "x"}) == []
    store.put(("docs",), "doc4", {"title": "O'Brien's Document", "access": "public"})
    assert _keys(store.search(("docs",), filter={"title": "O'Brien's Document"})) == ["doc4"]


def test_numeric_and_boolean_filters(store: TulvingStore) -> None:
    """test_numeric_filter_safety, test_boolean_filter_safety"""
    for i, price in enumerate([10, 20, 30]):
        store.put(("items",), f"item{i + 1}", {"price": price, "active": price != 20})
    assert {i.value["price"] for i in store.search(("items",), filter={"price": {"$gt": 15}})} \
        == {20, 30}
    assert len(store.search(("items",), filter={"price": {"$lt": math.inf}})) == 3
    assert len(store.search(("items",), filter={"price": {"$gt": -math.inf}})) == 3
    assert store.search(("items",), filter={"price": {"$eq": math.nan}}) == []
    assert len(store.search(("items",), filter={"price": {"$lt": 10**100}})) == 3
    store.put(("items",), "item4", {"price": -10})
    assert _keys(store.search(("items",), filter={"price": {"$lt": 0}})) == ["item4"]
    assert {i.key for i in store.search(("items",), filter={"active": True})} == {
        "item1", "item3"}
    assert _keys(store.search(("items",), filter={"active": False})) == ["item2"]


def test_dotted_filter_keys_are_paths(store: TulvingStore) -> None:
    """test_filter_keys_with_hyphens_and_digits (SqliteStore and PostgresStore read a
    dotted key as a path into the value)"""
    store.put(("docs",), "hyphen", {"access-level": "public", "user": {"access-level": "nested"}})
    store.put(("docs",), "digit", {"123abc": "ok", "user": {"123abc": "ok2"}})
    assert _keys(store.search(("docs",), filter={"access-level": "public"})) == ["hyphen"]
    assert _keys(store.search(("docs",), filter={"user.access-level": "nested"})) == ["hyphen"]
    assert _keys(store.search(("docs",), filter={"123abc": "ok"})) == ["digit"]
    assert _keys(store.search(("docs",), filter={"user.123abc": "ok2"})) == ["digit"]
    assert _keys(store.search(("docs",), query="public",
                              filter={"user.access-level": "nested"})) == ["hyphen"]
    assert store.search(("docs",), filter={"user.missing.deeper": "x"}) == []


# ---- namespaces -------------------------------------------------------------------------
def test_a_prefix_stops_at_label_boundaries(store: TulvingStore) -> None:
    """test_search_namespace_segment_boundary, test_search_empty_prefix_is_unconstrained"""
    for ns in [("foo",), ("foo", "child"), ("foo", "child", "deep"), ("foobar",),
               ("foobar", "baz"), ("foo2",)]:
        store.put(ns, "k", {"v": 1})
    assert _namespaces(store, ("foo",)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert _namespaces(store, ("foobar",)) == {("foobar",), ("foobar", "baz")}
    assert _namespaces(store, ("foo2",)) == {("foo2",)}
    assert _namespaces(store, ("fo",)) == set()
    assert len(_namespaces(store, ())) == 6


def test_labels_are_literal_and_case_sensitive(store: TulvingStore) -> None:
    """test_search_namespace_wildcard_chars_are_literal,
    test_search_namespace_is_case_sensitive, test_list_namespaces_metacharacter_labels"""
    for ns in [("user_1",), ("user_1", "child"), ("userX1",), ("a%b",), ("axxb",), ("star*",),
               ("starX",), ("Foo",), ("foo",), ("q?m",), ("qXm",), ("br[ack]et",)]:
        store.put(ns, "k", {"v": 1})
    assert _namespaces(store, ("user_1",)) == {("user_1",), ("user_1", "child")}
    assert _namespaces(store, ("a%b",)) == {("a%b",)}
    assert _namespaces(store, ("star*",)) == {("star*",)}
    assert _namespaces(store, ("foo",)) == {("foo",)}
    assert _namespaces(store, ("Foo",)) == {("Foo",)}
    for label in ["star*", "q?m", "br[ack]et", "user_1", "a%b"]:
        assert set(store.list_namespaces(prefix=[label], limit=100)) >= {(label,)}
        assert all(ns[0] == label for ns in store.list_namespaces(prefix=[label], limit=100))


def test_list_namespaces_aligns_to_labels(store: TulvingStore) -> None:
    """test_list_namespaces_segment_boundary, test_namespace_labels_with_trailing_newline,
    test_list_namespaces_operations"""
    for ns in [("foo",), ("foo", "child"), ("foobar",), ("foobar", "baz"),
               ("uid", "users", "alice"), ("uid", "users", "malice"), ("uid", "a", "b", "alice"),
               ("users", "alice"), ("users", "alice\n")]:
        store.put(ns, "k", {"v": 1})
    assert set(store.list_namespaces(prefix=["foo"], limit=100)) == {("foo",), ("foo", "child")}
    assert set(store.list_namespaces(suffix=["alice"], limit=100)) == {
        ("uid", "users", "alice"), ("uid", "a", "b", "alice"), ("users", "alice")}
    assert set(store.list_namespaces(prefix=["uid", "*", "alice"], limit=100)) == {
        ("uid", "users", "alice")}
    assert set(store.list_namespaces(prefix=["users", "alice"], limit=100)) == {
        ("users", "alice")}


# ---- query search -----------------------------------------------------------------------
def test_query_search_finds_and_follows_updates(store: TulvingStore) -> None:
    """test_vector_insert_with_auto_embedding, test_vector_update_with_embedding"""
    for key, value in [("doc1", {"text": "zany zebra Xerxes"}),
                       ("doc2", {"text": "something about dogs"}),
                       ("doc3", {"text": "text about birds"})]:
        store.put(("test",), key, value)
    initial = store.search(("test",), query="Zany Xerxes")
    assert initial[0].key == "doc1"
    store.put(("test",), "doc1", {"text": "new text about dogs"})
    after = next((r.score for r in store.search(("test",), query="Zany Xerxes")
                  if r.key == "doc1"), -1.0)
    assert after < initial[0].score
    store.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    assert "doc4" not in _keys(store.search(("test",), query="new text about dogs", limit=3))


def test_query_search_with_filters(store: TulvingStore) -> None:
    """test_vector_search_with_filters"""
    for key, value in [("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
                       ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
                       ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
                       ("doc4", {"text": "blue car", "color": "blue", "score": 3.5})]:
        store.put(("test",), key, value)
    found = store.search(("test",), query="apple", filter={"color": "red"})
    assert len(found) == 2 and found[0].key == "doc1"
    assert store.search(("test",), query="car", filter={"color": "red"})[0].key == "doc2"
    assert set(_keys(store.search(("test",), query="blue", filter={"score": {"$gt": 3.2}}))) \
        == {"doc1", "doc3", "doc4"}
    assert store.search(("test",), query="apple",
                        filter={"score": {"$gte": 4.0}, "color": "green"})[0].key == "doc3"


def test_query_search_pages_are_disjoint(store: TulvingStore) -> None:
    """test_vector_search_pagination (its scores-descend-in-a-page check is where the
    hybrid ranking differs: the README says so)"""
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    one = store.search(("test",), query="test", limit=2)
    two = store.search(("test",), query="test", limit=2, offset=2)
    assert len(one) == len(two) == 2 and not set(_keys(one)) & set(_keys(two))
    assert len(store.search(("test",), query="test", limit=10)) == 5


@pytest.mark.parametrize("query", ["", None, "test " * 100, "test!@#$%^&*()"])
def test_query_edge_cases(store: TulvingStore, query: str | None) -> None:
    """test_vector_search_edge_cases"""
    store.put(("test",), "doc1", {"text": "test document"})
    assert _keys(store.search(("test",), query=query)) == ["doc1"]


@pytest.mark.parametrize("query", ["aaa", "bbb", "ccc", "abcd", "poisson"])
def test_score_is_the_cosine_of_query_and_item(store: TulvingStore, query: str) -> None:
    """test_scores (score = the similarity of the query's and the item's embeddings, the
    same whatever else the store holds: ``SearchResult.similarity``)"""
    store.put(("test",), "doc", {"text": "aaa"})
    for i in range(10):
        store.put(("other",), f"n{i}", {"text": f"unrelated note {i}"})
    (hit,) = store.search((), query=query, filter={"text": "aaa"})
    embedder = store.memory.ctx.embedder
    expected = float(np.dot(np.ravel(embedder.embed_query(query)),
                            np.ravel(embedder.embed(["aaa"])[0])))
    assert hit.score == pytest.approx(expected, abs=1e-3)


def test_index_fields_and_per_item_index(make_memory: Any) -> None:
    """test_embed_with_path, test_embed_with_path_operation_config"""
    store = TulvingStore(make_memory(), index={"fields": ["key0", "key1", "key3"]})
    store.put(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"})   # no key0
    store.put(("test",), "doc2", {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"})
    assert set(_keys(store.search(("test",), query="xxx"))) == {"doc1", "doc2"}
    assert store.search(("test",), query="uuu")[0].key == "doc2"
    assert store.search(("test",), query="zzz")[0].key == "doc1"
    store.put(("test",), "doc3", {"key0": "aaa", "key1": "bbb", "key2": "ccc"},
              index=["key0", "key1"])
    store.put(("test",), "doc4", {"key0": "eee", "key1": "bbb", "key3": "ggg"},
              index=["key1", "key3"])
    assert store.search(("test",), query="aaa")[0].key == "doc3"
    assert store.search(("test",), query="ggg")[0].key == "doc4"
    store.put(("test",), "doc5", {"key0": "hhh"}, index=False)
    assert "doc5" in _keys(store.search(("test",), limit=10))


def test_non_ascii(store: TulvingStore) -> None:
    """test_non_ascii"""
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for i, text in enumerate(texts, 1):
        store.put(("user_123", "memories"), str(i), {"text": text})
    for i, text in enumerate(texts, 1):
        assert store.search(("user_123", "memories"), query=text)[0].key == str(i)


# ---- values -----------------------------------------------------------------------------
VALUES = {
    "datetime": {"when": datetime(2025, 5, 1, 9, 30, tzinfo=UTC), "day": date(2025, 5, 1)},
    "bytes": {"raw": b"\x00\x01\xffPNG", "text": "an image"},
    "set": {"tags": {"a", "b", "c"}},
    "uuid": {"id": UUID("12345678-1234-5678-1234-567812345678")},
    "nul": {"text": "before\x00after"},
    "over-64kB": {"text": "lorem ipsum " * 12_000, "n": 1},
    "over-64kB-typed": {"blob": bytes(range(256)) * 400, "when": datetime(2025, 1, 1)},
}


@pytest.mark.parametrize("kind", list(VALUES))
def test_values_are_kept_as_the_reference_store_keeps_them(make_memory: Any,
                                                           kind: str) -> None:
    """InMemoryStore keeps any value (the BaseStore contract: a mapping); so does this
    store, through reopening, search, updates and history."""
    memory = make_memory("values.db")
    store, reference = TulvingStore(memory), InMemoryStore()
    value = VALUES[kind]
    for target in (store, reference):
        target.put(("v",), "k", value)
    assert store.get(("v",), "k").value == reference.get(("v",), "k").value == value
    assert [i.value for i in store.search(("v",))] == [value]
    assert store.search(("v",), query="lorem ipsum image")[0].value == value
    store.put(("v",), "k", {"text": "replaced"})
    assert [i.value for i in store.history(("v",), "k")] == [{"text": "replaced"}, value]
    memory.close()
    again = TulvingStore(make_memory("values.db"))
    assert again.history(("v",), "k")[1].value == value
    assert again.memory.search("lorem ipsum", top_k=50, mode="lexical") == [] \
        or kind == "over-64kB"                       # the old version's parts left search
    again.delete(("v",), "k")
    assert again.memory.list_entries(limit=1000).entries == ()


# ---- TTL --------------------------------------------------------------------------------
@pytest.fixture
def ttl_store(make_memory: Any) -> tuple[TulvingStore, Any]:
    from tulving.adapters.clock import ManualClock

    clock = ManualClock()
    store = TulvingStore(make_memory("ttl.db", clock=clock), index={"fields": ["foo"]},
                         ttl={"default_ttl": 0.1, "refresh_on_read": True})
    return store, clock


def test_reads_refresh_the_ttl(ttl_store: tuple[TulvingStore, Any]) -> None:
    """test_store_ttl (PostgresStore, sync and async; seconds on a manual clock)"""
    store, clock = ttl_store
    ns = ("foo",)
    store.put(ns, "item1", {"foo": "bar"})                   # expires 6 s after a touch
    clock.advance(seconds=4)
    assert store.get(ns, "item1", refresh_ttl=True) is not None
    clock.advance(seconds=4)
    assert len(store.search(ns, query="foo", refresh_ttl=True)) == 1
    clock.advance(seconds=4)
    assert store.get(ns, "item1", refresh_ttl=False) is not None
    clock.advance(seconds=5)
    assert store.search(ns, query="bar", refresh_ttl=False) == []
    assert asyncio.run(store.aget(ns, "item1")) is None


def test_a_refresh_is_saved_at_once(make_memory: Any, tmp_path: Any) -> None:
    """A read near expiry keeps the item alive with no later read, flush or close: what
    another process sees at once."""
    from tulving import Memory
    from tulving.adapters.clock import ManualClock

    clock = ManualClock()
    store = TulvingStore(make_memory("saved.db", clock=clock))
    store.put(("s",), "k", {"text": "near expiry"}, ttl=1)
    clock.advance(seconds=55)
    assert store.get(("s",), "k", refresh_ttl=True) is not None  # expires at 115 s now
    with Memory(tmp_path / "saved.db", agent_id="graph", embedder="hashing",
                vectors="exact", clock=clock, read_only=True) as reader:
        clock.advance(seconds=50)                            # 105 s: alive only if saved
        assert TulvingStore(reader).get(("s",), "k", refresh_ttl=False) is not None
    clock.advance(seconds=15)
    assert store.get(("s",), "k") is None


def test_omit_expired_as_the_ttl_config_says(make_memory: Any) -> None:
    """test_omit_expired_filters_read_paths, test_omit_expired_disabled_preserves_expired_rows,
    test_omit_expired_refresh_ttl_only_refreshes_live_rows"""
    from tulving.adapters.clock import ManualClock

    clock = ManualClock()
    memory = make_memory("omit.db", clock=clock)
    omit = TulvingStore(memory, ttl={"omit_expired": True})
    keep = TulvingStore(memory, ttl={"omit_expired": False})
    omit.put(("omit", "expired"), "e", {"data": "gone"}, ttl=1)
    omit.put(("omit", "control"), "c", {"data": "keep"})
    omit.put(("omit", "live"), "l", {"data": "live"}, ttl=3)
    clock.advance(minutes=2)
    assert omit.get(("omit", "expired"), "e") is None
    assert omit.get(("omit", "control"), "c") is not None
    assert omit.search(("omit", "expired")) == []
    assert ("omit", "expired") not in omit.list_namespaces(prefix=("omit",))
    assert keep.get(("omit", "expired"), "e", refresh_ttl=False) is not None
    assert _keys(keep.search(("omit", "expired"), refresh_ttl=False)) == ["e"]
    assert ("omit", "expired") in keep.list_namespaces(prefix=("omit",))
    assert omit.get(("omit", "expired"), "e", refresh_ttl=True) is None   # not resurrected
    assert omit.get(("omit", "live"), "l", refresh_ttl=True) is not None  # 1 min left...
    clock.advance(minutes=2)
    assert keep.get(("omit", "expired"), "e", refresh_ttl=False) is not None
    assert omit.get(("omit", "live"), "l") is not None                    # ...refreshed
    assert omit.sweep_ttl() == 1 and keep.get(("omit", "expired"), "e") is None


def test_expired_items_leave_a_page_before_it_is_cut(make_memory: Any) -> None:
    """test_omit_expired_search_pagination"""
    from tulving.adapters.clock import ManualClock

    clock = ManualClock()
    store = TulvingStore(make_memory(clock=clock))
    store.put(("page",), "c", {"k": "c"}, ttl=10)
    clock.advance(seconds=1)
    store.put(("page",), "b", {"k": "b"}, ttl=10)
    clock.advance(seconds=1)
    store.put(("page",), "expired", {"k": "x"}, ttl=0.05)
    clock.advance(seconds=1)
    store.put(("page",), "a", {"k": "a"}, ttl=10)
    clock.advance(seconds=5)
    assert _keys(store.search(("page",), limit=2)) == ["a", "b"]
    assert _keys(store.search(("page",), limit=2, offset=2)) == ["c"]
