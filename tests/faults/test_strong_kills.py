"""The strong tier's background vectors across a restart and a kill -9: every
acknowledged entry gets exactly one strong vector, none is lost and none is written twice
(a trigger the test adds to the store counts every insert into the strong-vector table)."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.test_enrichment_kills import acked, kill, lines_until
from tulving import Memory
from tulving.domain.query import STORE_WIDE, EntryFilter

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
MODEL = "hashing-v1-64"


def child(path: Path, mode: str, pause: float, batches: int = 0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.faults._strong_child", str(path), mode, str(pause),
         str(batches)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)})


def counted_store(path: Path) -> None:
    """A store with its schema, and a trigger counting writes of strong vectors."""
    proc = child(path, "drain", 0.0)
    proc.communicate(timeout=120)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE strong_writes (entry_id TEXT NOT NULL)")
        conn.execute("CREATE TRIGGER strong_written AFTER INSERT ON strong_embeddings "
                     "BEGIN INSERT INTO strong_writes VALUES (new.entry_id); END")


def drained(path: Path) -> None:
    proc = child(path, "drain", 0.0)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert '"settled": true' in out, out


def check(path: Path, acknowledged: list[str]) -> None:
    with Memory(path, agent_id="strong", embedder="hashing", vectors="exact",
                read_only=True) as memory:
        storage = memory._up().ctx.storage
        entries = [e.id for e in storage.query(EntryFilter(partitions=STORE_WIDE))]
        assert acknowledged and set(acknowledged) <= set(entries)
        assert set(storage.strong_vectors_for(MODEL, entries)) == set(entries)  # none lost
        assert memory.stats().enrichment.tasks == {}
    with sqlite3.connect(path) as conn:
        writes = dict(conn.execute(
            "SELECT entry_id, count(*) FROM strong_writes GROUP BY entry_id").fetchall())
    assert writes == dict.fromkeys(entries, 1)  # none twice


def test_a_closed_memory_leaves_its_strong_tasks_for_the_next_open(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    counted_store(path)
    proc = child(path, "write-close", 0.3, batches=4)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(acked(lines)) == 20
    drained(path)
    check(path, acked(lines))


def test_a_kill_while_strong_vectors_are_prepared_loses_and_repeats_nothing(
        tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    counted_store(path)
    proc = child(path, "write", 30.0, batches=2)
    lines = lines_until(proc, "preparing")
    if not acked(lines):  # the worker may report before the writer prints its ack
        lines += lines_until(proc, "acked")  # it sleeps 30 s in there: still preparing
    kill(proc)
    drained(path)
    check(path, acked(lines))


def test_kills_at_random_moments_of_the_strong_work(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    counted_store(path)
    rng = random.Random(20261202)
    acknowledged: list[str] = []
    for _ in range(5):
        proc = child(path, "write", 0.05, batches=6)
        first = lines_until(proc, "acked")
        time.sleep(rng.uniform(0.0, 1.0))
        kill(proc)
        assert proc.stdout is not None
        acknowledged += acked(first + [json.loads(line) for line in
                                       proc.stdout.read().splitlines() if line.startswith("{")])
    drained(path)
    check(path, acknowledged)
