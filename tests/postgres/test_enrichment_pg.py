"""Enrichment on PostgreSQL, where many replicas share one store: a write queues its tasks
in the transaction that commits it (the planned commit of a keyless write included), the
replicas' workers take disjoint batches, and each result is written once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from tests.integration.test_enrichment import TURNS, Probe, deferred, probed, vectors_of
from tulving import Memory
from tulving.domain.enrichment import TaskBacklog

pytestmark = pytest.mark.postgres


@pytest.fixture
def replicas(pg_url: str, pg_schema: str) -> Iterator[Callable[[], Memory]]:
    opened: list[Memory] = []

    def make() -> Memory:
        memory = Memory(pg_url, agent_id="team", user_id="acme", embedder="hashing",
                        options={"storage": {"schema": pg_schema, "max_size": 3}})
        opened.append(memory.startup())
        return memory

    yield make
    for memory in opened:
        memory.close()


def test_a_deferred_write_on_postgres_is_enriched_by_its_worker(
        replicas: Callable[[], Memory]) -> None:
    memory = replicas()
    memory._up().enricher.stop()
    ids = deferred(memory, TURNS)
    assert memory.stats().enrichment.tasks == {"vectors": TaskBacklog(pending=len(ids))}
    assert memory.search("quarterly roadmap review", top_k=3, mode="semantic") == []
    assert memory.wait_enriched(timeout=60).settled
    assert set(vectors_of(memory, ids)) == set(ids)
    hits = memory.search("quarterly roadmap review", top_k=3, mode="semantic")
    assert ids[2] in {h.entry.id for h in hits}  # pgvector indexed them with the commit


def test_replicas_run_each_task_once(replicas: Callable[[], Memory]) -> None:
    first, second = replicas(), replicas()
    for memory in (first, second):
        memory._up().enricher.stop()
        memory._up().enricher.register(Probe(memory), on_write=True)
    written = [first.store(t, type="FACT").id for t in TURNS]  # planned commits
    # observations: a fact said again would reinforce the first replica's (no new row)
    written += [e.id for e in second.store_many({"content": f"{t} (again, longer)",
                                                 "type": "OBSERVATION"} for t in TURNS)]
    assert first.stats().enrichment.tasks["probe"] == TaskBacklog(pending=len(written))
    reports = []
    threads = [threading.Thread(target=lambda m=m: reports.append(m.wait_enriched(timeout=60)))
               for m in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert len(reports) == 2 and all(r.settled for r in reports)
    assert probed(first) == dict.fromkeys(written, 1)
