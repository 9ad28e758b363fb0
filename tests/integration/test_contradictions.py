"""Write-time contradiction handling: supersede, noop, update, flag (ADR-014, seed 002/003)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tulving.application.writing.contradictions import (
    CONFLICT_THRESHOLD,
    UPDATE_THRESHOLD,
    diverges,
)
from tulving.domain.errors import ValidationError
from tulving.domain.query import EntryFilter
from tulving.domain.types import ArchiveReason

DB = "The production database cluster runs PostgreSQL 15 on three dedicated nodes in Frankfurt"


def _active(m):
    return m.ctx.storage.query(EntryFilter(partitions=m.ctx.visible_partitions()))


def test_new_value_for_an_entity_attribute_supersedes_the_old_fact(make_memory, clock):
    m = make_memory()
    old = m.store("Acme has 3 products", type="FACT", entity="Acme",
                  attribute="product count", value="3")
    clock.advance(timedelta(days=3))
    new = m.store("Acme has 5 products", type="FACT", entity="Acme",
                  attribute="product count", value="5")
    gone = m.ctx.storage.get(old.id)
    assert gone.archive_reason is ArchiveReason.SUPERSEDED
    assert gone.valid_until == new.valid_from
    assert gone.superseded_by == new.id and new.supersedes == old.id
    assert [e.id for e in _active(m)] == [new.id]
    assert [h.entry.id for h in m.search("Acme products")] == [new.id]


def test_same_entity_attribute_value_again_is_a_noop(make_memory):
    m = make_memory()
    first = m.store("User prefers dark mode", type="PREFERENCE", entity="user",
                    attribute="theme", value="dark")
    again = m.store("The user likes a dark theme", type="PREFERENCE", entity="user",
                    attribute="theme", value="Dark")
    assert again.id == first.id
    assert len(_active(m)) == 1


def test_structured_facts_in_other_partitions_are_independent(make_memory):
    m = make_memory(user_id="u1")
    mine = m.store("Alice lives in Paris", type="FACT", entity="Alice", attribute="home",
                   value="Paris")
    shared = m.store("Alice lives in Rome", type="FACT", entity="Alice", attribute="home",
                     value="Rome", scope="shared")
    assert m.get(mine.id).is_active and m.get(shared.id).is_active


def test_low_trust_source_cannot_overwrite_a_high_trust_fact(make_memory):
    m = make_memory()
    trusted = m.store("The on-call phone is 555-0100", type="FACT", entity="on-call",
                      attribute="phone", value="555-0100", source_type="user_explicit")
    rumour = m.store("The on-call phone is 555-0199", type="FACT", entity="on-call",
                     attribute="phone", value="555-0199", source_type="webhook")
    trusted_now = m.get(trusted.id)
    assert trusted_now.is_active
    assert rumour.conflict_ids == (trusted.id,)
    assert trusted_now.conflict_ids == (rumour.id,)


def test_exact_restatement_is_a_noop_returning_the_existing_entry(make_memory):
    m = make_memory()
    first = m.store(DB, type="FACT")
    second = m.store("  " + DB.upper() + " ", type="FACT")
    assert second.id == first.id
    assert len(_active(m)) == 1


def test_dedup_false_stores_a_copy(make_memory):
    m = make_memory()
    first = m.store(DB, type="FACT")
    second = m.store(DB, type="FACT", dedup=False)
    assert second.id != first.id
    assert len(_active(m)) == 2
    with pytest.raises(ValidationError):
        m.store(DB, type="FACT", dedup="no")


def test_episodes_are_never_deduplicated(make_memory):
    m = make_memory()
    a = m.store("Bob: Bye!", type="EPISODE")
    b = m.store("Bob: Bye!", type="EPISODE")
    assert a.id != b.id


def test_near_identical_rewording_of_a_fact_reinforces_the_old_entry(make_memory):
    m = make_memory()
    old = m.store(DB, type="FACT")
    new = m.store(DB + ".", type="FACT")
    assert new.id == old.id and new.metadata["evidence"]["count"] == 2
    assert m.get(old.id).metadata["evidence"]["count"] == 2  # stored, not only returned
    assert [e.id for e in _active(m)] == [old.id]
    audit = m.audit_log(old.id)
    assert [r.details["decision"] for r in audit] == ["add", "reinforce"]


def test_near_identical_rewording_of_a_decision_updates_the_old_entry(make_memory):
    m = make_memory()
    v = m.ctx.embedder.embed([DB, DB + "."])
    assert float(v[0] @ v[1]) >= UPDATE_THRESHOLD
    old = m.store(DB, type="DECISION")
    new = m.store(DB + ".", type="DECISION")
    assert new.id != old.id and new.supersedes == old.id
    assert m.ctx.storage.get(old.id).archive_reason is ArchiveReason.SUPERSEDED
    assert [e.id for e in _active(m)] == [new.id]


def test_weaker_near_identical_restatement_is_a_noop(make_memory):
    m = make_memory()
    old = m.store(DB, type="FACT", source_type="user_explicit")
    weak = m.store(DB + ".", type="FACT", source_type="tool_output")
    assert weak.id == old.id


def test_undecidable_semantic_conflict_is_flagged_on_both_not_blocked(make_memory):
    m = make_memory()
    a_text = DB.replace("in Frankfurt", "in the Frankfurt region")
    b_text = a_text.replace("PostgreSQL 15", "PostgreSQL 16")
    v = m.ctx.embedder.embed([a_text, b_text])
    assert CONFLICT_THRESHOLD <= float(v[0] @ v[1]) < UPDATE_THRESHOLD
    a = m.store(a_text, type="FACT")
    b = m.store(b_text, type="FACT")
    assert b.conflict_ids == (a.id,)
    assert m.get(a.id).conflict_ids == (b.id,)
    assert m.get(a.id).is_active and m.get(b.id).is_active
    # disputed entries are marked in curated text (predicate: bool(entry.conflict_ids))
    assert bool(m.get(a.id).conflict_ids)


def test_batch_items_are_decided_against_each_other(make_memory):
    m = make_memory()
    out = m.store_many([
        {"content": "Bo is 30", "type": "FACT", "entity": "Bo", "attribute": "age", "value": "30"},
        {"content": "Bo is 31", "type": "FACT", "entity": "Bo", "attribute": "age", "value": "31"},
        {"content": DB, "type": "FACT"},
        {"content": DB, "type": "FACT"},
    ])
    assert out[1].supersedes == out[0].id
    assert m.ctx.storage.get(out[0].id).archive_reason is ArchiveReason.SUPERSEDED
    assert out[3].id == out[2].id
    assert sorted(e.id for e in _active(m)) == sorted({out[1].id, out[2].id})


def test_divergence_rule():
    assert diverges("We have 3 servers", "We have 4 servers")
    assert diverges("The cache is enabled", "The cache is not enabled")
    assert not diverges("The cache is enabled", "The cache is enabled now")


def test_plain_store_embeds_once(make_memory):
    m = make_memory()
    m.startup()
    calls = []
    real = m.ctx.embedder.embed

    def counting(texts):
        calls.append(list(texts))
        return real(texts)

    m.ctx.embedder.embed = counting
    m.store(DB, type="FACT")
    m.store(DB + ".", type="FACT")
    assert len(calls) == 2 and all(len(c) == 1 for c in calls)
