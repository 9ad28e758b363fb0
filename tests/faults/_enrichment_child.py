"""A process the enrichment kill tests start and kill: it writes batches whose vectors it
defers, with a ``probe`` kind queued for every entry written (its result: one audit
record per target, so the parent counts how often each result was written), and reports
each batch once ``write`` returned (acknowledged) as a JSON line on stdout.

``python -m tests.faults._enrichment_child PATH MODE PAUSE [BATCHES]``; MODE ``write``
writes BATCHES batches and waits for the background work, ``write-close`` closes without
waiting, ``drain`` writes nothing and runs what is left.
"""

from __future__ import annotations

import json
import sys
import threading
import time

from tests.integration import test_enrichment as probes
from tulving import Memory

BATCH = 5


_said = threading.Lock()


def say(**fields: object) -> None:
    """One JSON line, whole (the worker thread says things too)."""
    with _said:
        sys.stdout.write(json.dumps(fields) + "\n")
        sys.stdout.flush()


class Probe(probes.Probe):
    """The tests' probe, saying when it prepares and when it has committed."""

    def __init__(self, memory: Memory, pause: float) -> None:
        super().__init__(memory)
        self._pause = pause

    def prepare(self, targets: list[str]) -> list[str]:
        say(preparing=targets)
        time.sleep(self._pause)
        return targets

    def after_commit(self, targets: list[str]) -> None:
        say(committed=targets)


def opened(path: str, pause: float) -> Memory:
    memory = Memory(path, agent_id="enrich", embedder="hashing", vectors="usearch")
    memory.startup()._up().enricher.register(Probe(memory, pause), on_write=True)
    memory._up().enricher.wake()  # the probe tasks a killed run left
    return memory


def main(path: str, mode: str, pause: float, batches: int) -> None:
    memory = opened(path, pause)
    writer = memory._up().writes
    if mode in ("write", "write-close"):
        for b in range(batches):
            outcomes = writer.write(
                [{"content": f"batch {b} turn {i}: notes on the {b}-{i} migration",
                  "type": "EPISODE"} for i in range(BATCH)], "store", defer_vectors=True)
            say(acked=[o.entry.id for o in outcomes])
    if mode != "write-close":
        report = memory.wait_enriched()
        say(settled=report.settled)
    memory.close()
    say(closed=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]),
         int(sys.argv[4]) if len(sys.argv) > 4 else 0)
