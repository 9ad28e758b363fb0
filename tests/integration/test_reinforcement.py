"""Restatements reinforce instead of piling up: a preference or fact said again adds to
the existing entry's evidence (count, last seen, sources), with no new row; the write
says so (``store(..., report=True)``, the CLI's JSON in another process), the audit
records it; contradictions still supersede, and what says another thing (numbers, a
negation, another stage) is stored apart. ``remember()`` folds a restatement read off a
later turn into the fact read off an earlier one, naming the later turn as a source."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from tests.e2e.conftest import FAST, ROOT, clean_env
from tulving import Memory
from tulving.domain.query import EntryFilter
from tulving.domain.types import ArchiveReason, MemoryType

JAZZ = "Alice likes jazz fusion, especially Snarky Puppy and Vulfpeck"


def _active(m: Memory, *types: MemoryType) -> list:
    return m.ctx.storage.query(EntryFilter(partitions=m.ctx.visible_partitions(),
                                           types=types or None))


def test_a_restated_preference_counts_as_evidence_not_as_a_row(make_memory, clock) -> None:
    m = make_memory(user_id="alice")
    first = m.store(JAZZ, type="PREFERENCE", report=True)
    assert first.outcome == "added"
    clock.advance(timedelta(days=3))
    again = m.store("Alice really likes jazz fusion, especially Vulfpeck and Snarky Puppy",
                    type="PREFERENCE", report=True)
    assert again.outcome == "reinforced" and again.entry.id == first.entry.id
    evidence = m.get(first.entry.id).metadata["evidence"]
    assert evidence["count"] == 2 and evidence["last_seen"].startswith("2026-03-04")
    assert [e.id for e in _active(m)] == [first.entry.id]
    assert m.get(first.entry.id).content == JAZZ  # the text as first said
    records = [r for r in m.audit_log(first.entry.id) if r.action == "store"]
    assert [r.details["decision"] for r in records] == ["add", "reinforce"]
    assert records[-1].details["evidence"]["count"] == 2
    assert m.verify_audit().ok
    item = m.profile().items[0]
    assert item.evidence == 2 and item.last_seen is not None
    assert "said 2 times" in m.profile().text


def test_contradictions_supersede_and_other_claims_stay_apart(make_memory) -> None:
    m = make_memory(user_id="alice")
    porto = m.store("Alice lives in Porto", type="FACT", entity="alice", attribute="city",
                    value="Porto")
    lisbon = m.store("Alice lives in Lisbon", type="FACT", entity="alice", attribute="city",
                     value="Lisbon", report=True)
    assert lisbon.outcome == "replaced" and lisbon.superseded == porto.id
    assert m.ctx.storage.get(porto.id).archive_reason is ArchiveReason.SUPERSEDED
    same = m.store("Alice lives in Lisbon", type="FACT", entity="alice", attribute="city",
                   value="Lisbon", report=True)
    assert same.outcome == "reinforced" and same.entry.id == lisbon.entry.id
    one = m.store("Alice has accumulated points for a single free night at Hilton",
                  type="FACT")
    two = m.store("Alice has accumulated points for two free nights at Hilton", type="FACT")
    started = m.store("Alice started reading Sapiens by Yuval Noah Harari", type="FACT")
    finished = m.store("Alice finished reading Sapiens by Yuval Noah Harari", type="FACT")
    assert len({one.id, two.id, started.id, finished.id}) == 4
    decision = m.store("We use Postgres for billing", type="DECISION", report=True)
    assert m.store("We use Postgres for billing", type="DECISION", report=True).outcome == (
        "unchanged") and decision.outcome == "added"


def test_remember_folds_a_later_restatement_into_the_earlier_fact(make_memory) -> None:
    m = make_memory(user_id="alice")
    m.remember("user: I have been listening to audiobooks during my daily commute.\n"
               "assistant: Nice!", wait=True)
    later = m.remember("user: By the way, I have been listening to audiobooks during my "
                       "commute.\nassistant: Great.", wait=True)
    facts = _active(m, MemoryType.FACT)
    assert len(facts) == 1
    turn = next(e for e in later if e.type is MemoryType.EPISODE and "By the way" in e.content)
    evidence = facts[0].metadata["evidence"]
    assert evidence["count"] == 2 and evidence["sources"] == [turn.id]
    assert len(_active(m, MemoryType.EPISODE)) == 4  # every turn is still kept


def test_the_cli_in_another_process_reports_the_reinforcement(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(path, agent_id="a", user_id="alice", embedder="hashing",
                vectors="exact") as memory:
        first = memory.store(JAZZ, type="PREFERENCE")
    done = subprocess.run(
        [sys.executable, "-m", "tulving.interfaces.cli.main", "store", JAZZ + ".",
         "--type", "PREFERENCE", "--path", str(path), "--agent-id", "a", "--user-id",
         "alice", "--json", *FAST],
        capture_output=True, text=True, env=clean_env(), cwd=str(ROOT), timeout=120)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["outcome"] == "reinforced" and answer["stored"]["id"] == first.id
    with Memory(path, agent_id="a", user_id="alice", embedder="hashing",
                vectors="exact") as memory:
        assert memory.get(first.id).metadata["evidence"]["count"] == 2
        assert len(_active(memory)) == 1
