"""Bitemporal reads, corrections, rollback, retention and purge on SQLite and in memory."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tulving import ArchiveReason, Memory, NotFoundError, SourceType, ValidationError
from tulving.adapters.clock import ManualClock

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "memory"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    storage = str(request.param)
    m = Memory(
        tmp_path / "h.db" if storage == "sqlite" else None,
        agent_id="a",
        storage=storage,
        embedder="hashing",
        vectors="exact",
        clock=ManualClock(T0),
    )
    yield m
    m.close()


def clock(m: Memory) -> ManualClock:
    c = m.ctx.clock
    assert isinstance(c, ManualClock)
    return c


def test_as_of_get_and_search(memory: Memory) -> None:
    v1 = memory.store("the database is postgres 14", type="FACT", key="db/version")
    t1 = clock(memory).advance(hours=1)
    v2 = memory.store("the database is postgres 16", type="FACT", key="db/version")
    t2 = clock(memory).advance(hours=1)
    memory.forget(v2.id)
    t3 = clock(memory).advance(hours=1)
    assert memory.get("db/version", as_of=t1).id == v1.id
    assert memory.get("db/version", as_of=t2).id == v2.id
    with pytest.raises(NotFoundError):
        memory.get("db/version", as_of=t3)
    with pytest.raises(NotFoundError):
        memory.get("db/version", as_of=T0 - timedelta(days=1))
    assert memory.get(v1.id, as_of=t1).content == v1.content
    with pytest.raises(NotFoundError):
        memory.get(v1.id, as_of=t2)  # superseded by then
    for mode in ("hybrid", "lexical", "semantic"):
        assert [r.entry.id for r in memory.search("database postgres", mode=mode, as_of=t1)] == [
            v1.id
        ]
        assert [r.entry.id for r in memory.search("database postgres", mode=mode, as_of=t2)] == [
            v2.id
        ]
        assert memory.search("database postgres", mode=mode, as_of=t3) == []
    assert memory.search("database postgres") == []
    with pytest.raises(ValidationError):
        memory.get("db/version", as_of=datetime(2026, 1, 1))  # naive


def test_correction_replaces_and_never_resurfaces(memory: Memory) -> None:
    original = memory.store(
        "Alice lives in Lyon",
        type="FACT",
        key="alice/city",
        tags=["people"],
        importance=0.8,
        source_type="conversation",
    )
    before = clock(memory).advance(minutes=5)
    fixed = memory.correct("alice/city", "Alice lives in Paris", confidence=0.9)
    assert fixed.key == "alice/city" and fixed.source_type is SourceType.CORRECTION
    assert fixed.supersedes == original.id and original.id in fixed.related_to
    assert fixed.tags == ("people",) and fixed.importance == 0.8 and fixed.confidence == 0.9
    assert fixed.trust == SourceType.CORRECTION.default_trust
    old = memory.history("alice/city")[-1]
    assert old.id == original.id and old.archive_reason is ArchiveReason.CORRECTED
    assert old.superseded_by == fixed.id
    with pytest.raises(NotFoundError, match=f"corrected by {fixed.id}"):
        memory.get(original.id)
    assert memory.get("alice/city").id == fixed.id
    for mode in ("hybrid", "lexical", "semantic"):
        assert original.id not in {r.entry.id for r in memory.search("Alice lives Lyon", mode=mode)}
    assert memory.list_keys() == ["alice/city"]
    if hasattr(memory, "curate"):
        assert "Lyon" not in str(memory.curate("where does Alice live", token_budget=500))
    # only time travel to before the correction shows the original
    assert memory.get("alice/city", as_of=before).id == original.id
    assert [r.entry.id for r in memory.search("Alice Lyon", mode="lexical", as_of=before)] == [
        original.id
    ]
    # a correction cannot change the key or claim another source
    with pytest.raises(ValidationError):
        memory.correct("alice/city", "x", key="other")
    with pytest.raises(ValidationError):
        memory.correct("alice/city", "x", source_type="user_explicit")
    with pytest.raises(NotFoundError):
        memory.correct(original.id, "again")  # the original is no longer current
    assert memory.stats()["active"] == 1


def test_correction_rejected_by_policy_changes_nothing(memory: Memory) -> None:
    original = memory.store("the plan is A", type="PLAN", key="plan")
    with pytest.raises(Exception, match="private"):
        memory.correct("plan", "<private>nothing public</private>")
    assert memory.get("plan").id == original.id
    assert memory.get(original.id).archived_at is None


def test_rollback_to_entry_and_time(memory: Memory) -> None:
    base = memory.store("config v1", type="FACT", key="config")
    keep = memory.store("unrelated fact", type="FACT")
    mark = clock(memory).advance(minutes=1)
    v2 = memory.store("config v2", type="FACT", key="config")
    extra = memory.store("written after the mark", type="OBSERVATION")
    v3 = memory.store("config v3", type="FACT", key="config")
    after_v2 = v2.created_at + timedelta(microseconds=1)
    report = memory.rollback_to(keep.id)
    assert set(report["rolled_back"]) == {v2.id, extra.id, v3.id}
    assert report["restored"] == [base.id]
    assert memory.get("config").id == base.id
    assert {r.entry.id for r in memory.search("config fact written", top_k=20)} == {
        base.id,
        keep.id,
    }
    for gone in (v2, v3, extra):
        with pytest.raises(NotFoundError):
            memory.get(gone.id)
        # rolled-back entries are hidden from time travel too
        with pytest.raises(NotFoundError):
            memory.get(gone.id, as_of=after_v2)
    assert memory.get("config", as_of=after_v2).id == base.id
    assert memory.health()["rolled_back"] == 3
    # kept for the audit
    rolled = [e for e in memory.history("config") if e.archive_reason is ArchiveReason.ROLLED_BACK]
    assert {e.id for e in rolled} == {v2.id, v3.id}
    # rolling back to a time
    v4 = memory.store("config v4", type="FACT", key="config")
    assert memory.rollback_to(mark)["rolled_back"] == [v4.id]
    assert memory.get("config").id == base.id
    with pytest.raises(ValidationError):
        memory.rollback_to(clock(memory).now() + timedelta(days=1))


def test_retention_by_scope(memory: Memory) -> None:
    old = memory.store("old agent note", type="FACT")
    pinned = memory.store("pinned forever", type="FACT", pinned=True)
    shared_old = memory.store("old shared note", type="FACT", scope="shared")
    clock(memory).advance(days=40)
    recent = [memory.store(f"recent note {i}", type="FACT") for i in range(4)]
    report = memory.apply_retention({"agent": {"ttl_days": 30, "max_entries": 3}})
    # the cap counts the pinned entry, which stays: two of the four recent ones make room
    assert report.as_dict() == {"agent": {"expired": 1, "evicted": 2, "protected": 1}}
    with pytest.raises(NotFoundError, match="expired"):
        memory.get(old.id)
    for gone in recent[:2]:
        with pytest.raises(NotFoundError, match="evicted"):
            memory.get(gone.id)
    assert memory.get(pinned.id).id == pinned.id  # pinned entries are exempt
    assert memory.get(shared_old.id).id == shared_old.id  # other scope untouched
    assert memory.apply_retention({"*": {"ttl_days": 30}}).as_dict() == {
        "*": {"expired": 1, "evicted": 0, "protected": 1}}
    for bad in (
        {},
        {"agent": {"ttl_days": -1}},
        {"nope": {"ttl_days": 1}},
        {"agent": {"max_entries": 1.5}},
        {"agent": {"forever": True}},
    ):
        with pytest.raises(ValidationError):
            memory.apply_retention(bad)  # type: ignore[arg-type]


def test_purge_keeps_what_audit_and_chains_need(memory: Memory) -> None:
    chain_a = memory.store("v1", type="FACT", key="k")
    chain_b = memory.store("v2", type="FACT", key="k")
    lone = memory.store("forget me", type="FACT")
    memory.forget(lone.id)
    mistake = memory.store("mistake", type="FACT")
    memory.rollback_to(lone.id)  # rolls back `mistake` only
    assert memory.get("k").id == chain_b.id
    assert memory.purge(dry_run=True).as_dict() == {
        "purged": 0, "kept_for_audit": 2, "matched": 1, "by_reason": {"forgotten": 1},
        "dry_run": True}
    assert memory.ctx.storage.get(lone.id) is not None  # a preview deletes nothing
    report = memory.purge()
    assert (report.purged, report.kept_for_audit) == (1, 2)  # chain_a, mistake kept
    assert memory.ctx.storage.get(lone.id) is None
    assert memory.ctx.storage.get(chain_a.id) is not None
    assert memory.ctx.storage.get(mistake.id) is not None
    assert memory.purge(force=True)["purged"] == 2
    assert memory.ctx.storage.get(chain_a.id) is None
    actions = [r.action for r in memory.audit_log()]
    assert actions.count("purge") == 2 and "rollback" in actions
