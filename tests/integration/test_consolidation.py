"""Consolidation (dry run and apply), episodic -> semantic, profile, procedural memory."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tulving.application.agent_memory.consolidation import CLUSTER_THRESHOLD
from tulving.domain.effectiveness import effectiveness
from tulving.domain.errors import ValidationError
from tulving.domain.query import EntryFilter
from tulving.domain.types import ArchiveReason, MemoryType

A = "The billing service retries failed webhooks with exponential backoff before alerting on call"
B = ("The billing service retries failed webhooks with exponential backoff before alerting "
     "the on call engineer")
OTHER = "Lunch options near the office include a ramen bar and a taqueria"


def _active(m, **kw):
    return m.ctx.storage.query(EntryFilter(partitions=m.ctx.visible_partitions(), **kw))


def _similar_pair(m, clock):
    # dedup=False: at write time B restates A and would reinforce it instead of being
    # stored (tests/integration/test_reinforcement.py); consolidation merges what
    # was stored apart (an import, an older release, dedup turned off).
    a = m.store(A, type="FACT", tags=["billing"], dedup=False)
    clock.advance(timedelta(minutes=1))
    b = m.store(B, type="FACT", tags=["webhooks"], dedup=False)
    other = m.store(OTHER, type="FACT")
    v = m.ctx.embedder.embed([A, B])
    assert CLUSTER_THRESHOLD <= float(v[0] @ v[1]) < 0.95
    return a, b, other


def test_dry_run_returns_the_plan_and_changes_nothing(make_memory, clock):
    m = make_memory()
    a, b, _other = _similar_pair(m, clock)
    plan = m.consolidate()
    assert plan["dry_run"] is True
    assert [sorted(c["ids"]) for c in plan["clusters"]] == [sorted([a.id, b.id])]
    assert plan["clusters"][0]["proposed"] == B  # keep-newest without an LLM
    assert len(_active(m)) == 3


def test_apply_merges_into_one_entry_and_archives_the_originals(make_memory, clock):
    m = make_memory()
    a, b, other = _similar_pair(m, clock)
    report = m.consolidate(dry_run=False)
    merged = m.get(report["clusters"][0]["merged_id"])
    assert set(merged.source_entry_ids) == {a.id, b.id}
    assert set(merged.tags) == {"billing", "webhooks"}
    for original in (a, b):
        gone = m.ctx.storage.get(original.id)
        assert gone.archive_reason is ArchiveReason.CONSOLIDATED
        assert gone.superseded_by == merged.id
    assert {e.id for e in _active(m)} == {merged.id, other.id}
    assert m.consolidate(dry_run=False)["clusters"] == []  # nothing left to merge


def test_filters_and_decisions_are_left_alone(make_memory, clock):
    m = make_memory()
    m.store(A, type="DECISION")
    m.store(B, type="DECISION")
    assert m.consolidate()["clusters"] == []
    _similar_pair(m, clock)
    assert m.consolidate(types=["PLAN"])["clusters"] == []
    assert len(m.consolidate(tags=["billing", "webhooks"])["clusters"]) == 1
    with pytest.raises(ValidationError):
        m.consolidate(types=["NOPE"])
    with pytest.raises(ValidationError):
        m.consolidate(dry_run="yes")


def test_recurring_episodes_become_semantic_memory(make_memory, clock):
    m = make_memory()
    first = m.store("Ann: I love jazz on rainy evenings.", type="EPISODE",
                    metadata={"speaker": "Ann"})
    clock.advance(timedelta(days=2))
    second = m.store("Ann: Honestly I love jazz on rainy evenings.", type="EPISODE",
                     metadata={"speaker": "Ann"})
    m.store("Ann asked for the weekly report", type="EPISODE")
    m.store("Ann asked for the weekly report!", type="EPISODE")
    plan = m.consolidate()
    kinds = {(s["type"], s.get("entity")) for s in plan["semantic"]}
    assert ("PREFERENCE", "Ann") in kinds and ("FACT", None) in kinds
    assert _active(m, types=(MemoryType.PREFERENCE,)) == []
    m.consolidate(dry_run=False)
    pref = _active(m, types=(MemoryType.PREFERENCE,))[0]
    assert set(pref.source_entry_ids) == {first.id, second.id}
    assert m.get(first.id).is_active  # episodes stay: they are the record
    assert m.consolidate()["semantic"] == []  # idempotent
    profile = m.profile("Ann")
    assert "Ann loves jazz on rainy evenings." in profile["text"]
    assert list(profile["preferences"]) == ["feeling about jazz on rainy evenings"]


def test_profile_of_the_user_and_disputes(make_memory):
    m = make_memory(user_id="dana")
    m.store("Dana's editor is vim", type="FACT", entity="dana", attribute="editor",
            value="vim", source_type="user_explicit")
    m.store("Dana's editor is emacs", type="FACT", entity="dana", attribute="editor",
            value="emacs", source_type="webhook")
    profile = m.profile("user")
    assert profile["facts"]["editor"]["value"] in ("vim", "emacs")
    assert sum("· disputed ·" in line for line in profile.text.splitlines()) == 2
    assert m.profile("nobody")["text"].endswith("nothing yet")
    with pytest.raises(ValidationError):
        m.profile("")


def test_procedures_rank_by_effectiveness(make_memory):
    m = make_memory()
    flaky = m.store("Deploy procedure: push straight to production and watch the logs",
                    type="PROCEDURE")
    solid = m.store("Deploy procedure: run tests, deploy to staging, then promote",
                    type="PROCEDURE")
    for _ in range(4):
        m.record_outcome(flaky.id, False)
        m.record_outcome(solid.id, True)
    assert m.get(solid.id).success_count == 4 and m.get(flaky.id).failure_count == 4
    ranked = m.procedures("deploy procedure", top_k=2)
    assert [r.entry.id for r in ranked] == [solid.id, flaky.id]
    assert effectiveness(ranked[0].entry) == pytest.approx(5 / 6)
    fact = m.store("not a procedure", type="FACT")
    with pytest.raises(ValidationError):
        m.record_outcome(fact.id, True)
    with pytest.raises(ValidationError):
        m.record_outcome(solid.id, "yes")
    assert m.get(solid.id).success_count == 4
