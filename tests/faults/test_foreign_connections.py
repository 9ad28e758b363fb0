"""Foreign connections beside a live writer, in its process and from others, each scenario
ended by a SIGKILL of the writer: the store must pass its integrity check, hold every
acknowledged write, and open (docs/operations/faults.md, "Beside a live Memory").

The first case is the malformed store of the door suites: an application's read-only
``sqlite3`` connection, open in the writer's process before the Memory opened, lost its
SHARED lock when the Memory read the file's head through a descriptor of its own and
closed it; SQLite still believed the lock held, so the writer ran without one, and the
next process to close a connection took itself for the last user and deleted the WAL
under the writer: every write after that was lost at the kill, and a new connection in
the writer's process read "disk I/O error" or "malformed". The long sweep over every pair
is ``benchmarks/fault_sweep.py --foreign``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.foreign import scenario

#: (in the writer's process, from another process): every in-process kind once beside the
#: reader that deletes an unheld WAL, every other process's action once beside the case
#: that broke.
CASES = [
    ("reader-before", "reader"), ("reader-after", "reader"), ("collected", "reader"),
    ("read-write", "reader"), ("read-only-memory", "reader"),
    ("reader-before", "cli-search"), ("reader-before", "checkpoint"),
    ("reader-before", "backup"), ("nothing", "sqlite3-shell"),
]


@pytest.mark.parametrize(("beside", "other"), CASES)
def test_foreign_connections_leave_a_sound_store(tmp_path: Path, beside: str,
                                                 other: str) -> None:
    acknowledged, problems = scenario(tmp_path / "memory.db", beside, other)
    assert len(acknowledged) == 10
    assert problems == []  # before the fix, "reader-before": no lock held, writes lost
