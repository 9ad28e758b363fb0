"""remember(): raw text to typed memories with no LLM; durable queue; idempotency."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest

from tulving import RememberJob
from tulving.domain.errors import TulvingError, ValidationError
from tulving.domain.query import EntryFilter
from tulving.domain.types import MemoryType, SourceType

TRANSCRIPT = """Caroline: Hey Mel! I love hiking in the mountains.
Melanie: My favorite color is blue. We decided to use Postgres for the club website.
Caroline: I plan to visit Paris next week.
Melanie: To deploy the site:
1. run the tests
2. build the image
3. push to production"""


def _all(m, **kw):
    return m.ctx.storage.query(EntryFilter(partitions=m.ctx.visible_partitions(), **kw))


def test_every_turn_is_kept_verbatim(make_memory):
    m = make_memory()
    out = m.remember(TRANSCRIPT, wait=True)
    turns = [e for e in out if "turn" in e.metadata]
    assert [e.content.split(":")[0] for e in turns] == ["Caroline", "Melanie", "Caroline",
                                                         "Melanie"]
    assert [e.type for e in turns] == [MemoryType.EPISODE, MemoryType.DECISION,
                                       MemoryType.PLAN, MemoryType.PROCEDURE]
    assert turns[1].content == ("Melanie: My favorite color is blue. We decided to use "
                                "Postgres for the club website.")
    assert "3. push to production" in turns[-1].content
    assert all(e.source_type is SourceType.CONVERSATION for e in out)


def test_deterministic_extraction_types_and_structure(make_memory):
    m = make_memory()
    out = m.remember(TRANSCRIPT, wait=True)
    by_type: dict[MemoryType, list] = {}
    for e in out:
        by_type.setdefault(e.type, []).append(e)
    pref = by_type[MemoryType.PREFERENCE][0]
    assert pref.entity == "Caroline" and "hiking in the mountains" in pref.content
    fact = by_type[MemoryType.FACT][0]
    assert (fact.entity, fact.attribute, fact.value) == ("Melanie", "favorite color", "blue")
    assert "Postgres" in by_type[MemoryType.DECISION][0].content
    assert "Paris" in by_type[MemoryType.PLAN][0].content
    assert "build the image" in by_type[MemoryType.PROCEDURE][0].content


def test_plain_message_uses_the_user_as_subject(make_memory):
    m = make_memory(user_id="dana")
    out = m.remember("I prefer tabs over spaces. My timezone is CET.", wait=True)
    facts = {(e.entity, e.attribute, e.value) for e in out if e.entity}
    assert ("dana", "timezone", "CET") in facts


def test_retrieval_works_over_remembered_text(make_memory):
    m = make_memory()
    m.remember(TRANSCRIPT, wait=True)
    hits = m.search("Where does Caroline want to travel?", top_k=5)
    assert any("Paris" in h.entry.content for h in hits)


def test_valid_from_stamps_the_conversation_date(make_memory):
    m = make_memory()
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    out = m.remember("Ann: I went to the support group yesterday.", valid_from=when)
    assert all(e.valid_from == when for e in out)


def test_new_fact_in_a_later_conversation_supersedes(make_memory, clock):
    m = make_memory()
    m.remember("Bo: My favorite color is green.", wait=True)
    out = m.remember("Bo: My favorite color is red now.", wait=True)
    fact = next(e for e in out if e.type is MemoryType.FACT)
    assert fact.value == "red now" and fact.supersedes is not None
    assert m.profile("Bo")["facts"]["favorite color"]["value"] == "red now"


def test_same_idempotency_key_twice_is_a_noop(make_memory):
    m = make_memory()
    first = m.remember("Ann: I love jazz.", idempotency_key="msg-1")
    again = m.remember("Ann: I love jazz.", idempotency_key="msg-1")
    assert [e.id for e in again] == [e.id for e in first]
    assert len(_all(m, types=(MemoryType.EPISODE,))) == 1


def test_idempotency_keys_are_per_agent(make_memory):
    a = make_memory("k.db", agent_id="a")
    a.remember("Ann: I love jazz.", idempotency_key="shared-key")
    a.close()
    b = make_memory("k.db", agent_id="b")
    out = b.remember("Ann: I love jazz.", idempotency_key="shared-key")
    assert out and out[0].agent_id == "b"


def test_wait_false_queues_durably_and_the_worker_runs_it(make_memory):
    m = make_memory()
    job = m.remember("Ann: I hate cold coffee.", wait=False)
    assert isinstance(job, RememberJob) and job.status in ("pending", "done")
    deadline = time.monotonic() + 10
    while m.pending_jobs() and time.monotonic() < deadline:
        time.sleep(0.05)
    m.run_jobs()
    assert job.status == "done" and job.error is None
    entries = job.entries()
    assert entries is not None and {e.id for e in entries} <= {e.id for e in _all(m)}
    assert any(e.type is MemoryType.PREFERENCE for e in entries)
    assert job.wait() == entries  # already done: the same memories, nothing run twice
    assert any(e.type is MemoryType.PREFERENCE for e in _all(m))


def test_a_job_handle_waits_by_running_the_job_itself(make_memory):
    m = make_memory()
    m.startup()
    m._jobs.wake = lambda: None  # no worker: only the handle can run it
    job = m.remember("Ann: My favorite color is green.", wait=False, idempotency_key="k1")
    assert job.status == "pending" and job.entries() is None
    assert m.pending_jobs() == 1
    entries = job.wait()
    assert job.status == "done" and m.pending_jobs() == 0
    assert [e.content for e in entries if e.type is MemoryType.EPISODE] == [
        "Ann: My favorite color is green."]
    # the same key again hands back the same job, already done
    again = m.remember("Ann: My favorite color is green.", wait=False, idempotency_key="k1")
    assert again.id == job.id and again.status == "done"


def test_a_failed_job_says_why_and_wait_raises(make_memory):
    m = make_memory()
    m.startup()
    m._jobs.wake = lambda: None
    job = m.remember("Ann: a note that is fine when it is queued", wait=False)
    m.policy = attrs.evolve(m.policy, max_chars=10)  # ...and too long when it runs
    with pytest.raises(TulvingError):
        job.wait()
    assert job.status == "failed" and job.error
    with pytest.raises(ValidationError, match="failed"):
        job.wait()
    assert m.pending_jobs() == 0  # finished as failed, never retried forever


def test_extracted_facts_name_the_turn_they_came_from(make_memory):
    m = make_memory()
    out = m.remember(TRANSCRIPT, wait=True)
    turns = {e.id: e for e in out if e.type is not MemoryType.PREFERENCE
             and e.entity is None}
    facts = [e for e in out if e.entity is not None]
    assert facts
    for fact in facts:
        assert len(fact.source_entry_ids) == 1 and fact.source_entry_ids[0] in turns
        said = turns[fact.source_entry_ids[0]].content
        assert said.startswith(f"{fact.entity}:")  # the speaker's own turn


def test_a_fact_and_the_turn_it_came_from_take_one_search_slot(make_memory):
    m = make_memory()
    out = m.remember("Melanie: My favorite color is blue, like the sea at dawn.", wait=True)
    fact = next(e for e in out if e.entity is not None)
    turn = next(e for e in out if e.id == fact.source_entry_ids[0])
    hits = [r.entry.id for r in m.search("Melanie favorite color blue", 5)]
    assert turn.id in hits and fact.id not in hits
    # a fact whose turn is gone keeps its own place
    m.forget(turn.id)
    assert fact.id in [r.entry.id for r in m.search("Melanie favorite color blue", 5)]


@pytest.mark.parametrize("bad", [None, "", "   ", 42, b"bytes"])
def test_bad_text_is_rejected_and_changes_nothing(make_memory, bad):
    m = make_memory()
    with pytest.raises(ValidationError):
        m.remember(bad)
    assert _all(m) == []
    assert m.pending_jobs() == 0


def test_bad_options_are_rejected(make_memory):
    m = make_memory()
    with pytest.raises(ValidationError):
        m.remember("hello", source_type="gossip")
    with pytest.raises(ValidationError):
        m.remember("hello", valid_from=datetime(2023, 1, 1))  # naive
    with pytest.raises(ValidationError):
        m.remember("hello", idempotency_key="")
    assert _all(m) == []


CHILD = textwrap.dedent("""
    import os, signal, sys
    from datetime import datetime, UTC
    from tulving import Memory
    m = Memory(sys.argv[1], agent_id="crasher", embedder="hashing", vectors="exact")
    m.startup()
    m._jobs.wake = lambda: None  # keep the worker idle so the jobs are surely pending
    for i in range(20):
        m.remember(f"Ann: My lucky number {i} is {i * 7}. I love topic{i}.", wait=False,
                   idempotency_key=f"job-{i}")
    print("queued", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_kill_9_after_queueing_loses_no_job(tmp_path: Path):
    db = tmp_path / "crash.db"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(db)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert proc.stdout.strip() == "queued"
    from tulving import Memory

    with Memory(db, agent_id="crasher", embedder="hashing", vectors="exact") as m:
        m.run_jobs()
        assert m.pending_jobs() == 0
        episodes = _all(m, types=(MemoryType.EPISODE,))
        assert sorted(int(e.content.split()[4]) for e in episodes) == list(range(20))
        # idempotency survives the crash: re-sending a key does not duplicate
        again = m.remember("Ann: My lucky number 3 is 21. I love topic3.",
                           idempotency_key="job-3")
        assert len(_all(m, types=(MemoryType.EPISODE,))) == 20
        assert {e.id for e in again} <= {e.id for e in _all(m)}
        assert json.dumps(m.stats()["llm"])  # serialisable, includes jobs_pending
