"""Regressions for the safety defects of issue 23, each found by probing the public API.

Each test failed before its fix. Where a rule holds in the application but depends on
what storage returns (another agent's shared entry, a case-insensitive entity read) it
runs on every storage adapter: SQLite, in-memory and PostgreSQL. Another agent's entry
arrives through the storage port directly (a back channel), so the rule is tested
against the adapter, not against a second Memory that could not share an in-memory store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tulving import (
    ConfigError,
    Memory,
    MemoryType,
    NotFoundError,
    PolicyViolation,
    ScopeError,
    SecurityError,
    TulvingError,
)
from tulving.adapters.clock import ManualClock
from tulving.domain.entry_factory import build_entry
from tulving.domain.identity import Identity
from tulving.testing.postgres import drop_schema, new_schema_name, require_server

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ADAPTERS = ("sqlite", "memory", "postgres")


@pytest.fixture(params=ADAPTERS)
def open_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Memory]]:
    """``open_memory(agent_id, **kwargs)``: a Memory on this test's adapter."""
    adapter = str(request.param)
    opened: list[Memory] = []
    schema = None
    url = None
    if adapter == "postgres":
        url = require_server()
        schema = new_schema_name("safety")

    def make(agent_id: str = "agent-b", **kwargs: Any) -> Memory:
        kwargs.setdefault("embedder", "hashing")
        kwargs.setdefault("clock", ManualClock(T0))
        kwargs.setdefault("user_id", "u1")
        kwargs.setdefault("workspace_id", "w1")
        if adapter == "sqlite":
            m = Memory(tmp_path / "s.db", agent_id=agent_id, vectors="exact", **kwargs)
        elif adapter == "memory":
            m = Memory(None, agent_id=agent_id, storage="memory", vectors="exact", **kwargs)
        else:
            m = Memory(url, agent_id=agent_id, options={"storage": {"schema": schema}}, **kwargs)
        opened.append(m)
        return m

    yield make
    for m in opened:
        m.close()
    if url is not None and schema is not None:
        drop_schema(url, schema)


def plant(memory: Memory, owner: str, **fields: Any) -> Any:
    """Write an entry owned by agent ``owner`` (same tenant) through the storage port."""
    me = memory.ctx.identity
    other = Identity(agent_id=owner, user_id=me.user_id, workspace_id=me.workspace_id)
    fields.setdefault("type", "FACT")
    entry = build_entry(other, memory.ctx.clock.now(), fields)
    vector = memory.ctx.embedder.embed([entry.content])[0] if memory.ctx.embedder else None
    with memory.ctx.storage.transaction():
        memory.ctx.storage.write_many([(entry, vector)])
    if memory.ctx.vectors is not None and vector is not None:
        memory.ctx.vectors.add([entry.id], vector[None, :])
    return entry


def db_bytes(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())


# 1. personal data in structured fields --------------------------------------------------
def test_redact_policy_covers_extracted_facts(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", agent_id="a", embedder="hashing",
                policy={"pii": "redact"}) as m:
        written = m.remember("Bob: my phone number is +44 20 7946 0958", wait=True)
        written += m.remember("Bob: my email is ann@example.com", wait=True)
        facts = [e for e in written if e.type is MemoryType.FACT]
        assert {f.attribute for f in facts} == {"phone number", "email"}
        for e in written:
            for text in (e.content, e.value or "", e.entity or ""):
                assert "7946" not in text and "ann@" not in text and "example.com" not in text
        assert {f.value for f in facts} == {"[REDACTED:phone]", "[REDACTED:email]"}
        assert m.search("7946", mode="lexical") == []
        profile = m.profile("Bob")
        assert "7946" not in str(profile) and "example" not in str(profile)
    # the number as written: four digits alone also occur in the file's timestamps
    # (microseconds), hashes and ids, which once failed this test by chance
    data = db_bytes(tmp_path)
    assert b"7946 0958" not in data and b"ann@example" not in data


def test_an_email_address_is_extracted_whole_without_a_policy(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", agent_id="a", embedder="hashing") as m:
        facts = [e for e in m.remember("Bob: my email is ann@example.com", wait=True)
                 if e.type is MemoryType.FACT]
        assert [f.value for f in facts] == ["ann@example.com"]


def test_redact_policy_covers_every_field_of_a_store(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", agent_id="a", embedder="hashing",
                policy={"pii": "redact", "secrets": "redact"}) as m:
        e = m.store(
            "contact card", type="FACT", tags=["ann@example.com"],
            entity="ann@example.com", attribute="phone", value="+44 20 7946 0958",
            metadata={"note": "call +44 20 7946 0958", "nested": ["token=ghp_" + "a1" * 18]},
        )
        assert e.entity == "[REDACTED:email]" and e.value == "[REDACTED:phone]"
        assert e.tags == ("[REDACTED:email]",)
        assert e.metadata["note"] == "call [REDACTED:phone]"
        assert "ghp_" not in str(e.metadata["nested"])
        assert e.metadata["governance"]["redacted_fields"] == [
            "entity", "metadata", "tags", "value"]
        with pytest.raises(PolicyViolation, match="key"):
            m.store("x", type="FACT", key="people/415-555-0132")
    data = db_bytes(tmp_path)
    assert b"7946 0958" not in data and b"ann@example" not in data and b"ghp_" not in data


def test_reject_policy_refuses_personal_data_in_any_field(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", agent_id="a", embedder="hashing",
                policy={"pii": "reject"}) as m:
        with pytest.raises(PolicyViolation):
            m.store("fine", type="FACT", entity="Bob", attribute="phone",
                    value="+44 20 7946 0958")
        with pytest.raises(PolicyViolation):
            m.remember("Bob: my phone number is +44 20 7946 0958", wait=False)
        assert m.pending_jobs() == 0  # refused before a job could keep the raw text
        assert m.stats()["active"] == 0


# 2. shared entries are read-only for other agents ----------------------------------------
@pytest.mark.parametrize("scope", ["workspace", "shared", "personal"])
def test_another_agents_shared_entry_cannot_be_changed(
    open_memory: Callable[..., Memory], scope: str
) -> None:
    b = open_memory("agent-b")
    theirs = plant(b, "agent-a", content="the team uses postgres", key="team/db", scope=scope)
    assert b.get("team/db").id == theirs.id  # readable, as seed 002 says
    attempts: dict[str, Callable[[], Any]] = {
        "supersede": lambda: b.store("the team uses mysql", type="FACT", key="team/db",
                                     scope=scope),
        "correct": lambda: b.correct("team/db", "the team uses mysql"),
        "forget": lambda: b.forget(theirs.id),
        "hard delete": lambda: b.forget(theirs.id, hard=True),
    }
    for name, attempt in attempts.items():
        with pytest.raises(ScopeError, match="read-only for other agents"):
            attempt()
        current = b.ctx.storage.get(theirs.id)
        assert current is not None and current.archived_at is None, name
        assert current.content == "the team uses postgres", name
    assert [e.id for e in b.history("team/db")] == [theirs.id]


def test_another_agents_shared_fact_is_flagged_not_superseded(
    open_memory: Callable[..., Memory],
) -> None:
    b = open_memory("agent-b")
    theirs = plant(b, "agent-a", content="Bob lives in Paris", scope="workspace",
                   entity="Bob", attribute="lives in", value="Paris")
    mine = b.store("Bob lives in Rome", type="FACT", scope="workspace",
                   entity="Bob", attribute="lives in", value="Rome")
    stored = b.ctx.storage.get(theirs.id)
    assert stored is not None and stored.archived_at is None and stored.superseded_by is None
    assert theirs.id in mine.conflict_ids and mine.supersedes is None


def test_the_owner_and_a_granting_policy_may_change_shared_entries(
    open_memory: Callable[..., Memory],
) -> None:
    b = open_memory("agent-b")
    own = b.store("my shared note", type="FACT", key="notes/b", scope="shared")
    assert b.correct(own.id, "my corrected shared note").supersedes == own.id  # the owner may
    b.close()
    granted = open_memory("agent-c", policy={"shared_writes": "any_agent"})
    theirs = plant(granted, "agent-a", content="team note", key="notes/a", scope="shared")
    fixed = granted.correct("notes/a", "team note, corrected by b")
    assert fixed.supersedes == theirs.id
    granted.forget(fixed.id)
    with pytest.raises(ConfigError):
        open_memory("agent-b", policy={"shared_writes": "everyone"})


# 3. one purge path -------------------------------------------------------------------
def test_cli_purge_keeps_summary_sources_unless_forced(tmp_path: Path) -> None:
    from tulving.interfaces.cli.main import main

    path = tmp_path / "p.db"
    with Memory(path, agent_id="a", embedder="hashing") as m:
        source = m.store("turn one about the release", type="EPISODE")
        m.store("summary of the release talk", type="SUMMARY", source_entry_ids=[source.id])
        m.forget(source.id)
        lone = m.store("a stray note", type="FACT")
        m.forget(lone.id)
    common = ["--path", str(path), "--agent-id", "a", "--embedder", "hashing", "--json"]
    assert main(["maintenance", "purge", *common]) == 0
    with Memory(path, agent_id="a", embedder="hashing") as m:
        assert m.ctx.storage.get(source.id) is not None  # a summary's source stays
        assert m.ctx.storage.get(lone.id) is None
        assert "purge" in [r.action for r in m.audit_log()]
    assert main(["maintenance", "purge", "--force", *common]) == 0
    with Memory(path, agent_id="a", embedder="hashing") as m:
        assert m.ctx.storage.get(source.id) is None
        assert m.verify_audit()["ok"]


# 4. retention never evicts a DECISION or a pinned entry -----------------------------------
def test_retention_reports_a_cap_it_cannot_meet(open_memory: Callable[..., Memory]) -> None:
    m = open_memory("agent-a")
    decision = m.store("we decided to use postgres", type="DECISION")
    pinned = m.store("the on-call phone is in the drawer", type="FACT", pinned=True)
    note = m.store("a passing note", type="FACT")
    report = m.apply_retention({"agent": {"max_entries": 1, "ttl_days": 1}})
    assert report.as_dict() == {"agent": {"expired": 0, "evicted": 1, "protected": 2,
                                  "cap_unmet": 1}}
    assert m.get(decision.id).archived_at is None
    assert m.get(pinned.id).archived_at is None
    with pytest.raises(NotFoundError, match="evicted"):
        m.get(note.id)
    m.ctx.clock.advance(days=30)  # type: ignore[attr-defined]
    assert m.apply_retention({"agent": {"ttl_days": 1}})["agent"]["expired"] == 0
    assert m.get(decision.id).archived_at is None


# 5. destructive operations are audited ---------------------------------------------------
def test_evict_record_outcome_and_purge_are_audited(open_memory: Callable[..., Memory]) -> None:
    m = open_memory("agent-a")
    step = m.store("restart the worker, then clear the queue", type="PROCEDURE")
    m.record_outcome(step.id, True)
    faded = m.store("a passing remark", type="EPISODE", importance=0.01)
    m.ctx.clock.advance(days=400)  # type: ignore[attr-defined]
    assert faded.id in m.evict(0.5).evicted
    m.purge(force=True)
    actions = [(r.action, r.entry_id) for r in m.audit_log()]
    assert ("record_outcome", step.id) in actions
    assert "evict" in [a for a, _ in actions] and "purge" in [a for a, _ in actions]
    evict_record = next(r for r in m.audit_log() if r.action == "evict")
    assert faded.id in evict_record.details["ids"]
    assert m.verify_audit()["ok"]


# 6. a credential-named key hides its value everywhere it is shown -------------------------
def test_values_under_credential_keys_are_masked_on_the_way_out(tmp_path: Path) -> None:
    from tulving.interfaces import render

    with Memory(tmp_path / "k.db", agent_id="a", embedder="hashing") as m:
        e = m.store("hunter2-value-9", type="FACT", key="db/password")
        m.store("the token budget is 2000", type="FACT", key="llm/token_budget")
        curated = m.curate("db password hunter2-value-9", token_budget=300)
        assert "hunter2" not in curated.content and "[REDACTED:password]" in curated.content
        assert all("hunter2" not in c.entry.content for c in curated.entries)
        assert "2000" in m.curate("token budget", token_budget=300).content  # not a secret
        assert "hunter2" not in render.entry_line(e)
        assert "hunter2" not in str(render.entry_dict(e))
        assert m.get("db/password").content == "hunter2-value-9"  # the owner reads it raw


# 7. the error hierarchy follows the seeds ------------------------------------------------
def test_scope_error_is_not_a_security_error_and_inline_keys_are() -> None:
    assert issubclass(ScopeError, TulvingError) and not issubclass(ScopeError, SecurityError)
    with pytest.raises(SecurityError, match="inline"):
        Memory(":memory:", agent_id="a", policy={"signing_key": "k" * 32})


# 8. smaller ones -----------------------------------------------------------------------
def test_profile_subjects_match_in_any_case(open_memory: Callable[..., Memory]) -> None:
    m = open_memory("agent-a")
    m.store("User likes green tea", type="PREFERENCE", entity="User", attribute="drink",
            value="green tea")
    for subject in ("user", "User", "USER"):
        assert m.profile(subject)["preferences"]["drink"]["value"] == "green tea"


def test_semantic_scores_stay_in_the_unit_interval(tmp_path: Path) -> None:
    with Memory(tmp_path / "s.db", agent_id="a", embedder="hashing", vectors="exact") as m:
        for i in range(30):
            m.store(f"note {i} about kiwis and apples {i * 7}", type="FACT")
        for query in ("zebra crossing", "kiwis", "completely unrelated words here"):
            for r in m.search(query, mode="semantic", top_k=30):
                assert 0.0 <= r.score <= 1.0


def test_list_entries_pages_through_keyless_entries(open_memory: Callable[..., Memory]) -> None:
    m = open_memory("agent-a")
    written = [m.store(f"keyless note {i}", type="EPISODE", dedup=False) for i in range(7)]
    m.store("keyed", type="FACT", key="k/1")
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = m.list_entries(limit=3, cursor=cursor, types=["EPISODE"])
        seen += [e.id for e in page.entries]
        pages += 1
        if page.next_cursor is None:
            break
        m.store("written while paging", type="FACT")  # never shifts the pages
        cursor = page.next_cursor
    assert seen == [e.id for e in written] and pages == 3
    for bad in ({"limit": 0}, {"limit": 5000}, {"cursor": "../etc"}, {"limit": True}):
        with pytest.raises(TulvingError):
            m.list_entries(**bad)
