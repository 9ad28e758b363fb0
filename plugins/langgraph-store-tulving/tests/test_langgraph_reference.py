"""The store answers the BaseStore operations as LangGraph's own reference store does.

langgraph ships no shared store conformance suite (``langgraph-checkpoint-conformance``
covers checkpointers only), so each scenario runs against ``InMemoryStore`` (the
framework's reference implementation) and ``TulvingStore`` side by side and compares what
they return. Where the interface leaves order open (a search without a query), the sets
are compared; ``list_namespaces`` is sorted in both and compared exactly.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langgraph.store.base import InvalidNamespaceError
from langgraph.store.memory import InMemoryStore

NAMESPACES = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("b", "a", "f"),
    ("users", "123"),
    ("users", "456", "settings"),
    ("admin", "users", "789"),
    ("users", "ünïcode label", "x:y/z"),
]


def _fill(store: Any) -> None:
    for i, ns in enumerate(NAMESPACES):
        store.put(ns, f"id_{i}", {"text": f"value {i}", "n": i, "kind": "even" if i % 2 == 0
                                  else "odd", "meta": {"owner": ns[0], "tags": ["x", str(i)]}})


def _both(store: Any) -> tuple[Any, Any]:
    reference = InMemoryStore()
    _fill(reference)
    _fill(store)
    return reference, store


def _view(item: Any) -> Any:
    return None if item is None else (item.namespace, item.key,
                                      json.dumps(item.value, sort_keys=True))


LISTINGS: list[dict[str, Any]] = [
    {},
    {"prefix": ("a", "b")},
    {"suffix": ("f",)},
    {"prefix": ("a",), "suffix": ("f",)},
    {"prefix": ("a", "b"), "max_depth": 3},
    {"max_depth": 2},
    {"prefix": ("a", "b"), "limit": 2},
    {"prefix": ("a", "b"), "offset": 2},
    {"prefix": ("a", "*", "f")},
    {"suffix": ("*", "f")},
    {"prefix": ("users", "*")},
    {"prefix": ("*", "users"), "suffix": ("*", "settings")},
    {"prefix": ("nonexistent",)},
    {"prefix": ("users", "123")},
]


@pytest.mark.parametrize("listing", LISTINGS, ids=[repr(x) for x in LISTINGS])
def test_list_namespaces_matches_the_reference(store: Any, listing: dict[str, Any]) -> None:
    reference, ours = _both(store)
    assert ours.list_namespaces(**listing) == reference.list_namespaces(**listing)


FILTERS: list[dict[str, Any] | None] = [
    None,
    {"kind": "even"},
    {"n": {"$gt": 4}},
    {"n": {"$gte": 2, "$lt": 6}},
    {"n": {"$ne": 3}},
    {"n": {"$eq": 3}},
    {"n": {"$lte": 1}},
    {"meta": {"owner": "users"}},
    {"meta": {"tags": ["x", "7"]}},
    {"kind": "odd", "n": {"$gt": 5}},
    {"missing": "field"},
]


@pytest.mark.parametrize("flt", FILTERS, ids=[repr(x) for x in FILTERS])
@pytest.mark.parametrize("prefix", [(), ("a",), ("users",), ("a", "b", "d")])
def test_filtered_search_matches_the_reference(store: Any, flt: Any, prefix: Any) -> None:
    reference, ours = _both(store)
    expected = {_view(i) for i in reference.search(prefix, filter=flt, limit=100)}
    got = [_view(i) for i in ours.search(prefix, filter=flt, limit=100)]
    assert len(got) == len(set(got))
    assert set(got) == expected


def test_get_put_update_delete_match_the_reference(store: Any) -> None:
    reference, ours = _both(store)
    for target in (reference, ours):
        target.put(("a", "b", "c"), "id_0", {"text": "changed", "n": 100})
        target.delete(("users", "123"), "id_6")
        target.delete(("users", "123"), "never-there")      # deleting nothing is no error
        target.put(("new",), "", {"text": "an empty key is a key"})
    for i, ns in enumerate(NAMESPACES):
        assert _view(ours.get(ns, f"id_{i}")) == _view(reference.get(ns, f"id_{i}"))
    assert _view(ours.get(("new",), "")) == _view(reference.get(("new",), ""))
    assert ours.get(("a", "b"), "id_0") is None            # a key lives in one namespace only
    # InMemoryStore keeps listing a namespace whose last item was deleted (an empty dict
    # stays behind); PostgresStore lists namespaces from the rows it has, and so do we.
    emptied = ("users", "123")
    assert emptied in reference.list_namespaces()
    assert ours.list_namespaces() == [n for n in reference.list_namespaces() if n != emptied]


def test_a_batch_returns_each_result_at_its_operations_position(store: Any) -> None:
    from langgraph.store.base import GetOp, ListNamespacesOp, PutOp, SearchOp

    _fill(store)
    results = store.batch([
        GetOp(("a", "b", "c"), "id_0"),
        PutOp(("z",), "k", {"text": "zed"}),
        SearchOp(("users",), {"kind": "odd"}, 10, 0),
        ListNamespacesOp(max_depth=1),
        GetOp(("z",), "k"),
    ])
    assert results[0].value["n"] == 0
    assert results[1] is None
    assert {i.key for i in results[2]} == {"id_7", "id_9"}
    assert results[3] == [("a",), ("admin",), ("b",), ("users",), ("z",)]
    assert results[4].value == {"text": "zed"}           # writes are applied before reads


def test_pagination_walks_every_item_once(store: Any) -> None:
    for i in range(23):
        store.put(("docs",), f"d{i:02d}", {"text": f"document number {i}", "n": i})
    seen: list[str] = []
    for offset in range(0, 30, 5):
        seen.extend(i.key for i in store.search(("docs",), limit=5, offset=offset))
    assert sorted(seen) == [f"d{i:02d}" for i in range(23)]
    pages = [store.search(("docs",), query="document number", limit=5, offset=o)
             for o in range(0, 25, 5)]
    ranked = [i.key for page in pages for i in page]
    assert sorted(ranked) == [f"d{i:02d}" for i in range(23)]


@pytest.mark.parametrize("bad", [(), ("the", "thing.about"), ("some", "fun", ""),
                                 ("langgraph", "foo"), ("a", 1)])
def test_invalid_namespaces_are_refused_as_langgraph_refuses_them(store: Any, bad: Any) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(bad, "k", {"text": "x"})
    with pytest.raises(InvalidNamespaceError):
        asyncio.run(store.aput(bad, "k", {"text": "x"}))
    assert store.memory.list_keys() == []


def test_async_operations_answer_as_the_sync_ones(store: Any) -> None:
    async def scenario() -> None:
        await asyncio.gather(*(store.aput(("chat", f"u{i}"), "k", {"text": f"user {i}",
                                                                    "n": i})
                               for i in range(8)))
        items = await asyncio.gather(*(store.aget(("chat", f"u{i}"), "k") for i in range(8)))
        assert [i.value["n"] for i in items] == list(range(8))
        found = await store.asearch(("chat",), filter={"n": {"$gte": 6}})
        assert {i.namespace for i in found} == {("chat", "u6"), ("chat", "u7")}
        ranked = await store.asearch(("chat",), query="user 3", limit=3)
        assert ranked[0].namespace == ("chat", "u3")
        await store.adelete(("chat", "u3"), "k")
        assert await store.aget(("chat", "u3"), "k") is None
        assert len(await store.alist_namespaces(prefix=("chat",))) == 7

    asyncio.run(scenario())
    assert store.get(("chat", "u2"), "k").value["n"] == 2
