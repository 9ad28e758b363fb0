"""remember() across a kill -9 while what is read off its turns is under way: every
acknowledged turn is there (committed before remember returned), the work left resumes
at the next start, and each turn's fact is written once (no duplicate, none missing)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults._remember_child import TURNS
from tulving import Memory
from tulving.domain.query import EntryFilter
from tulving.domain.types import MemoryType

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
CALLS = 3


def child(path: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.faults._remember_child", str(path), mode, str(CALLS)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_kill_during_the_background_work_loses_and_repeats_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    proc = child(path, "remember")
    assert proc.stdout is not None
    acked: list[str] = []
    for line in proc.stdout:
        acked += json.loads(line).get("acked", [])
        if len(acked) == CALLS * TURNS:
            break
    time.sleep(0.5)  # some of the work done, most of it not
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    with Memory(path, agent_id="kill", user_id="u", embedder="hashing",
                vectors="usearch") as memory:
        left = memory.stats().enrichment
        assert left.tasks.get("extract") is not None and not left.settled  # killed mid-way
    drain = child(path, "drain")
    out, err = drain.communicate(timeout=300)
    assert drain.returncode == 0, err
    assert '"settled": true' in out
    with Memory(path, agent_id="kill", user_id="u", embedder="hashing",
                vectors="usearch") as memory:
        flt = EntryFilter(partitions=memory.ctx.visible_partitions())
        entries = memory.ctx.storage.query(flt, limit=10_000)
        turns = {e.id for e in entries if e.type is MemoryType.EPISODE}
        assert set(acked) <= turns and len(turns) == len(acked)
        facts = [e for e in entries if e.type is MemoryType.FACT]
        sources = [s for f in facts for s in f.source_entry_ids]
        assert len(sources) == len(set(sources))  # each turn read off once
        assert len(facts) == CALLS * TURNS // 2  # one per user turn, none missing
        assert memory.ctx.storage.vectors_for(sorted(turns)).keys() == turns
