"""The fixed workload the write-step sweeps run (``tests/faults/write_steps.py``): every
kind of write a store sees, one after another, each acknowledged on stdout once it has
returned (``ack KIND NAME``), a typed refusal said as ``err KIND NAME TYPE`` and the
workload goes on (an injected fault may fail one step and not the next).

Usage: ``python -m tests.faults._steps PATH BUNDLE`` (BUNDLE: a small bundle to import).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from tulving import Memory, TulvingError

BATCH = 10


def main() -> None:
    path, bundle = sys.argv[1], sys.argv[2]

    def step(kind: str, name: str, work: Callable[[], object]) -> None:
        try:
            work()
        except TulvingError as exc:
            print("err", kind, name, type(exc).__name__, flush=True)
        else:
            print("ack", kind, name, flush=True)

    memory = Memory(path, agent_id="faults", embedder="hashing", vectors="exact")
    try:
        memory.startup()
    except TulvingError as exc:
        print("err open - ", type(exc).__name__, flush=True)
        os._exit(0)
    print("ack open -", flush=True)
    step("store", "k1", lambda: memory.store("the first version of k1", type="FACT", key="k1"))
    step("batch", "b1", lambda: memory.store_many(
        {"content": f"b1 item {i} about kiwis", "type": "DECISION", "tags": ["b1"],
         "dedup": False} for i in range(BATCH)))
    step("remember", "r1", lambda: memory.remember(
        "User: r1 I prefer green tea in the morning.\nAssistant: noted r1."))
    step("read", "search1", lambda: memory.search("kiwis", 5))
    step("read", "get1", lambda: memory.get("k1"))
    step("read", "curate1", lambda: memory.curate("kiwis", token_budget=300))
    step("correct", "k1", lambda: memory.correct("k1", "the second version of k1"))
    step("session", "s1", lambda: (memory.start_session("s1 goal"), memory.end_session()))
    step("batch", "b2", lambda: memory.store_many(
        {"content": f"b2 item {i} about figs", "type": "DECISION", "tags": ["b2"],
         "dedup": False} for i in range(BATCH)))
    step("forget", "k2", lambda: (memory.store("k2 to forget", type="FACT", key="k2"),
                                  memory.forget("k2")))
    step("import", "i1", lambda: memory.import_bundle(bundle))
    step("forget-hard", "k3", lambda: (memory.store("k3 to erase", type="FACT", key="k3"),
                                       memory.forget("k3", hard=True)))
    step("consolidate", "c1", lambda: memory.consolidate(dry_run=False))
    step("read", "search2", lambda: memory.search("figs", 5))
    step("flush", "f1", memory.flush)
    step("close", "-", memory.close)
    os._exit(0)


if __name__ == "__main__":
    main()
