"""The enrichment tasks across a restart and a kill -9 (docs/architecture.md,
"Enrichment"): no acknowledged write is lost, every entry gets its vector, and no task's
result is written twice (each probe result is an audit record: counted per entry)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tulving import Memory
from tulving.domain.query import STORE_WIDE, EntryFilter

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def child(path: Path, mode: str, pause: float, batches: int = 0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.faults._enrichment_child", str(path), mode,
         str(pause), str(batches)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)})


def lines_until(proc: subprocess.Popen[str], key: str, timeout: float = 60) -> list[dict[str, Any]]:
    """The child's JSON lines up to the first with ``key`` (or its end)."""
    assert proc.stdout is not None
    seen: list[dict[str, Any]] = []
    end = time.monotonic() + timeout
    for line in proc.stdout:
        seen.append(json.loads(line))
        if key in seen[-1] or time.monotonic() > end:
            break
    return seen


def acked(lines: list[dict[str, Any]]) -> list[str]:
    return [i for line in lines for i in line.get("acked", ())]


def kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)


def drained(path: Path) -> None:
    proc = child(path, "drain", 0.0)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert '"settled": true' in out, out


def check(path: Path, acknowledged: list[str]) -> None:
    """Every acknowledged entry is there; every entry has its vector and exactly one
    probe result; the store is sound."""
    with Memory(path, agent_id="enrich", embedder="hashing", vectors="usearch",
                read_only=True) as memory:
        storage = memory._up().ctx.storage
        entries = [e.id for e in storage.query(EntryFilter(partitions=STORE_WIDE))]
        assert set(acknowledged) <= set(entries)
        assert set(storage.vectors_for(entries)) == set(entries)
        counts: dict[str, int] = {}
        for record in storage.audit_records():
            if record.action == "probe" and record.entry_id is not None:
                counts[record.entry_id] = counts.get(record.entry_id, 0) + 1
        assert counts == dict.fromkeys(entries, 1)
        assert memory.stats().enrichment.tasks == {}
        assert storage.maintenance("integrity")["ok"]
        hits = memory.search("notes on the migration", top_k=5, mode="semantic")
        assert hits  # the index learned the vectors the workers wrote


def test_a_closed_memory_leaves_its_tasks_for_the_next_open(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    proc = child(path, "write-close", 0.3, batches=4)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(acked(lines)) == 20
    assert not any("settled" in line for line in lines)
    drained(path)
    check(path, acked(lines))


def test_a_kill_while_a_task_is_prepared_loses_and_repeats_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    proc = child(path, "write", 30.0, batches=2)
    lines = lines_until(proc, "preparing")
    kill(proc)
    assert any("preparing" in line for line in lines)
    drained(path)
    check(path, acked(lines))


def test_kills_at_random_moments_of_the_background_work(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    rng = random.Random(20261201)
    acknowledged: list[str] = []
    kills = 0
    for _ in range(6):
        proc = child(path, "write", 0.02, batches=6)
        first = lines_until(proc, "acked")  # started: the kill lands in the work itself
        time.sleep(rng.uniform(0.0, 1.5))
        kill(proc)
        kills += 1
        assert proc.stdout is not None
        acknowledged += acked(first + [json.loads(line) for line in
                                       proc.stdout.read().splitlines() if line.startswith("{")])
    drained(path)
    check(path, acknowledged)
    assert kills == 6 and acknowledged
