"""Issue 33: storing a key again keeps the tags, importance, pinned flag and metadata the
new write does not name (correcting a pinned decision's wording must not unpin it), and
naming one, even empty, is how a caller clears it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tulving import MemoryType


def _fields(entry: Any) -> tuple[Any, ...]:
    metadata = {k: v for k, v in entry.metadata.items() if k != "governance"}
    return entry.tags, entry.importance, entry.pinned, metadata


def test_a_supersede_keeps_what_it_does_not_name(make_memory: Callable[..., Any]) -> None:
    memory = make_memory()
    first = memory.store("We deploy with blue-green releases", type=MemoryType.DECISION,
                         key="deploy/strategy", tags=["ops"], importance=0.9, pinned=True,
                         metadata={"ticket": "OPS-12"})
    second = memory.store("Canary releases replaced blue-green", type="DECISION",
                          key="deploy/strategy")
    assert second.supersedes == first.id
    assert _fields(second) == (("ops",), 0.9, True, {"ticket": "OPS-12"})
    assert _fields(memory.get("deploy/strategy")) == (("ops",), 0.9, True,
                                                        {"ticket": "OPS-12"})
    # a field named is taken as given; empty clears it
    third = memory.store("Canary releases, 5 % first", type="DECISION",
                         key="deploy/strategy", tags=[], pinned=False, metadata={})
    assert _fields(third) == ((), 0.9, False, {})
    fourth = memory.store("Canary releases, 10 % first", type="DECISION",
                          key="deploy/strategy", importance=0.5, tags=["release"])
    assert _fields(fourth) == (("release",), 0.5, False, {})
    assert len(memory.history("deploy/strategy")) == 4


def test_a_new_key_gets_the_defaults(make_memory: Callable[..., Any]) -> None:
    memory = make_memory()
    memory.store("old", type="FACT", key="a/one", tags=["x"], importance=0.8, pinned=True)
    fresh = memory.store("new", type="FACT", key="a/two")
    assert _fields(fresh) == ((), 0.5, False, {})
    unkeyed = memory.store("no key", type="FACT")
    assert _fields(unkeyed) == ((), 0.5, False, {})


def test_store_many_keeps_them_too_within_one_batch(make_memory: Callable[..., Any]) -> None:
    memory = make_memory()
    memory.store("v1", type="PLAN", key="plan/q3", tags=["roadmap"], pinned=True)
    v2, v3 = memory.store_many([
        {"content": "v2", "type": "PLAN", "key": "plan/q3"},
        {"content": "v3", "type": "PLAN", "key": "plan/q3", "importance": 0.7},
    ])
    assert _fields(v2)[:3] == (("roadmap",), 0.5, True)
    assert _fields(v3)[:3] == (("roadmap",), 0.7, True)
    assert memory.get("plan/q3").content == "v3"


def test_over_http_a_store_without_tags_keeps_them(tmp_path: Any) -> None:
    from fastapi.testclient import TestClient

    from tulving import Memory
    from tulving.interfaces.auth.bearer_tokens import registry_for
    from tulving.interfaces.http import create_app

    with Memory(tmp_path / "m.db", agent_id="a", embedder="hashing",
                vectors="exact") as memory:
        registry = registry_for(memory)
        _record, token = registry.create("t", user_id=None)
        app = create_app(memory, registry=registry)
        with TestClient(app) as client:
            headers = {"Authorization": f"Bearer {token}"}
            body = {"content": "first", "type": "DECISION", "key": "k/one",
                    "tags": ["keep"], "pinned": True, "importance": 0.8}
            assert client.post("/v1/store", json=body, headers=headers).status_code == 200
            again = client.post("/v1/store", headers=headers, json={
                "content": "second", "type": "DECISION", "key": "k/one"})
            stored = again.json()["stored"]
            assert (stored["tags"], stored["pinned"], stored["importance"]) == (
                ["keep"], True, 0.8)
