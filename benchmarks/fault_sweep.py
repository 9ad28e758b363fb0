"""The long fault sweep: SIGKILL at many random points of a mixed workload (batched
writes, remember and its job, forget and hard delete, consolidation, vector-index
persists, eviction), each followed by a reopen and the checks of ``tests/faults``
(the store opens, integrity and audit chain verify, the index matches the stored
vectors, every batch is whole or absent, committed batches are found by search).

Usage::

    .venv/bin/python benchmarks/fault_sweep.py --kills 200
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.faults.sweep import sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = sweep(Path(tmp), args.kills, args.seed)
    print(f"kill points tried: {result['kills']}, failures: {result['failures']} "
          f"({time.perf_counter() - began:.0f} s)")
    for problem in result["problems"]:
        print("  " + problem)
    sys.exit(1 if result["failures"] else 0)


if __name__ == "__main__":
    main()
