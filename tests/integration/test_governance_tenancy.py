"""Tenancy at the Memory level: two identities on one SQLite file see exactly what their
identity and scopes allow, in every read path; another tenant's id is a ScopeError."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tulving import Memory, NotFoundError, ScopeError

ALICE = {"agent_id": "a1", "user_id": "alice", "workspace_id": "ws1"}
ALICE_OTHER_AGENT = {"agent_id": "a2", "user_id": "alice", "workspace_id": "ws1"}
BOB = {"agent_id": "a1", "user_id": "bob", "workspace_id": "ws1"}


@pytest.fixture
def seeded(make_memory: Callable[..., Memory]) -> dict[str, Any]:
    m = make_memory("shared.db", **ALICE)
    ids = {
        "agent": m.store("alpha agent-only note", type="FACT", key="note/agent").id,
        "personal": m.store(
            "alpha personal preference", type="PREFERENCE", scope="personal", key="note/personal"
        ).id,
        "shared": m.store(
            "alpha shared decision",
            type="DECISION",
            scope="shared",
            key="note/shared",
            tags=["team"],
        ).id,
        "workspace": m.store("alpha workspace fact", type="FACT", scope="workspace").id,
    }
    m.close()
    return ids


def _open(make_memory: Callable[..., Memory], who: dict[str, str]) -> Memory:
    return make_memory("shared.db", **who)


def test_shared_scope_is_opt_in(make_memory: Callable[..., Memory], seeded: dict[str, Any]) -> None:
    colleague = _open(make_memory, ALICE_OTHER_AGENT)
    seen = {r.entry.id for r in colleague.search("alpha", top_k=20)}
    assert seen == {seeded["personal"], seeded["shared"], seeded["workspace"]}
    with pytest.raises(ScopeError):
        colleague.get(seeded["agent"])
    with pytest.raises(NotFoundError):
        colleague.get("note/agent")  # a key of another agent's scope is simply not there
    assert colleague.get("note/shared").id == seeded["shared"]
    assert colleague.list_keys("note/") == ["note/personal", "note/shared"]
    assert colleague.stats()["active"] == 3
    colleague.close()


def test_other_tenant_sees_nothing_anywhere(
    make_memory: Callable[..., Memory], seeded: dict[str, Any], tmp_path: Path
) -> None:
    bob = _open(make_memory, BOB)
    mine = bob.store("alpha bob's own note", type="FACT", key="note/agent", scope="shared")
    for entry_id in seeded.values():
        with pytest.raises(ScopeError):
            bob.get(entry_id)
        with pytest.raises(ScopeError):
            bob.get(entry_id, as_of=datetime(2030, 1, 1, tzinfo=UTC))
        with pytest.raises(ScopeError):
            bob.forget(entry_id)
        with pytest.raises(ScopeError):
            bob.correct(entry_id, "hijacked")
        with pytest.raises(ScopeError):
            bob.review(entry_id, approve=True)
        with pytest.raises(ScopeError):
            bob.rollback_to(entry_id)
    assert bob.get("note/agent").id == mine.id  # same key, own tenant
    for mode in ("hybrid", "lexical", "semantic", "key"):
        query = "note/" if mode == "key" else "alpha"
        assert {r.entry.id for r in bob.search(query, top_k=50, mode=mode)} <= {mine.id}
    assert {
        r.entry.id for r in bob.search("alpha", top_k=50, as_of=datetime(2030, 1, 1, tzinfo=UTC))
    } == {mine.id}
    assert bob.list_keys() == ["note/agent"]
    with pytest.raises(NotFoundError):
        bob.history("note/shared")
    stats = bob.stats()
    assert stats["active"] == 1 and stats["tags"] == {}
    assert bob.health()["active"] == 1
    assert bob.verify()["checked"] == 1
    if hasattr(bob, "curate"):
        text = str(bob.curate("alpha", token_budget=2000))
        assert "alpha shared" not in text and "alpha personal" not in text
    with pytest.raises(ScopeError):
        bob.erase(user_id="alice")
    # bob's audit chain holds only bob's records: alice's ids appear only in the records
    # of bob's refused lookups (the ids he asked for), never with anything of hers
    out = io.StringIO()
    bob.export_audit(out)
    text = out.getvalue()
    records = [json.loads(line) for line in text.splitlines()]
    naming_alice = [r for r in records if any(i in json.dumps(r) for i in seeded.values())]
    assert mine.id in text and naming_alice
    assert {r["action"] for r in naming_alice} == {"refused"}
    assert all(set(r["details"]) == {"not_visible"} for r in naming_alice)
    assert not any(word in text for word in ("agent-only", "personal preference", "workspace fact"))
    assert bob.verify_audit()["ok"]
    bob.close()
    # and alice's data is all still there
    alice = _open(make_memory, ALICE)
    assert alice.stats()["active"] == 4
    assert alice.verify_audit()["ok"]
    alice.close()


def test_model_specific_scope(make_memory: Callable[..., Memory]) -> None:
    m1 = make_memory("models.db", agent_id="x", user_id="u", model_id="gpt-a")
    e = m1.store("prompting trick for model a", type="PROCEDURE", scope="model_specific")
    m1.close()
    same_model = make_memory("models.db", agent_id="y", user_id="u", model_id="gpt-a")
    assert same_model.get(e.id).id == e.id
    same_model.close()
    other_model = make_memory("models.db", agent_id="y", user_id="u", model_id="gpt-b")
    with pytest.raises(ScopeError):
        other_model.get(e.id)
    assert other_model.search("prompting trick") == []
    other_model.close()
