"""What TulvingHooks costs a Kairos run, against the same memory operations done by hand.

    .venv/bin/python benchmarks/kairos_hooks.py [--runs 200] [--embedder hashing|local]

(needs kairos-ai and the plugin installed, as scripts/test.sh does).

A three-step workflow (a step with an output contract, a failing step, a third one) runs
``--runs`` times: without hooks (Kairos alone), with ``TulvingHooks`` (a session, a
DECISION, a failure OBSERVATION, the workflow PROCEDURE's outcome, a run EPISODE, the
session summary), and, as the raw engine, the same Tulving calls made directly with no
Kairos run. Rounds alternate so a slow spell of the shared machine falls on all three.
The figure to read is "hook overhead / hand-made writes": the hook's own cost beyond the
writes it makes should keep it near 1.0.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from kairos import Schema, Step, Workflow
from kairos_ai_tulving import TulvingHooks

from tulving import Memory, TulvingWarning


def steps() -> list[Step]:
    return [
        Step("plan", lambda ctx: {"plan": "ship the payments service with canary releases"},
             output_contract=Schema({"plan": str})),
        Step("check", lambda ctx: 1 / 0, depends_on=["plan"]),
        Step("report", lambda ctx: "done"),
    ]


def by_hand(memory: Memory, i: int) -> None:
    """The writes TulvingHooks makes for one such run, as direct Tulving calls."""
    memory.start_session(goal="Kairos workflow by-hand")
    memory.store(f"Step 'plan' of Kairos workflow 'by-hand' decided:\nplan: ship {i}",
                 type="DECISION", key="hand/plan/decision", tags=["kairos", "decision"],
                 importance=0.7, source_type="agent_run")
    memory.store("Step 'check' of Kairos workflow 'by-hand' failed after 2 attempts: "
                 "attempt 1: ZeroDivisionError raised; attempt 2: ZeroDivisionError raised.",
                 type="OBSERVATION", key="hand/check/failure", tags=["kairos", "failure"],
                 importance=0.7, source_type="agent_run")
    memory.record_outcome("hand/procedure", False)
    memory.store(f"Kairos run of workflow 'by-hand' failed in 1 ms: plan ok; check failed "
                 f"after 2 attempts; report ok ({i}).", type="EPISODE", tags=["kairos", "run"],
                 importance=0.4, source_type="agent_run")
    memory.end_session()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--embedder", default="hashing", choices=["hashing", "local"])
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore", TulvingWarning)
    with tempfile.TemporaryDirectory() as tmp:
        vectors = "exact" if args.embedder == "hashing" else "hnsw"
        with Memory(Path(tmp) / "m.db", agent_id="bench", embedder=args.embedder,
                    vectors=vectors) as memory:
            memory.store("Kairos workflow 'by-hand': plan -> check -> report",
                         type="PROCEDURE", key="hand/procedure")
            plain = Workflow("plain", steps())
            hooked = Workflow("hooked", steps(), hooks=[TulvingHooks(memory)])
            laps: dict[str, list[float]] = {"kairos alone": [], "kairos + TulvingHooks": [],
                                            "hand-made writes": []}
            jobs: list[tuple[str, Any]] = [
                ("kairos alone", plain.run), ("kairos + TulvingHooks", hooked.run),
                ("hand-made writes", None)]
            for i in range(args.runs):
                for name, run in jobs[i % 3:] + jobs[:i % 3]:
                    start = time.perf_counter()
                    if run is None:
                        by_hand(memory, i)
                    else:
                        run()
                    laps[name].append((time.perf_counter() - start) * 1000)
            errors = list(hooked._hooks[0].errors)
            assert not errors, errors
    p50 = {name: statistics.median(values) for name, values in laps.items()}
    for name, value in p50.items():
        p95 = statistics.quantiles(laps[name], n=20)[18]
        print(f"{name:24s} p50 {value:7.2f} ms   p95 {p95:7.2f} ms")
    overhead = p50["kairos + TulvingHooks"] - p50["kairos alone"]
    print(f"hook overhead per run     {overhead:7.2f} ms")
    print(f"hook overhead / hand-made writes: {overhead / p50['hand-made writes']:.2f}x "
          f"({args.runs} runs, embedder {args.embedder})")


if __name__ == "__main__":
    main()
