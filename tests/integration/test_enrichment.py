"""Write now, enrich later (docs/architecture.md, "Enrichment"): a write that defers its
vectors is found by full text when it returns and by vector once the worker has run;
tasks are run once, failures are parked with their error, views share their root's
worker, a reader waits for the writer's, and a store without the capability keeps its
tasks in process memory. Kills and restarts: tests/faults/test_enrichment_kills.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tulving import Memory
from tulving.adapters.storage.memory import InMemoryStorage
from tulving.domain.enrichment import TaskBacklog
from tulving.domain.errors import ConfigError, ReadOnlyError, ValidationError
from tulving.domain.records import AuditDraft
from tulving.ports.storage import EnrichmentTasks

TURNS = [f"turn {i}: the quarterly {word} review moved to Lisbon"
         for i, word in enumerate(["budget", "hiring", "roadmap", "security", "pricing",
                                   "support", "design", "latency"])]


def deferred(memory: Memory, contents: list[str]) -> list[str]:
    """Write ``contents`` as one batch whose vectors the worker computes."""
    outcomes = memory._up().writes.write(
        [{"content": c, "type": "EPISODE"} for c in contents], "store", defer_vectors=True)
    return [o.entry.id for o in outcomes]


def vectors_of(memory: Memory, ids: list[str]) -> dict[str, Any]:
    return memory._up().ctx.storage.vectors_for(ids)


class Probe:
    """A kind whose result is an audit record per target: counting them shows how often
    each task's result was written."""

    kind = "probe"
    batch = 3

    def __init__(self, memory: Memory, fail: Callable[[str], bool] = lambda t: False) -> None:
        self._ctx = memory._up().ctx
        self._fail = fail
        self.after: list[str] = []

    def prepare(self, targets: list[str]) -> list[str]:
        for target in targets:
            if self._fail(target):
                raise ValueError(f"cannot enrich {target}")
        return targets

    def commit(self, targets: list[str], prepared: list[str]) -> None:
        ctx = self._ctx
        ctx.storage.append_audit([AuditDraft(ctx.identity.tenant, ctx.clock.now(), "probe",
                                             "probe", t, "-") for t in targets])

    def after_commit(self, targets: list[str]) -> None:
        self.after.extend(targets)


def probed(memory: Memory) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in memory._up().ctx.storage.audit_records():
        if record.action == "probe" and record.entry_id is not None:
            counts[record.entry_id] = counts.get(record.entry_id, 0) + 1
    return counts


def test_a_deferred_write_is_found_by_full_text_at_once_and_by_vector_after(
        make_memory: Callable[..., Memory]) -> None:
    memory = make_memory()
    memory.startup()
    memory._up().enricher.stop()  # no worker: the tasks wait for wait_enriched()
    ids = deferred(memory, TURNS)
    assert vectors_of(memory, ids) == {}
    assert memory.stats().enrichment.tasks == {"vectors": TaskBacklog(pending=len(ids))}
    hits = memory.search("quarterly pricing review", top_k=3)
    assert hits and hits[0].entry.id == ids[4]
    assert all(h.similarity is None for h in hits)  # found by full text: no vector yet
    assert memory.search("quarterly pricing review", top_k=3, mode="semantic") == []
    report = memory.wait_enriched()
    assert report.settled and report.tasks == {}
    assert set(vectors_of(memory, ids)) == set(ids)
    assert memory.search("quarterly pricing review", top_k=1)[0].similarity is not None
    # semantic search alone finds them now: the index learned the vectors
    found = memory.search("quarterly pricing review", top_k=3, mode="semantic")
    assert ids[4] in {h.entry.id for h in found}


def test_the_worker_runs_the_tasks_in_the_background(make_memory: Callable[..., Memory]
                                                     ) -> None:
    memory = make_memory()
    ids = deferred(memory, TURNS)
    deadline = time.monotonic() + 20
    while not memory.stats().enrichment.settled and time.monotonic() < deadline:
        time.sleep(0.05)
    assert memory.stats().enrichment.settled
    assert set(vectors_of(memory, ids)) == set(ids)


def test_a_kind_on_write_runs_once_for_every_entry_written(
        make_memory: Callable[..., Memory]) -> None:
    memory = make_memory()
    probe = Probe(memory.startup())
    memory._up().enricher.register(probe, on_write=True)
    stored = [memory.store(t, type="FACT").id for t in TURNS[:5]]
    stored += [e.id for e in memory.store_many({"content": t, "type": "FACT"}
                                               for t in TURNS[5:])]
    assert memory.wait_enriched(kinds=["probe"]).settled
    assert probed(memory) == dict.fromkeys(stored, 1)
    assert sorted(probe.after) == sorted(stored)
    assert memory.wait_enriched().settled  # nothing more to do: nothing runs twice
    assert probed(memory) == dict.fromkeys(stored, 1)


def test_a_failing_task_is_parked_with_its_error_and_retried_on_request(
        make_memory: Callable[..., Memory]) -> None:
    memory = make_memory()
    broken = [True]
    storage = memory.startup()._up().ctx.storage

    def fails(target: str) -> bool:
        (entry,) = storage.get_many([target])
        return broken[0] and "fails" in entry.content

    memory._up().enricher.register(Probe(memory, fail=fails), on_write=True)
    good = memory.store("a fact that enriches", type="FACT").id
    bad = memory.store("a fact whose enrichment fails", type="FACT").id
    report = memory.wait_enriched()
    assert report.settled  # a parked task does not keep a caller waiting
    assert report.tasks == {"probe": TaskBacklog(failed=1)}
    assert probed(memory) == {good: 1}
    (failure,) = memory.enrichment_failures()
    assert (failure.kind, failure.target, failure.attempts) == ("probe", bad, 3)
    assert failure.error == f"ValueError: cannot enrich {bad}"
    broken[0] = False
    assert memory.retry_enrichment("probe") == 1
    assert memory.wait_enriched().tasks == {}
    assert probed(memory) == {good: 1, bad: 1}
    with pytest.raises(ConfigError, match="no enrichment kind 'nope'"):
        memory.retry_enrichment("nope")
    with pytest.raises(ValidationError):
        memory.wait_enriched(timeout=-1)
    with pytest.raises(ValidationError):
        memory.enrichment_failures(limit=0)


def test_views_share_their_roots_worker(make_memory: Callable[..., Memory]) -> None:
    root = make_memory()
    root.startup()
    view = root.view(agent_id="helper", user_id="ann")
    assert view._up().enricher is root._up().enricher
    ids = deferred(view, TURNS[:3])
    view.close()  # a view's close leaves the root's worker running
    assert root.wait_enriched(timeout=20).settled
    assert set(vectors_of(root, ids)) == set(ids)


def test_a_reader_waits_for_the_writers_worker(make_memory: Callable[..., Memory],
                                               tmp_path: Any) -> None:
    writer = make_memory("shared.db")
    writer.startup()
    writer._up().enricher.stop()
    ids = deferred(writer, TURNS[:4])
    reader = Memory(tmp_path / "shared.db", agent_id="agent-a", embedder="hashing",
                    vectors="exact", read_only=True)
    try:
        left = reader.wait_enriched(timeout=0.2)
        assert not left.settled and left.tasks["vectors"].pending == 4
        with pytest.raises(ReadOnlyError):
            reader.retry_enrichment()
        assert writer.wait_enriched().settled
        assert reader.wait_enriched(timeout=5).settled
        found = reader.search("quarterly hiring review", top_k=2, mode="semantic")
        assert ids[1] in {h.entry.id for h in found}
    finally:
        reader.close()


class NoTasks(InMemoryStorage):
    """The in-memory store without the ``EnrichmentTasks`` capability (a third party's
    store that has not implemented it)."""

    add_tasks = None  # type: ignore[assignment]


def test_a_store_without_the_capability_keeps_the_tasks_in_this_process() -> None:
    storage = NoTasks()
    assert not isinstance(storage, EnrichmentTasks)
    with Memory(":memory:", agent_id="a", storage=storage, embedder="hashing",
                vectors="exact") as memory:
        memory._up().enricher.stop()
        ids = deferred(memory, TURNS[:3])
        report = memory.stats().enrichment
        assert report.durable is False and report.tasks == {"vectors": TaskBacklog(pending=3)}
        assert memory.wait_enriched().settled
        assert set(vectors_of(memory, ids)) == set(ids)


def test_a_task_queued_by_a_write_that_fails_does_not_exist(
        make_memory: Callable[..., Memory]) -> None:
    memory = make_memory()
    memory.startup()._up().enricher.stop()
    with pytest.raises(ValidationError):
        memory._up().writes.write([{"content": "fine", "type": "FACT"},
                                   {"content": "", "type": "FACT"}], "store",
                                  defer_vectors=True)
    assert memory.stats().enrichment.tasks == {}
    assert memory.stats().active == 0


def test_stats_show_the_backlog_at_the_cli_door(make_memory: Callable[..., Memory]) -> None:
    from tulving.interfaces.render import stats_text

    memory = make_memory()
    memory.startup()._up().enricher.stop()
    deferred(memory, TURNS[:2])
    assert "background work: vectors 2 pending" in stats_text(memory.stats())
    memory.wait_enriched()
    assert "background work" not in stats_text(memory.stats())


def test_async_memory_waits_for_the_background_work(make_memory: Callable[..., Memory]
                                                    ) -> None:
    import anyio

    from tulving import AsyncMemory

    memory = make_memory()
    memory.startup()._up().enricher.stop()
    ids = deferred(memory, TURNS[:3])

    async def main() -> bool:
        report = await AsyncMemory.wrapping(memory).wait_enriched(timeout=20)
        return report.settled

    assert anyio.run(main)
    assert set(vectors_of(memory, ids)) == set(ids)


def test_metrics_count_the_tasks_by_kind_and_state() -> None:
    from fastapi.testclient import TestClient
    from prometheus_client.parser import text_string_to_metric_families

    from tulving.interfaces.auth.bearer_tokens import registry_for
    from tulving.interfaces.http import create_app

    memory = Memory(None, agent_id="root", storage="memory", embedder="hashing",
                    vectors="exact")
    memory.startup()._up().enricher.stop()
    deferred(memory, TURNS[:3])
    registry = registry_for(memory)
    with TestClient(create_app(memory, registry=registry), client=("127.0.0.1", 1)) as c:
        text = c.get("/metrics").text
    samples = {(s.labels["kind"], s.labels["state"]): s.value
               for family in text_string_to_metric_families(text)
               for s in family.samples if s.name == "tulving_enrichment_tasks"}
    assert samples == {("vectors", "pending"): 3, ("vectors", "running"): 0,
                       ("vectors", "failed"): 0}
    memory.close()


def test_what_is_read_off_a_views_turns_is_the_views(make_memory: Callable[..., Memory]
                                                     ) -> None:
    """The root's enricher reads off a view's turns; what it writes is owned by the view's
    identity (the user the turns are about), not the root's."""
    root = make_memory()
    ann = root.view(agent_id=root.identity.agent_id, user_id="ann")
    ann.remember("User: My locker number is 42.", wait=True)
    assert root.list_entries().entries == ()
    facts = [e for e in ann.list_entries().entries if e.type.value == "FACT"]
    assert facts and all(e.user_id == "ann" for e in facts)
