"""A process the strong-tier kill tests start and kill: it writes batches with the strong
tier configured (a hashing encoder made slow by ``PAUSE`` seconds a batch, so a kill can
land while vectors are prepared) and reports each acknowledged batch as a JSON line.

``python -m tests.faults._strong_child PATH MODE PAUSE [BATCHES]``; MODE ``write`` writes
and waits for the background work, ``write-close`` closes without waiting, ``drain``
writes nothing and runs what is left.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from tests.faults._enrichment_child import say
from tulving import Memory
from tulving.adapters.embedders.hashing import HashingEmbedder

BATCH = 5
class SlowStrong(HashingEmbedder):
    """A 64-dimension hashing encoder (another space than the fast one) that takes
    ``pause`` seconds a batch of documents."""

    def __init__(self, pause: float) -> None:
        super().__init__(dimension=64)
        self.pause = pause

    def embed(self, texts: Any) -> Any:
        if len(texts) > 1 or self.pause:
            say(preparing=len(texts))
            time.sleep(self.pause)
        return super().embed(texts)


def opened(path: str, pause: float) -> Memory:
    return Memory(path, agent_id="strong", embedder="hashing", vectors="exact",
                  options={"search": {"strong": SlowStrong(pause)}})


def main(path: str, mode: str, pause: float, batches: int) -> None:
    memory = opened(path, pause)
    memory.startup()
    if mode in ("write", "write-close"):
        for b in range(batches):
            stored = memory.store_many(
                [{"content": f"batch {b} turn {i}: notes on the {b}-{i} migration",
                  "type": "EPISODE"} for i in range(BATCH)])
            say(acked=[e.id for e in stored])
    if mode != "write-close":
        say(settled=memory.wait_enriched().settled)
    memory.close()
    say(closed=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]),
         int(sys.argv[4]) if len(sys.argv) > 4 else 0)
