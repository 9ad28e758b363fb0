"""Lazy decay, access statistics and eviction with a manual clock (no sleeping)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tulving import ArchiveReason, MemoryType
from tulving.domain.query import EntryFilter


def test_importance_decays_lazily_per_type(make_memory: Any, clock: Any) -> None:
    m = make_memory()
    obs = m.store("disk nearly full", type="OBSERVATION", importance=0.8)
    fact = m.store("the API is versioned", type="FACT", importance=0.8)
    dec = m.store("we chose postgres", type="DECISION", importance=0.8)
    pinned = m.store("never push to main", type="OBSERVATION", importance=0.8, pinned=True)
    clock.advance(timedelta(days=3))
    now = clock.now()
    got = {e.id: e for e in m.ctx.storage.get_many([obs.id, fact.id, dec.id, pinned.id])}
    assert abs(got[obs.id].importance_at(now) - 0.4) < 1e-3  # one 3-day half-life
    assert 0.76 < got[fact.id].importance_at(now) < 0.8
    assert got[dec.id].importance_at(now) == 0.8
    assert got[pinned.id].importance_at(now) == 0.8
    assert got[obs.id].importance == 0.8  # nothing rewritten in storage


def test_access_resets_decay_clock(make_memory: Any, clock: Any) -> None:
    m = make_memory()
    obs = m.store("cache warmed", type="OBSERVATION", importance=0.8, key="cache")
    clock.advance(timedelta(days=3))
    m.get("cache")
    m.search("warmed")  # not "cache warmed": a memory that is only the query is left out
    m.curate("cache", token_budget=200)
    m.flush()
    stored = m.ctx.storage.get(obs.id)
    assert stored.access_count == 3
    assert abs(stored.importance_at(clock.now()) - 0.8) < 1e-3


def test_evict_archives_faded_but_never_decisions_or_pinned(make_memory: Any, clock: Any) -> None:
    m = make_memory()
    faded = m.store("temporary build glitch", type="OBSERVATION", importance=0.3)
    fresh = m.store("current sprint goal", type="PLAN", importance=0.9)
    decision = m.store("we use trunk-based development", type="DECISION", importance=0.01)
    pinned = m.store("on-call rota lives in the wiki", type="EPISODE", importance=0.01,
                     pinned=True)
    clock.advance(timedelta(days=30))
    report = m.evict(threshold=0.1, dry_run=True)
    assert report.evicted == (faded.id,) and m.stats()["active"] == 4
    report = m.evict(threshold=0.1)
    assert report.evicted == (faded.id,)
    stored = m.ctx.storage.get(faded.id)
    assert stored.archive_reason is ArchiveReason.EVICTED
    assert {r.entry.id for r in m.search("build glitch", mode="lexical")} == set()
    # idempotent, also across a restart
    assert m.evict(threshold=0.1).evicted == ()
    m.close()
    again = make_memory()
    assert again.evict(threshold=0.1).evicted == ()
    active = {e.id for e in again.ctx.storage.query(
        EntryFilter(partitions=again.ctx.visible_partitions()))}
    assert {fresh.id, decision.id, pinned.id} <= active and faded.id not in active
    assert MemoryType.DECISION in {again.get(decision.id).type}


def test_evict_walks_every_page_once(make_memory: Any, clock: Any) -> None:
    """Pages of 1,000 by keyset: nothing skipped or examined twice across page ends."""
    m = make_memory()
    faded = m.store_many({"content": f"passing remark {i}", "type": "OBSERVATION",
                          "importance": 0.2} for i in range(2_300))
    kept = m.store_many({"content": f"standing decision {i}", "type": "DECISION",
                         "importance": 0.2} for i in range(50))
    clock.advance(timedelta(days=60))
    report = m.evict(threshold=0.1, dry_run=True)
    assert report.examined == 2_300 and len(set(report.evicted)) == 2_300
    assert set(report.evicted) == {e.id for e in faded}
    assert not set(report.evicted) & {e.id for e in kept}
