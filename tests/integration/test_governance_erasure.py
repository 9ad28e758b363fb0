"""Erasure leaves no byte of the erased text in the store's files; the audit keeps a
content-free record; other tenants are untouched."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tulving import Memory, NotFoundError, ScopeError, ValidationError
from tulving.adapters.clock import ManualClock

SECRET = "Xylophonist Quixotically Zanzibarian"
TOKENS = (b"xylophon", b"quixot", b"zanzibar", b"Xylophon", b"Quixot", b"Zanzibar")


def _open(tmp_path: Path, **who: str | None) -> Memory:
    return Memory(
        tmp_path / "e.db",
        embedder="hashing",
        vectors="hnsw",
        clock=ManualClock(datetime(2026, 6, 1, tzinfo=UTC)),
        **who,
    )  # type: ignore[arg-type]


def _store_bytes(tmp_path: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in tmp_path.iterdir() if f.is_file()}


def _holders(tmp_path: Path) -> list[str]:
    found = []
    for name, data in _store_bytes(tmp_path).items():
        if any(t in data for t in TOKENS):
            found.append(name)
    return found


def test_erase_user_scrubs_every_file(tmp_path: Path) -> None:
    alice = _open(tmp_path, agent_id="a1", user_id="alice", workspace_id="ws")
    first = alice.store(f"{SECRET} is the diagnosis", type="FACT", key="health")
    alice.store(f"{SECRET} updated diagnosis", type="FACT", key="health")  # supersedes
    gone = alice.store(f"forgotten {SECRET}", type="OBSERVATION")
    alice.forget(gone.id)
    shared = alice.store(f"shared {SECRET}", type="FACT", scope="shared", tags=["zanzibarian"])
    alice.search("xylophonist diagnosis")
    alice.close()
    colleague = _open(tmp_path, agent_id="a2", user_id="alice", workspace_id="ws")
    colleague.store(
        "summary of the case", type="SUMMARY", source_entry_ids=[shared.id], scope="shared"
    )
    colleague.close()
    bob = _open(tmp_path, agent_id="b1", user_id="bob", workspace_id="ws")
    bob_entry = bob.store("bob keeps his notes about gardening", type="FACT", key="garden")
    derived = bob.store(
        "bob's digest mentions nothing personal", type="SUMMARY", source_entry_ids=[first.id]
    )
    bob.close()
    assert _holders(tmp_path), "the text must be on disk before erasure (test sanity)"

    alice = _open(tmp_path, agent_id="a1", user_id="alice", workspace_id="ws")
    with pytest.raises(ScopeError):
        alice.erase(user_id="bob")
    with pytest.raises(ValidationError):
        alice.erase(user_id="alice", agent_id="a1")
    report = alice.erase(user_id="alice")
    assert report["deleted"] == 6 and report["derived"] == 1  # 5 of alice's + bob's digest
    assert alice.stats()["active"] == 0
    assert alice.search("xylophonist") == []
    with pytest.raises(NotFoundError):
        alice.get(first.id)
    erase_record = next(r for r in alice.audit_log() if r.action == "erase")
    assert erase_record.details["entries"] == 5
    assert "alice" not in str(dict(erase_record.details))
    assert alice.verify_audit()["ok"]
    alice.close()

    assert _holders(tmp_path) == [], "erased text is still in the store files"
    bob = _open(tmp_path, agent_id="b1", user_id="bob", workspace_id="ws")
    assert bob.get("garden").id == bob_entry.id
    assert [r.entry.id for r in bob.search("gardening notes", mode="semantic")] == [bob_entry.id]
    with pytest.raises(NotFoundError):
        bob.get(derived.id)  # derived from erased data: erased too
    bob.close()


def test_erase_agent_and_workspace(tmp_path: Path) -> None:
    a1 = _open(tmp_path, agent_id="a1", user_id="u", workspace_id="ws")
    a1.store("agent one note", type="FACT")
    a1.close()
    a2 = _open(tmp_path, agent_id="a2", user_id="u", workspace_id="ws")
    kept = a2.store("agent two note", type="FACT", scope="shared")
    assert a2.erase(agent_id="a1")["deleted"] == 1
    assert [r.entry.id for r in a2.search("note", top_k=10)] == [kept.id]
    with pytest.raises(ScopeError):
        a2.erase(workspace_id="ws")  # a user identity cannot wipe the workspace
    a2.close()
    admin = _open(tmp_path, agent_id="admin", workspace_id="ws")
    assert admin.erase(workspace_id="ws")["deleted"] == 1
    admin.close()
