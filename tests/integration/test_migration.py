"""Imports from Mem0, Zep/Graphiti, Letta and OpenTelemetry, and exports back, on real
SQLite. The Mem0 and Graphiti fixtures were written by the real packages (mem0ai 2.2.1,
graphiti-core 0.31.2), the Letta passages by letta-client 1.12.1's ``Passage`` model
(``scripts/fixtures/``); the agent file and the OTLP trace by hand from the public
schemas (letta-client has no type for an agent file)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tulving import Memory
from tulving.application.portability.entry_codec import entry_to_record
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ForeignFormatError, ScopeError, ValidationError
from tulving.domain.query import EntryFilter
from tulving.domain.types import ArchiveReason, Scope

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "foreign"
MEM0 = FIXTURES / "mem0_export.json"
GRAPHITI = FIXTURES / "graphiti_graph.json"
LETTA = FIXTURES / "letta_agent.af"
OTLP = FIXTURES / "otel_traces.json"
PASSAGES = FIXTURES / "letta_passages.json"  # letta-client's Passage model
Make = Callable[..., Memory]


def every_entry(memory: Memory) -> list[MemoryEntry]:
    ctx = memory.ctx
    return list(ctx.storage.query(EntryFilter(partitions=ctx.visible_partitions(),
                                              include_archived=True), limit=10_000))


def by_content(memory: Memory) -> dict[str, MemoryEntry]:
    return {e.content: e for e in every_entry(memory)}


def test_mem0_export_with_history(make_memory: Make) -> None:
    memory = make_memory(user_id="alice")
    report = memory.import_from(MEM0, format="mem0")
    assert report.counts() == {"added": 6, "updated": 0, "skipped": 0, "conflicts": 0}
    got = by_content(memory)
    moved, lived = got["I moved from Porto to Lisbon"], got["I live in Porto"]
    assert moved.is_active and moved.supersedes == lived.id and lived.superseded_by == moved.id
    assert lived.archive_reason is ArchiveReason.SUPERSEDED
    assert lived.valid_until == moved.valid_from
    assert {e.id for e in memory.history(moved.key or "")} == {lived.id, moved.id}
    deleted = got["Working on the Lisbon offsite this week"]
    assert deleted.archive_reason is ArchiveReason.FORGOTTEN
    agent_memory = got["Book trains when the trip is under four hours"]
    assert agent_memory.scope is Scope.AGENT
    assert agent_memory.metadata["mem0"]["agent_id"] == "travel-agent"
    assert agent_memory.metadata["mem0"]["actor_id"] == "planner"
    peanuts = got["My daughter is allergic to peanuts"]
    assert peanuts.scope is Scope.PERSONAL and peanuts.metadata["category"] == "travel"
    assert str(peanuts.created_at.date()) == "2026-12-01"
    assert {m.kind for m in report.mapped} == {"mem0 memory", "mem0 history version",
                                                "mem0 deleted memory"}
    assert memory.search("peanut allergy", 3)[0].entry.id == peanuts.id
    again = memory.import_from(MEM0, format="mem0")
    assert again.counts() == {"added": 0, "updated": 0, "skipped": 6, "conflicts": 0}
    assert len(every_entry(memory)) == 6


def test_mem0_records_of_another_user_need_remap(make_memory: Make) -> None:
    bob = make_memory("bob.db", user_id="bob")
    with pytest.raises(ScopeError, match="remap_identity"):
        bob.import_from(MEM0, format="mem0")
    assert every_entry(bob) == []
    report = bob.import_from(MEM0, format="mem0", remap_identity=True)
    assert len(report.added) == 6
    assert {e.user_id for e in every_entry(bob)} == {"bob"}
    alice = make_memory("alice.db", user_id="alice")
    alice.import_from(MEM0, format="mem0")
    alice_ids = {e.id for e in every_entry(alice)}
    assert alice_ids.isdisjoint(set(report.added))  # ids are per tenant: never meet


def test_graphiti_graph_into_both_time_axes(make_memory: Make) -> None:
    memory = make_memory(user_id="alice")
    report = memory.import_from(GRAPHITI, format="zep")
    got = by_content(memory)
    graph = json.loads(GRAPHITI.read_text())
    old_edge = next(e for e in graph["entity_edges"] if e["expired_at"])
    old, new = got["Alice works at Acme"], got["Alice works at Globex"]
    assert (old.entity, old.attribute, old.value) == ("Alice", "WORKS_AT", "Acme")
    assert old.valid_from.isoformat().startswith(old_edge["valid_at"])
    assert old.valid_until is not None and old.valid_until.isoformat().startswith(
        old_edge["invalid_at"])
    assert old.expired_at is not None and old.expired_at.isoformat().startswith(
        old_edge["expired_at"])
    assert old.archive_reason is ArchiveReason.INVALIDATED
    assert new.is_active and new.valid_until is None and new.value == "Globex"
    episode = got["alice: I left Acme, I joined Globex last week"]
    assert new.source_entry_ids == (episode.id,)
    assert str(episode.valid_from.time()) == "08:00:00"
    assert memory.profile("Alice").facts["WORKS_AT"].content == "Alice works at Globex"
    dropped = {d.kind: d.count for d in report.dropped}
    assert dropped == {"zep fact embedding": 2, "zep entity": 1}
    assert memory.import_from(GRAPHITI, format="zep").counts()["skipped"] == 6


def test_letta_agent_file(make_memory: Make, tmp_path: Path) -> None:
    memory = make_memory(user_id="priya")
    report = memory.import_from(LETTA, format="letta")
    got = by_content(memory)
    human = got["Name: Priya. Prefers aisle seats. Vegetarian."]
    assert human.pinned and human.scope is Scope.PERSONAL and human.entity == "user"
    assert memory.profile("user").facts["human"].content == human.content
    persona = got["I am a careful trip planner who checks visa rules first."]
    assert persona.pinned and persona.key == "letta/Trip-Planner/persona"
    assert got["Does Priya need a Schengen visa?"].metadata["letta"]["read_only"] is True
    passage = got["The user's last trip to Kyoto was in April 2025"]
    assert not passage.pinned and passage.tags == ("trips",)
    assert str(passage.created_at.date()) == "2025-05-01"
    dropped = {d.kind: (d.count, d.why) for d in report.dropped}
    assert dropped["letta messages"][0] == 2 and dropped["letta block"][0] == 1
    briefing = memory.curate(None, token_budget=400).content
    assert "visa rules" in briefing  # pinned: in every briefing, as a block is in context
    assert memory.import_from(LETTA, format="letta").counts()["skipped"] == 4
    edited = json.loads(LETTA.read_text())
    edited["blocks"][1]["value"] = "Name: Priya. Prefers window seats now. Vegetarian."
    (tmp_path / "edited.af").write_text(json.dumps(edited))
    changed = memory.import_from(tmp_path / "edited.af", format="letta")
    assert changed.counts() == {"added": 0, "updated": 1, "skipped": 3, "conflicts": 0}
    assert memory.get("letta/human").content.endswith("window seats now. Vegetarian.")


def test_letta_passages_as_letta_client_writes_them(make_memory: Make) -> None:
    memory = make_memory()
    report = memory.import_from(PASSAGES, format="letta")
    assert [(m.kind, m.count) for m in report.mapped] == [("letta passage", 2)]
    passport = by_content(memory)["Priya's passport expires in March 2027"]
    assert passport.tags == ("documents", "travel")
    assert passport.metadata["source"] == "chat"
    assert passport.metadata["letta"] == {"id": "passage-6f1d0c2e", "archive_id": "archive-1"}
    assert passport.created_at.isoformat() == "2026-01-04T10:30:00+00:00"


def test_otel_trace_export_latest_write_wins(make_memory: Make) -> None:
    memory = make_memory()
    report = memory.import_from(OTLP, format="otel")
    assert sorted(by_content(memory)) == ["The customer prefers email over phone",
                                          "The customer's plan is Enterprise"]
    assert by_content(memory)["The customer's plan is Enterprise"].metadata == {
        "source": "billing"}
    assert {d.kind for d in report.dropped} == {"otel search span", "otel record (older span)"}


def _sample(memory: Memory) -> None:
    memory.store("Deploys go out on Thursdays", type="DECISION", key="deploy/day",
                 tags=["ops"], importance=0.9, pinned=True, metadata={"team": "infra"})
    memory.store("Deploys go out on Tuesdays", type="DECISION", key="deploy/day")
    memory.store("Ann prefers tea", type="PREFERENCE", entity="Ann", attribute="drink",
                 value="tea", scope="personal", confidence=0.8)
    memory.store("Rotate the keys monthly", type="PROCEDURE", pinned=True,
                 key="ops/rotate-keys")
    memory.forget(memory.store("a passing note", type="OBSERVATION").id)


def _fields(entry: MemoryEntry) -> dict[str, Any]:
    record = entry_to_record(entry)
    record.pop("signature", None)
    return record


def test_otel_round_trip_loses_nothing(make_memory: Make, tmp_path: Path) -> None:
    source = make_memory("a.db", user_id="u1")
    _sample(source)
    written = source.export_to(tmp_path / "records.json", format="otel")
    records = json.loads((tmp_path / "records.json").read_text())
    assert written.records == len(records) == 5 and written.left_out == 0
    assert all(set(r) == {"id", "content", "metadata"} for r in records)
    target = make_memory("b.db", user_id="u1")
    assert len(target.import_from(tmp_path / "records.json", format="otel").added) == 5
    assert sorted(map(_fields, every_entry(target)), key=str) == sorted(
        map(_fields, every_entry(source)), key=str)
    assert target.history("deploy/day")[0].content == "Deploys go out on Tuesdays"
    assert source.import_from(tmp_path / "records.json", format="otel").counts()[
        "skipped"] == 5


def test_af_round_trip_keeps_the_pinned_memories(make_memory: Make, tmp_path: Path) -> None:
    source = make_memory("a.db", user_id="u1")
    _sample(source)
    written = source.export_to(tmp_path / "agent.af", format="letta")
    document = json.loads((tmp_path / "agent.af").read_text())
    assert [b["label"] for b in document["blocks"]] == ["day", "rotate_keys"]
    assert document["agents"][0]["block_ids"] == ["block-0", "block-1"]
    assert written.left_out == 3 and "pinned" in (written.why_left_out or "")
    target = make_memory("b.db", user_id="u1")
    target.import_from(tmp_path / "agent.af", format="letta")
    pinned = [e for e in every_entry(source) if e.pinned and e.is_active]
    assert sorted(map(_fields, every_entry(target)), key=str) == sorted(
        map(_fields, pinned), key=str)


def test_letta_file_round_trips_through_tulving(make_memory: Make, tmp_path: Path) -> None:
    first = make_memory("a.db", user_id="priya")
    first.import_from(LETTA, format="letta")
    first.export_to(tmp_path / "again.af", format="letta")
    second = make_memory("b.db", user_id="priya")
    second.import_from(tmp_path / "again.af", format="letta")
    pinned = {e.content for e in every_entry(first) if e.pinned}
    assert {e.content for e in every_entry(second)} == pinned
    assert second.get("letta/human").scope is Scope.PERSONAL


def test_import_runs_the_write_policy(make_memory: Make, tmp_path: Path) -> None:
    (tmp_path / "pii.json").write_text(json.dumps(
        [{"id": "r1", "content": "reach Ann at ann@example.com"}]))
    memory = make_memory(policy={"pii": "redact"})
    memory.import_from(tmp_path / "pii.json", format="otel")
    (entry,) = every_entry(memory)
    assert "ann@example.com" not in entry.content


HOSTILE: list[tuple[str, str, bytes, str]] = [
    ("mem0", "truncated", MEM0.read_bytes()[:-40], "not JSON"),
    ("zep", "not UTF-8", b"\xff\xfe{\x00", "not UTF-8"),
    ("otel", "NaN", b'[{"id": "1", "content": NaN}]', "not JSON"),
    ("otel", "deep", b"[" * 100_000 + b"]" * 100_000, "deeply"),
    ("letta", "empty", b"  \n", "empty"),
    ("mem0", "wrong shape", b'{"results": [1, {"id": "x", "memory": 5}]}', "2 problem"),
    ("zep", "another format", MEM0.read_bytes(), "not a Zep"),
    ("letta", "dangling block", json.dumps({"agents": [{"name": "a", "block_ids": ["b9"]}],
                                             "blocks": []}).encode(), "lacks"),
    ("otel", "tampered entry", json.dumps([{"content": "x", "metadata": {"tulving.entry": {
        "id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "type": "FACT", "agent_id": "a",
        "partition": "evil", "created_at": "2026-01-01T00:00:00+00:00",
        "updated_at": "2026-01-01T00:00:00+00:00", "valid_from": "2026-01-01T00:00:00+00:00",
        "last_accessed_at": "2026-01-01T00:00:00+00:00"}}}]).encode(), "tampered"),
]


@pytest.mark.parametrize(("fmt", "case", "data", "says"), HOSTILE,
                         ids=[c[1] for c in HOSTILE])
def test_bad_files_are_refused_whole(make_memory: Make, fmt: str, case: str, data: bytes,
                                     says: str) -> None:
    memory = make_memory()
    memory.store("held before", type="FACT")
    before = [_fields(e) for e in every_entry(memory)]
    with pytest.raises(ForeignFormatError, match=says):
        memory.import_from(data, format=fmt)
    assert [_fields(e) for e in every_entry(memory)] == before


def test_limits_and_unknown_formats(make_memory: Make) -> None:
    memory = make_memory()
    with pytest.raises(ForeignFormatError, match="over 100 bytes"):
        memory.import_from(MEM0, format="mem0", max_bytes=100)
    with pytest.raises(ValidationError, match="unknown format 'cognee'"):
        memory.import_from(MEM0, format="cognee")
    with pytest.raises(ValidationError, match="unknown export format"):
        memory.export_to(Path("x.json"), format="mem0")
    assert every_entry(memory) == []


def test_a_failing_record_midway_writes_nothing(make_memory: Make) -> None:
    """Every record is checked before anything is written: the good ones before a bad one
    are not left behind."""
    memory = make_memory()
    records = [{"id": str(i), "content": f"record {i}"} for i in range(2500)]
    records.append({"id": "bad", "content": "x", "metadata": "not an object"})
    with pytest.raises(ForeignFormatError, match=r"records\[2500\]\.metadata"):
        memory.import_from(json.dumps(records).encode(), format="otel")
    assert every_entry(memory) == []
    assert len(memory.import_from(json.dumps(records[:-1]).encode(),
                                  format="otel", dry_run=True).added) == 2500
    assert every_entry(memory) == []


def test_async_memory_imports_and_exports(tmp_path: Path) -> None:
    import asyncio

    from tulving import AsyncMemory

    async def run() -> None:
        async with AsyncMemory(tmp_path / "a.db", agent_id="a", user_id="alice",
                               embedder="hashing") as memory:
            report = await memory.import_from(MEM0, format="mem0")
            assert len(report.added) == 6
            written = await memory.export_to(tmp_path / "out.json", format="otel")
            assert written.records == 6

    asyncio.run(run())
