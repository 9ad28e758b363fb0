"""Faults at the store's write steps (``tests/faults/write_steps.py``): SIGKILL at a write
system call of the fixed workload, a disk that fills (``ENOSPC``: what SQLite reports as
SQLITE_FULL) or fails (``EIO``) for a window of calls and then heals, and a real file
system that fills (a small tmpfs, where this machine lets root mount one). After each:
the store opens, passes its integrity checks and audit chain, holds every acknowledged
step and no half batch, and the workload saw only typed errors.

Here a bounded set of points (every sync, truncation and unlink, every 90th pwrite, a
dozen fault windows); ``benchmarks/fault_sweep.py --steps`` tries every write step."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.sweep import CHILD, ROOT, env
from tests.faults.write_steps import (
    count_writes,
    kill_points,
    make_bundle,
    problems_after,
    run_faulted,
    strace_missing,
)
from tulving.testing.postgres import in_ci


@pytest.fixture(autouse=True)
def _strace() -> None:
    why = strace_missing()
    if why is not None:
        if in_ci():
            pytest.fail(f"the write-step faults need strace in CI: {why} (.ci/faults.sh)")
        pytest.skip(f"SKIPPING write-step faults: {why}")


#: (call, error, first, last): a window of failing calls, then a disk that works again.
WINDOWS = [
    ("pwrite64", "ENOSPC", 1, 1), ("pwrite64", "ENOSPC", 100, 140),
    ("pwrite64", "ENOSPC", 400, 460), ("pwrite64", "ENOSPC", 700, 760),
    ("pwrite64", "EIO", 20, 20), ("pwrite64", "EIO", 300, 310),
    ("pwrite64", "EIO", 600, 900), ("fdatasync", "EIO", 3, 4),
    ("fdatasync", "EIO", 10, 15), ("ftruncate", "EIO", 2, 2),
    ("ftruncate", "ENOSPC", 5, 8), ("pread64", "EIO", 30, 60),
]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_bundle(tmp_path_factory.mktemp("bundle"))


def test_a_kill_at_write_steps_loses_nothing_acknowledged(tmp_path: Path,
                                                          bundle: Path) -> None:
    counts = count_writes(tmp_path, bundle)
    assert counts.get("pwrite64", 0) > 100 and counts.get("fdatasync", 0) > 0, counts
    points = kill_points(counts, every=90)
    found = []
    for i, (call, n) in enumerate(points):
        path = tmp_path / f"killed{i}.db"
        said, status = run_faulted(path, bundle, f"{call}:signal=KILL:when={n}")
        assert status in (-9, 137, 0), (call, n, status)
        found += [f"kill at {call} #{n}: {p}" for p in problems_after(path, said)]
    assert found == [], found


@pytest.mark.parametrize(("call", "error", "first", "last"), WINDOWS)
def test_a_failing_disk_gives_typed_errors_and_loses_nothing(
        tmp_path: Path, bundle: Path, call: str, error: str, first: int, last: int) -> None:
    path = tmp_path / "faulted.db"
    when = f"{first}..{last}" if last > first else f"{first}"
    said, status = run_faulted(path, bundle, f"{call}:error={error}:when={when}")
    assert status == 0, said[-3:]
    assert ["ack", "close", "-"] in said or any(line[0] == "err" for line in said), said
    assert problems_after(path, said) == []


@pytest.fixture
def small_file_system(tmp_path: Path) -> Iterator[Path]:
    """A 6 MB tmpfs (root, with the right to mount): a disk that really fills."""
    target = tmp_path / "small"
    target.mkdir()
    if os.geteuid() != 0 or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(target)],
            capture_output=True).returncode != 0:
        pytest.skip("SKIPPING the real full file system: this machine does not let the "
                    "tests mount a tmpfs (the injected ENOSPC windows above stand in)")
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


def test_a_real_full_file_system(small_file_system: Path) -> None:
    path = small_file_system / "memory.db"
    proc = subprocess.Popen([*CHILD, "full_filesystem", str(path)], cwd=ROOT, env=env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "full", proc.stderr and proc.stderr.read()
    grown = subprocess.run(["mount", "-o", "remount,size=64m", str(small_file_system)],
                           capture_output=True)
    assert grown.returncode == 0, grown.stderr
    proc.stdin.write("more\n")
    proc.stdin.flush()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    report = json.loads(out.strip().splitlines()[-1])
    assert report["untyped"] == [], report["untyped"]
    assert report["errors"] and set(report["errors"]) <= {"StorageError", "VectorIndexError"}
    assert "after" in report["acked"], report
    said = [["ack", "open", "-"]] + [["ack", "filler", tag] for tag in report["acked"]]
    assert problems_after(path, said) == []
    import sqlite3

    db = sqlite3.connect(path)
    try:
        tags = {r[0]: r[1] for r in db.execute(
            "SELECT tag, count(*) FROM entry_tags GROUP BY tag")}
    finally:
        db.close()
    for tag in report["acked"]:
        if tag != "after":
            assert tags.get(tag) == 10, (tag, tags.get(tag))
    assert all(n == 10 for n in tags.values()), tags  # no half batch
