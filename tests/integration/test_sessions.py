"""Sessions per agent (ADR-013): explicit, implicit, shutdown and abandoned-session recovery."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tulving.domain.errors import ValidationError
from tulving.domain.query import EntryFilter
from tulving.domain.types import ArchiveReason


def test_entries_stored_inside_a_session_carry_its_id(make_memory):
    m = make_memory()
    with m.session(goal="fix the login bug") as s:
        inside = m.store("reading auth/login.py", type="OBSERVATION")
        assert m.session_id == s.id
    assert inside.session_id == s.id
    record = m.ctx.storage.get_session(s.id)
    assert record.goal == "fix the login bug"
    assert record.ended_at is not None and record.end_reason == "ended"
    assert not record.implicit


def test_session_after_an_earlier_store_is_not_blocked(make_memory):
    """Regression: a store() outside any session opened an implicit session that then
    made session() fail."""
    m = make_memory()
    before = m.store("unrelated note written first", type="FACT")
    assert before.session_id is not None  # an implicit session
    with m.session(goal="explicit work") as s:
        inside = m.store("work in the explicit session", type="OBSERVATION")
    assert s.id != before.session_id
    assert inside.session_id == s.id
    implicit = m.ctx.storage.get_session(before.session_id)
    assert implicit.implicit and implicit.ended_at is not None


def test_explicit_start_and_end(make_memory):
    m = make_memory()
    record = m.start_session("migrate the ledger")
    m.store("copied table accounts", type="OBSERVATION")
    ended = m.end_session()
    assert ended.id == record.id and ended.end_reason == "ended"
    assert m.session_id is None
    assert m.end_session() is None  # nothing left to end


def test_a_second_explicit_session_is_refused_and_changes_nothing(make_memory):
    m = make_memory()
    first = m.start_session("one")
    with pytest.raises(ValidationError):
        m.start_session("two")
    assert m.session_id == first.id
    assert m.ctx.storage.get_session(first.id).ended_at is None


def test_writes_after_the_session_open_a_fresh_implicit_session(make_memory):
    m = make_memory()
    with m.session() as s:
        m.store("in session", type="OBSERVATION")
    after = m.store("after the session", type="FACT")
    assert after.session_id not in (None, s.id)


def test_shutdown_session_ends_with_reason_shutdown(make_memory):
    m = make_memory()
    m.start_session("serve MCP")
    m.store("tool call one", type="OBSERVATION")
    m.store("tool call two", type="OBSERVATION")
    ended = m.shutdown_session()
    assert ended.end_reason == "shutdown"
    assert ended.summary_id is not None


def test_abandoned_sessions_of_this_agent_are_closed_and_summarised_at_startup(
    make_memory, clock
):
    crashed = make_memory("s.db", agent_id="worker")
    s = crashed.start_session("long task")
    crashed.store("step one done", type="OBSERVATION")
    crashed.store("step two done", type="OBSERVATION")
    crashed.close()  # the "crash": gone without ending its session
    other = make_memory("s.db", agent_id="other-agent")
    theirs = other.start_session("their task")
    other.store("their note", type="OBSERVATION")
    other.close()
    clock.advance(timedelta(hours=3))
    reopened = make_memory("s.db", agent_id="worker")
    reopened.startup()
    record = reopened.ctx.storage.get_session(s.id)
    assert record.end_reason == "abandoned" and record.ended_at is not None
    summary = reopened.ctx.storage.get(record.summary_id)
    assert summary.type.value == "SUMMARY" and "step one done" in summary.content
    # another agent's open session is untouched
    assert reopened.ctx.storage.get_session(theirs.id).ended_at is None


def test_recent_sessions_are_not_abandoned(make_memory, clock):
    first = make_memory("r.db")
    s = first.start_session("short pause")
    first.store("note", type="OBSERVATION")
    first.close()
    clock.advance(timedelta(minutes=30))
    again = make_memory("r.db")
    again.startup()
    assert again.ctx.storage.get_session(s.id).ended_at is None


def test_recent_implicit_session_is_resumed_by_the_next_process(make_memory, clock):
    first = make_memory("i.db")
    a = first.store("first invocation", type="FACT")
    first.close()
    clock.advance(timedelta(minutes=5))
    second = make_memory("i.db")
    b = second.store("second invocation", type="FACT")
    assert a.session_id == b.session_id


def test_working_memory_is_the_active_sessions_recent_turns(make_memory, clock):
    m = make_memory()
    m.store("outside any explicit session", type="FACT")
    with m.session("bounded"):
        for i in range(30):
            clock.advance(timedelta(seconds=1))
            m.store(f"turn number {i} of the session", type="EPISODE")
        recent = m.working_memory(limit=5)
        assert [e.content for e in recent] == [f"turn number {i} of the session"
                                                for i in range(25, 30)]
        with pytest.raises(ValidationError):
            m.working_memory(limit=0)
    assert m.working_memory() == [] or all(e.session_id == m.session_id
                                           for e in m.working_memory())


def test_session_scope_entries_are_visible_only_in_their_session(make_memory):
    m = make_memory()
    with m.session():
        scoped = m.store("scratch value", type="OBSERVATION", scope="session")
        assert m.ctx.storage.count(EntryFilter(partitions=m.ctx.visible_partitions(),
                                               ids=(scoped.id,))) == 1
    assert m.ctx.storage.count(EntryFilter(partitions=m.ctx.visible_partitions(),
                                           ids=(scoped.id,), include_archived=True)) == 0
    assert m.ctx.storage.get(scoped.id).archive_reason in (None, ArchiveReason.SUMMARIZED)
