"""The long fault sweeps, with the checks of ``tests/faults`` after every scenario (the
store opens, ``PRAGMA integrity_check``, FTS5's check and the audit chain pass, every
acknowledged write is there, no batch is half written):

- ``--kills N``: SIGKILL at N random moments of a mixed workload (batched writes,
  remember and its job, forget and hard delete, consolidation, index persists, eviction);
- ``--steps``: the fixed workload of ``tests/faults/_steps.py`` killed at every write
  system call to the store's files (``--every K``: every K-th pwrite64 only), then run
  through failing-disk windows (ENOSPC and EIO on pwrite64, fdatasync, ftruncate and
  pread64, at ``--windows`` starting points each, one call and 40 calls long);
- ``--foreign``: every pair of what an application holds in the writer's process and what
  another process does to the store, each ended by a SIGKILL of the writer.

Usage::

    .venv/bin/python benchmarks/fault_sweep.py --kills 200
    .venv/bin/python benchmarks/fault_sweep.py --kills 0 --steps --foreign
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.faults.foreign import DOORS, OTHERS, scenario
from tests.faults.sweep import sweep
from tests.faults.write_steps import (
    count_writes,
    kill_points,
    make_bundle,
    problems_after,
    run_faulted,
    strace_missing,
)

#: Failing-disk windows: the call and the errors it is failed with.
FAULTED = (("pwrite64", ("ENOSPC", "EIO")), ("fdatasync", ("EIO",)),
           ("ftruncate", ("ENOSPC", "EIO")), ("pread64", ("EIO",)))


class Tally:
    """Scenarios run, kills among them, and the problems found, for one sweep."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.scenarios = self.kills = 0
        self.problems: list[str] = []
        self.began = time.perf_counter()
        self.took: float | None = None

    def add(self, what: str, problems: list[str], *, killed: bool) -> None:
        self.scenarios += 1
        self.kills += int(killed)
        self.problems += [f"{what}: {p}" for p in problems]

    def line(self) -> str:
        """The tally's line; its time is fixed at the first call (the sweep's end)."""
        if self.took is None:
            self.took = time.perf_counter() - self.began
        return (f"{self.name}: {self.scenarios} scenarios, {self.kills} kills, "
                f"{len(self.problems)} failures ({self.took:.0f} s)")


def steps(folder: Path, every: int, windows: int) -> list[Tally]:
    bundle = make_bundle(folder)
    counts = count_writes(folder, bundle)
    print(f"write calls to the store's files in one run: {counts}", flush=True)
    kills = Tally("kill at a write step")
    for i, (call, n) in enumerate(kill_points(counts, every=every)):
        path = folder / f"k{i}.db"
        said, status = run_faulted(path, bundle, f"{call}:signal=KILL:when={n}")
        kills.add(f"{call} #{n}", problems_after(path, said), killed=status in (-9, 137))
        path.unlink(missing_ok=True)
    print(kills.line(), flush=True)
    faults = Tally("failing disk (ENOSPC, EIO windows)")
    for call, errors in FAULTED:
        total = counts.get(call, 300)
        for error in errors:
            for start in range(1, total + 1, max(1, total // windows)):
                for width in (0, 40):
                    when = f"{start}..{start + width}" if width else str(start)
                    path = folder / f"f{faults.scenarios}.db"
                    said, _ = run_faulted(path, bundle, f"{call}:error={error}:when={when}")
                    faults.add(f"{call} {error} {when}", problems_after(path, said),
                               killed=False)
    print(faults.line(), flush=True)
    return [kills, faults]


def foreign(folder: Path) -> Tally:
    from tests.faults._foreign_writer import BESIDE

    tally = Tally("foreign connections")
    for beside in BESIDE:
        for other in (*OTHERS, *DOORS):
            path = folder / f"{beside}-{other}" / "memory.db"
            path.parent.mkdir()
            _, problems = scenario(path, beside, other)
            tally.add(f"{beside} / {other}", problems, killed=True)
    print(tally.line(), flush=True)
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--steps", action="store_true")
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--windows", type=int, default=6)
    parser.add_argument("--foreign", action="store_true")
    args = parser.parse_args()
    tallies: list[Tally] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.kills:
            random_kills = Tally("random kills")
            (folder / "random").mkdir()
            result = sweep(folder / "random", args.kills, args.seed)
            random_kills.scenarios = random_kills.kills = result["kills"]
            random_kills.problems = result["problems"]
            print(random_kills.line(), flush=True)
            tallies.append(random_kills)
        if args.steps:
            if strace_missing():
                sys.exit(f"--steps: {strace_missing()}")
            (folder / "steps").mkdir()
            tallies += steps(folder / "steps", args.every, args.windows)
        if args.foreign:
            (folder / "foreign").mkdir()
            tallies.append(foreign(folder / "foreign"))
    print("\n" + "\n".join(t.line() for t in tallies))
    print(f"in all: {sum(t.scenarios for t in tallies)} scenarios, "
          f"{sum(t.kills for t in tallies)} kills, "
          f"{sum(len(t.problems) for t in tallies)} failures")
    for tally in tallies:
        for problem in tally.problems[:20]:
            print("  " + problem)
    sys.exit(1 if any(t.problems for t in tallies) else 0)


if __name__ == "__main__":
    main()
