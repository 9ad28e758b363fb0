"""End-of-session summaries (ADR-009) without an LLM: a bounded digest that archives."""

from __future__ import annotations

from datetime import timedelta

from tulving.application.agent_memory.summaries import MAX_SUMMARY_CHARS, summarise_session
from tulving.domain.query import EntryFilter
from tulving.domain.types import ArchiveReason, MemoryType


def _session_with_work(m, clock):
    with m.session(goal="speed up the nightly import") as s:
        notes = []
        for text in ("profiled the importer: 80% in JSON parsing",
                     "switched to orjson in a branch",
                     "import time fell from 40 to 9 minutes"):
            clock.advance(timedelta(seconds=5))
            notes.append(m.store(text, type="OBSERVATION"))
        decision = m.store("Use orjson for every import path", type="DECISION")
        fact = m.store("The nightly import runs at 02:00 UTC", type="FACT")
    return s, notes, decision, fact


def test_ending_a_session_writes_a_summary_and_archives_the_notes(make_memory, clock):
    m = make_memory()
    s, notes, decision, fact = _session_with_work(m, clock)
    summary = m.ctx.storage.get(s.summary_id)
    assert summary.type is MemoryType.SUMMARY
    assert set(summary.source_entry_ids) == {n.id for n in notes} | {decision.id, fact.id}
    assert summary.metadata["summary_of_session"] == s.id
    for note in notes:
        archived = m.ctx.storage.get(note.id)  # never deleted
        assert archived.archive_reason is ArchiveReason.SUMMARIZED
        assert archived.superseded_by == summary.id
    assert "orjson" in summary.content and "40 to 9 minutes" in summary.content


def test_decisions_are_kept_verbatim_and_quoted(make_memory, clock):
    m = make_memory()
    s, _notes, decision, fact = _session_with_work(m, clock)
    assert m.get(decision.id).content == "Use orjson for every import path"
    assert m.get(fact.id).is_active  # knowledge is not working notes
    summary = m.ctx.storage.get(s.summary_id)
    assert '"Use orjson for every import path"' in summary.content


def test_summarised_notes_leave_search_and_the_summary_answers(make_memory, clock):
    m = make_memory()
    s, notes, _d, _f = _session_with_work(m, clock)
    hits = m.search("orjson branch", top_k=10)
    ids = {h.entry.id for h in hits}
    assert s.summary_id in ids
    assert not ids & {n.id for n in notes}


def test_summary_size_is_bounded_even_for_huge_entries(make_memory, clock):
    m = make_memory()
    marker = "MARKER-" + "x" * 95_000  # five of them: ~480 KB of session
    with m.session(goal="huge") as s:
        for i in range(5):
            m.store(f"{i} {marker}", type="OBSERVATION")
        m.store("Keep the markers " + "y" * 5_000, type="DECISION")
    summary = m.ctx.storage.get(s.summary_id)
    assert len(summary.content) <= MAX_SUMMARY_CHARS
    assert len(summary.source_entry_ids) == 6


def test_summaries_are_idempotent_per_session(make_memory, clock):
    m = make_memory()
    s, _notes, _d, _f = _session_with_work(m, clock)
    record = m.ctx.storage.get_session(s.id)
    again = summarise_session(m.ctx, m._llm, record, lambda f, sid: None, clock.now())
    assert again.id == s.summary_id
    summaries = m.ctx.storage.query(EntryFilter(partitions=m.ctx.visible_partitions(),
                                                types=(MemoryType.SUMMARY,)))
    assert len(summaries) == 1


def test_a_tiny_session_gets_no_summary(make_memory):
    m = make_memory()
    with m.session() as s:
        m.store("only one note", type="OBSERVATION")
    assert s.summary_id is None
    assert m.ctx.storage.count(EntryFilter(partitions=m.ctx.visible_partitions(),
                                           types=(MemoryType.SUMMARY,))) == 0


def test_conversation_episodes_survive_the_summary(make_memory):
    m = make_memory()
    with m.session() as s:
        episodes = m.remember("Ann: I moved to Lisbon last spring.\nBo: How is the weather?")
        m.store("asked about the move", type="OBSERVATION")
    assert s.summary_id is not None
    for e in episodes:
        assert m.ctx.storage.get(e.id).is_active
