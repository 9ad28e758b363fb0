"""The Memory facade end to end on real SQLite: store, supersede, batches, reads."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tulving import ArchiveReason, ConfigError, Memory, MemoryType, NotFoundError, ScopeError


def test_import_surface() -> None:
    import tulving

    assert tulving.Memory is Memory and tulving.MemoryType is MemoryType


def test_constructor_is_cheap_and_startup_is_lazy(tmp_path: Any) -> None:
    memory = Memory(tmp_path / "lazy.db", agent_id="a", embedder="hashing")
    assert not (tmp_path / "lazy.db").exists()
    memory.store("hello there", type="FACT")
    assert (tmp_path / "lazy.db").exists()
    memory.close()


def test_store_and_get_by_id_and_key(make_memory: Any) -> None:
    m = make_memory()
    entry = m.store("Use PostgreSQL for the ledger", type=MemoryType.DECISION, key="db/ledger",
                    tags=["db", "arch"], importance=0.9, metadata={"ticket": 42})
    assert m.get(entry.id) == m.get("db/ledger")
    got = m.get("db/ledger")
    assert got.content == "Use PostgreSQL for the ledger" and got.tags == ("arch", "db")
    assert got.metadata == {"ticket": 42} and got.type is MemoryType.DECISION


def test_same_key_supersedes_never_raises(make_memory: Any) -> None:
    m = make_memory()
    first = m.store("JWT tokens", type="DECISION", key="auth/strategy")
    second = m.store("Server sessions", type="DECISION", key="auth/strategy")
    third = m.store("Passkeys", type="DECISION", key="auth/strategy")
    assert m.get("auth/strategy").id == third.id
    chain = m.history("auth/strategy")
    assert [e.id for e in chain] == [third.id, second.id, first.id]
    assert chain[1].archive_reason is ArchiveReason.SUPERSEDED
    assert chain[1].superseded_by == third.id and chain[0].supersedes == second.id
    assert m.list_keys() == ["auth/strategy"]
    with pytest.raises(NotFoundError):
        m.get(first.id)  # archived: not returned as if current


def test_valid_from_sets_event_time(make_memory: Any) -> None:
    m = make_memory()
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    entry = m.store("Caroline went to a support group", type="EPISODE", valid_from=when)
    assert entry.valid_from == when and entry.created_at > when


def test_store_many_is_ordered_and_atomic(make_memory: Any) -> None:
    m = make_memory()
    items = [{"content": f"note {i}", "type": "OBSERVATION", "key": f"n/{i}"} for i in range(5)]
    entries = m.store_many(items)
    assert [e.content for e in entries] == [f"note {i}" for i in range(5)]
    bad = [{"content": "fine", "type": "FACT"}, {"content": "", "type": "FACT"}]
    with pytest.raises(Exception) as info:
        m.store_many(bad)
    assert "empty" in str(info.value)
    assert m.stats()["active"] == 5


def test_list_keys_prefix_and_forget(make_memory: Any) -> None:
    m = make_memory()
    m.store("a", type="FACT", key="proj/a")
    m.store("b", type="FACT", key="proj/b")
    m.store("c", type="FACT", key="other/c")
    assert m.list_keys("proj/") == ["proj/a", "proj/b"]
    forgotten = m.forget("proj/a")
    assert m.list_keys("proj/") == ["proj/b"]
    assert m.history("proj/a")[0].archive_reason is ArchiveReason.FORGOTTEN
    m.forget(forgotten.id, hard=True)
    with pytest.raises(NotFoundError):
        m.history("proj/a")


def test_search_finds_and_filters(make_memory: Any) -> None:
    m = make_memory()
    m.store("The staging cluster runs on Kubernetes", type="FACT", tags=["infra"])
    m.store("Decided to keep Kubernetes for production", type="DECISION", tags=["infra"])
    m.store("Lunch was pizza", type="EPISODE")
    hits = m.search("kubernetes cluster")
    assert hits and "Kubernetes" in hits[0].entry.content
    only = m.search("kubernetes", types=["DECISION"])
    assert [h.entry.type for h in only] == [MemoryType.DECISION]
    assert m.search("kubernetes", mode="lexical")[0].match_type == "lexical"


def test_tenants_do_not_see_each_other(make_memory: Any) -> None:
    alice = make_memory(agent_id="bot", user_id="alice")
    secret = alice.store("Alice's card PIN hint is her cat", type="FACT", key="pin")
    alice.close()
    bob = make_memory(agent_id="bot", user_id="bob")
    assert bob.search("cat PIN hint") == []
    assert bob.list_keys() == []
    with pytest.raises(ScopeError):
        bob.get(secret.id)
    with pytest.raises(NotFoundError):
        bob.get("pin")


def test_access_stats_are_batched_and_flushed(make_memory: Any) -> None:
    m = make_memory()
    e = m.store("counted", type="FACT", key="c")
    for _ in range(3):
        m.get("c")
    m.flush()
    assert m.ctx.storage.get(e.id).access_count == 3


def test_reopen_keeps_memories(make_memory: Any) -> None:
    m = make_memory("persist.db")
    m.store("durable fact", type="FACT", key="d")
    m.close()
    again = make_memory("persist.db")
    assert again.get("d").content == "durable fact"
    assert again.search("durable")[0].entry.key == "d"


def test_context_manager_closes(tmp_path: Any) -> None:
    with Memory(tmp_path / "cm.db", agent_id="a", embedder="hashing", vectors="exact") as m:
        m.store("x marks the spot", type="FACT")
    with pytest.raises(ConfigError):
        m.store("after close", type="FACT")
