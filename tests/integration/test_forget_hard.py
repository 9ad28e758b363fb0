"""``forget(hard=True)`` erases (issue 42): every version of the key goes (text, tags,
vectors, full-text rows, caches), on every storage adapter, and only the audit record
that something was erased remains. Before, the superseded version with the original text
and tags was still shown by ``history`` and by ``list_entries(include_archived=True)``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tulving import Memory, NotFoundError

FIRST = "the vault passphrase hint is Quokkaboulevard"
SECOND = "the vault passphrase hint is Wombatpromenade"
TAG = "marsupialcipher"
NEEDLES = (b"Quokkaboulevard", b"Wombatpromenade", b"quokkaboulevard", b"wombatpromenade",
           TAG.encode())


def _fill(m: Memory) -> tuple[str, str]:
    first = m.store(FIRST, type="FACT", key="vault/hint", tags=[TAG])
    m.store(SECOND, type="FACT", key="vault/hint")  # supersedes, keeps the tag
    m.correct("vault/hint", SECOND + " (corrected)")  # a third version
    derived = m.store("a fact read off the hint", type="FACT", source_entry_ids=[first.id])
    kept = m.store("the garden needs water on Tuesdays", type="FACT", key="garden")
    return derived.id, kept.id


def _assert_erased(m: Memory, derived: str, kept: str) -> None:
    with pytest.raises(NotFoundError):
        m.history("vault/hint")
    everything = m.list_entries(1000, None, include_archived=True).entries
    assert [e.id for e in everything] == [kept]
    assert derived not in {e.id for e in everything}
    assert not any(r.entry.key == "vault/hint" for r in m.search("vault passphrase hint", 10))
    assert m.search("Quokkaboulevard", 10, mode="lexical") == []
    assert m.search(TAG, 10, mode="lexical") == []
    forget = [r for r in m.audit_log() if r.action == "forget"]
    assert len(forget) == 1 and forget[0].details["hard"] is True
    assert forget[0].details["erased"] == 4  # three versions and the derived fact
    text = repr([(r.action, dict(r.details), r.input_hash) for r in m.audit_log()])
    assert "Quokka" not in text and "vault/hint" not in text
    assert m.verify_audit()["ok"]


def _holders(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_file()
                  and any(n in p.read_bytes() for n in NEEDLES))


@pytest.fixture(params=["sqlite", "sqlite-encrypted", "memory"])
def opened(request: pytest.FixtureRequest, tmp_path: Path,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Memory, Path | None]]:
    kind = request.param
    if kind == "memory":
        with Memory(":memory:", agent_id="a", embedder="hashing", vectors="exact") as m:
            yield m, None
        return
    extra: dict[str, Any] = {}
    if kind == "sqlite-encrypted":
        pytest.importorskip("sqlcipher3")
        monkeypatch.setenv("TEST_TULVING_KEY", "a passphrase for the erasure test")
        extra["encryption"] = "env:TEST_TULVING_KEY"
    with Memory(tmp_path / "m.db", agent_id="a", embedder="hashing", vectors="hnsw",
                **extra) as m:
        yield m, tmp_path


def test_forget_hard_erases_every_version(opened: tuple[Memory, Path | None]) -> None:
    m, folder = opened
    derived, kept = _fill(m)
    assert len(m.history("vault/hint")) == 3
    if folder is not None and not (folder / "m.db").read_bytes().startswith(b"SQLite"):
        pass  # encrypted: nothing to find in clear before or after
    elif folder is not None:
        m.ctx.storage.maintenance("checkpoint")
        assert _holders(folder), "the text must be on disk before (test sanity)"
    m.forget("vault/hint", hard=True)
    _assert_erased(m, derived, kept)
    if folder is not None:
        m.ctx.storage.maintenance("checkpoint")
        assert _holders(folder) == []


def test_forget_hard_by_id_of_an_old_version(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", agent_id="a", embedder="hashing") as m:
        derived, kept = _fill(m)
        oldest = m.history("vault/hint")[-1]
        m.forget(oldest.id, hard=True)
        _assert_erased(m, derived, kept)
