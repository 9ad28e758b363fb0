"""A process the remember kill test starts and kills: it remembers transcripts (each
acknowledged as a JSON line once ``remember`` returned: the turns are durable), then
lets the background work read them off, slowed down so a kill lands in the middle.

``python -m tests.faults._remember_child PATH MODE CALLS``; MODE ``remember`` remembers
CALLS transcripts and waits; ``drain`` remembers nothing and runs what is left.
"""

from __future__ import annotations

import json
import sys
import time

from tulving import Memory
from tulving.application.agent_memory import read_off_turns

TURNS = 20


def transcript(call: int) -> str:
    """Turns whose user half states a fact of its own (one read off per user turn)."""
    lines = []
    for i in range(TURNS // 2):
        lines.append(f"user: By the way, I have been collecting {call}-{i} vintage stamps "
                     f"from Lisbon since {2000 + i}.")
        lines.append(f"assistant: That sounds lovely, collection {call}-{i}.")
    return "\n".join(lines)


def main(path: str, mode: str, calls: int) -> None:
    slow = read_off_turns.ReadOffTurns.prepare

    def prepare(self: read_off_turns.ReadOffTurns, targets: list[str]) -> object:
        time.sleep(0.2)  # the kill lands while the work is under way
        return slow(self, targets)

    read_off_turns.ReadOffTurns.prepare = prepare  # type: ignore[method-assign]
    read_off_turns.ReadOffTurns.batch = 4
    memory = Memory(path, agent_id="kill", user_id="u", embedder="hashing",
                    vectors="usearch").startup()
    if mode == "remember":
        for call in range(calls):
            turns = memory.remember(transcript(call))
            print(json.dumps({"acked": [t.id for t in turns]}), flush=True)
    report = memory.wait_enriched()
    print(json.dumps({"settled": report.settled}), flush=True)
    memory.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
