"""Kill-at-random-points sweep shared by the test (short) and the benchmark script (long):
start the workload in a child, SIGKILL it after a random delay, reopen, check."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tulving import Memory
from tulving.domain.query import EntryFilter

ROOT = Path(__file__).resolve().parents[2]
CHILD = [sys.executable, "-m", "tests.faults._children"]
BATCH = 10


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("TULVING_")}
    out["TULVING_PLUGINS"] = "tulving"
    out["PYTHONPATH"] = str(ROOT) + os.pathsep + out.get("PYTHONPATH", "")
    return out


def kill_after(code: str, path: Path, delay: float) -> None:
    """Run ``python -c code path`` and SIGKILL it after ``delay`` seconds (a kill in the
    middle of an open that migrates or converts the store)."""
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], cwd=ROOT, env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def kill_once(path: Path, seed: int, rng: random.Random) -> list[str]:
    """One kill; the problems found after it (empty: all checks passed)."""
    proc = subprocess.Popen([*CHILD, "work", str(path), str(seed)], cwd=ROOT, env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.3 + rng.random() * 1.2)  # past start-up, then anywhere in the work
    if proc.poll() is not None:
        return [f"the workload died by itself: {proc.stderr.read().decode()[-500:]}"]
    proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate()
    acked = [line.split()[1] for line in out.decode().splitlines()
             if line.startswith("batch ")]
    return check(path, acked)


def check(path: Path, acked: Sequence[str] = ()) -> list[str]:
    """The checks after a kill; ``acked``: the batches the workload said were written."""
    problems: list[str] = []
    try:
        memory = Memory(path, agent_id="faults", embedder="hashing", vectors="hnsw")
        memory.startup()
    except Exception as exc:
        return [f"does not open: {type(exc).__name__}: {exc}"]
    try:
        report = memory.maintenance("inspect")
        if not report.integrity_ok:
            problems.append(f"integrity: {report.integrity_messages}")
        if report.index is not None and not report.index.healthy:
            problems.append(f"vector index out of step: {report.index}")
        if not memory.verify_audit().ok:
            problems.append("audit chain broken")
        flt = EntryFilter(partitions=memory.ctx.visible_partitions())
        counts: dict[str, int] = {}
        for entry in memory.ctx.storage.query(flt):
            for tag in entry.tags:
                if tag.startswith("b"):
                    counts[tag] = counts.get(tag, 0) + 1
        archived = EntryFilter(partitions=memory.ctx.visible_partitions(),
                               include_archived=True)
        every: dict[str, int] = {}
        for entry in memory.ctx.storage.query(archived):
            for tag in entry.tags:
                every[tag] = every.get(tag, 0) + 1
        for tag, total in every.items():
            if tag.startswith("b") and total != BATCH:
                problems.append(f"batch {tag} holds {total} of {BATCH} entries (half a write)")
        lost = [tag for tag in acked if every.get(tag, 0) != BATCH]
        if lost:
            problems.append(f"{len(lost)} acknowledged batches lost: {lost[:5]}")
        for tag in list(counts)[:5]:
            hits = memory.search(tag, top_k=BATCH * 3, mode="lexical")
            if not any(tag in h.entry.tags for h in hits):
                problems.append(f"committed batch {tag} is not found by search")
    finally:
        memory.close()
    return problems


def sweep(folder: Path, kills: int, seed: int = 1) -> dict[str, Any]:
    """``kills`` random kills of the mixed workload on one store, each checked."""
    rng = random.Random(seed)
    path = folder / "swept.db"
    found: list[str] = []
    for i in range(kills):
        found += [f"kill {i}: {p}" for p in kill_once(path, seed * 1000 + i, rng)]
    return {"kills": kills, "failures": len(found), "problems": found[:20]}
