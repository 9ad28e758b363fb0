"""Real processes: single-writer lock and SIGKILL in the middle of a batch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tulving import LockError, Memory

HOLDER = textwrap.dedent("""
    import sys, time
    from tulving import Memory
    m = Memory(sys.argv[1], agent_id="holder", embedder="hashing", vectors="exact")
    m.store("held by the first writer", type="FACT")
    print("ready", flush=True)
    time.sleep(60)
""")


def _spawn(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_second_writer_process_is_refused_and_named(tmp_path: Path) -> None:
    db = str(tmp_path / "locked.db")
    proc = _spawn(HOLDER, db)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        with pytest.raises(LockError) as info:
            Memory(db, agent_id="other", embedder="hashing", vectors="exact").startup()
        assert f'"pid": {proc.pid}' in str(info.value)
    finally:
        proc.kill()
        proc.wait()
    # the lock of the killed process is recovered
    with Memory(db, agent_id="holder", embedder="hashing", vectors="exact") as m:
        # (the query is not the whole text: a memory that is only the query is left out)
        assert [r.entry.content for r in m.search("held", mode="lexical")] == [
            "held by the first writer"]


BATCHER = textwrap.dedent("""
    import sys, time
    from tulving import Memory
    from tulving.adapters.storage.sqlite import store as sqlite_store

    m = Memory(sys.argv[1], agent_id="a", embedder="hashing", vectors="exact")
    m.startup()
    original = sqlite_store.SQLiteStorage._write_one
    count = 0

    def slow(self, entry, vec):
        global count
        count += 1
        if count == 50:
            print("halfway", flush=True)
            time.sleep(60)
        return original(self, entry, vec)

    sqlite_store.SQLiteStorage._write_one = slow
    m.store_many({"content": f"batch item {i}", "type": "FACT"} for i in range(100))
""")


def test_sigkill_mid_store_many_keeps_all_or_none(tmp_path: Path) -> None:
    db = str(tmp_path / "crash.db")
    with Memory(db, agent_id="a", embedder="hashing", vectors="exact") as m:
        m.store("before the crash", type="FACT")
    proc = _spawn(BATCHER, db)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "halfway"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    start = time.monotonic()
    with Memory(db, agent_id="a", embedder="hashing", vectors="exact") as m:
        stats = m.stats()
        assert stats["active"] == 1  # none of the batch, the earlier entry intact
        assert m.search("before crash", mode="lexical")[0].entry.content == "before the crash"
        assert m.ctx.storage.maintenance("integrity")["ok"]
        m.store_many({"content": f"retry {i}", "type": "FACT"} for i in range(100))
        assert m.stats()["active"] == 101
    assert time.monotonic() - start < 30
