"""The background work at the CLI door, from another process: ``tulving stats`` shows
what derives from the writes and is not written yet, and a writer that opens the store
runs what a closed one left."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.e2e.conftest import FAST
from tulving import Memory


def test_stats_show_the_backlog_a_closed_writer_left(tulving: Callable[..., Any],
                                                     store: str) -> None:
    memory = Memory(store, agent_id="e2e", embedder="hashing", vectors="exact")
    memory.startup()._up().enricher.stop()  # nothing runs: the tasks stay for the next open
    memory._up().writes.write([{"content": f"note {i} on the staging rollout",
                                "type": "EPISODE"} for i in range(3)], "store",
                              defer_vectors=True)
    memory.close()

    shown = tulving("--path", store, "--agent-id", "e2e", *FAST, "stats")
    assert shown.code == 0, shown
    assert "background work: vectors 3 pending" in shown.out
    as_json = tulving("--path", store, "--agent-id", "e2e", *FAST, "stats", "--json")
    assert as_json.json()["enrichment"] == {
        "tasks": {"vectors": {"pending": 3, "running": 0, "failed": 0}}, "durable": True}

    with Memory(store, agent_id="e2e", embedder="hashing", vectors="exact") as writer:
        assert writer.wait_enriched(timeout=30).settled  # its worker took them at open
    after = tulving("--path", store, "--agent-id", "e2e", *FAST, "stats", "--json")
    assert after.json()["enrichment"] == {"tasks": {}, "durable": True}
    found = tulving("--path", store, "--agent-id", "e2e", *FAST, "search",
                    "staging rollout", "--mode", "semantic", "--json")
    assert found.code == 0, found
    assert len(found.json()["results"]) == 3  # by vector: the worker wrote them
