"""Start-up cost: ``import tulving``, ``tulving --help`` and the first answer, apart.

Usage::

    .venv/bin/python benchmarks/startup.py                    # a 2,000-memory store made here
    .venv/bin/python benchmarks/startup.py --store PATH       # an existing store (scale_1m's)
    .venv/bin/python benchmarks/startup.py --runs 9

Each case runs in fresh processes, beside a bare interpreter and ``import numpy`` in the
same run: the median wall time and the median CPU time (user + system of the child), and
each as a ratio to ``import numpy``. CPU time is the figure to read on a shared machine:
wall time there is mostly waiting for a core. Bytecode is cached in a private folder
first (``PYTHONPYCACHEPREFIX``), so the figures are those of an installed package, not
of compiling the sources on every start (``PYTHONDONTWRITEBYTECODE`` may be set).

* ``import tulving``: the package alone (each public name loads on first use);
* ``from tulving import Memory``: the facade (its services load when a Memory starts);
* ``tulving --help``: the command line's parser, no store;
* ``first answer``: import, open the store (hashing embedder, the default index), one
  hybrid search, as ``scale_1m.py``'s cold open does.

Targets: ``import tulving`` at most 2x ``import numpy``; the first answer at
200,000 memories at most 0.5 s (``scale_1m.py --entries 200000`` prints it too).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIRST_ANSWER = """
import sys
from tulving import Memory
with Memory(sys.argv[1], agent_id="bench", embedder="hashing") as memory:
    memory.search("deploy schedule for the release", top_k=10)
"""


def _env(cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TULVING_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def timed(argv: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``argv`` run ``runs`` times in fresh processes."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        subprocess.run(argv, env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - began)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def cases(store: Path | None) -> list[tuple[str, list[str]]]:
    python = sys.executable
    cli = str(Path(python).with_name("tulving"))
    found = [("bare interpreter", [python, "-c", "pass"]),
             ("import numpy", [python, "-c", "import numpy"]),
             ("import tulving", [python, "-c", "import tulving"]),
             ("from tulving import Memory", [python, "-c", "from tulving import Memory"]),
             ("tulving --help", [cli, "--help"])]
    if store is not None:
        found.append(("first answer", [python, "-c", FIRST_ANSWER, str(store)]))
    return found


def measure(store: Path | None, runs: int = 5) -> dict[str, tuple[float, float]]:
    """Every case's (wall, CPU) seconds, after one warm-up run of each (bytecode)."""
    with tempfile.TemporaryDirectory(prefix="tulving-pyc-") as cache:
        env = _env(cache)
        chosen = cases(store)
        for _, argv in chosen:  # write the bytecode cache, load the files into memory
            subprocess.run(argv, env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        return {name: timed(argv, env, runs) for name, argv in chosen}


def report(figures: dict[str, tuple[float, float]]) -> list[str]:
    numpy_wall, numpy_cpu = figures["import numpy"]
    lines = [f"  {'start-up (fresh processes)':28s} {'wall s':>8s} {'x numpy':>8s} "
             f"{'CPU s':>8s} {'x numpy':>8s}"]
    for name, (wall, cpu) in figures.items():
        lines.append(f"  {name:28s} {wall:8.3f} {wall / numpy_wall:8.2f} {cpu:8.3f} "
                     f"{cpu / numpy_cpu:8.2f}")
    wall, cpu = figures["import tulving"]
    ok = cpu <= 2 * numpy_cpu
    lines.append(f"  import tulving {cpu / numpy_cpu:.2f}x import numpy by CPU "
                 f"[{'ok ' if ok else 'MISS'} <= 2x]")
    return lines


def _small_store(folder: Path) -> Path:
    sys.path.insert(0, str(Path(__file__).parent))
    from _corpus import realistic_texts

    from tulving import Memory

    path = folder / "startup.db"
    with Memory(path, agent_id="bench", embedder="hashing") as memory:
        memory.store_many({"content": t, "type": "FACT"} for t in realistic_texts(2000))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=None,
                        help="an existing store for the first answer (default: make one)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="tulving-startup-") as tmp:
        store = args.store or _small_store(Path(tmp))
        figures = measure(store, args.runs)
    print(f"\nstart-up, median of {args.runs}; load average at start {load[0]:.1f} "
          f"on {os.cpu_count()} cores; store {store.name if args.store else '2,000 memories'}")
    print("\n".join(report(figures)))


if __name__ == "__main__":
    main()
