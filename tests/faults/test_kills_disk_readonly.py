"""Faults swept on the real store (issue 21): SIGKILL at random points of a mixed
workload, a full disk (RLIMIT_FSIZE) during writes, and a read-only store. The long
sweep (200+ kills) is ``benchmarks/fault_sweep.py``."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.sweep import CHILD, ROOT, env, sweep
from tulving import Memory, StorageError, TulvingError


def test_kill_at_random_points_leaves_a_whole_store(tmp_path: Path) -> None:
    result = sweep(tmp_path, kills=12, seed=7)
    assert result["failures"] == 0, result["problems"]


def test_a_full_disk_gives_typed_errors_and_loses_nothing(tmp_path: Path) -> None:
    run = subprocess.run([*CHILD, "full_disk", str(tmp_path / "full.db")], cwd=ROOT,
                         env=env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["untyped"] == [], report["untyped"]
    assert report["errors"] and set(report["errors"]) <= {"StorageError", "VectorIndexError"}
    assert report["after_full"] >= report["before"]  # nothing committed was lost
    assert (report["after_full"] - report["before"]) % 40 == 0  # batches whole or absent
    assert report["after_space"] == "written after space returned"
    assert report["integrity"] and report["audit_ok"]


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder holding a store, made read-only: by permissions for a normal user, by a
    read-only bind mount for root (whom permissions do not stop)."""
    source = tmp_path / "src"
    source.mkdir()
    with Memory(source / "ro.db", agent_id="a", embedder="hashing") as m:
        m.store("readable after the folder turns read-only", type="FACT", key="k")
    if os.geteuid() != 0:
        for p in source.iterdir():
            p.chmod(0o444)
        source.chmod(0o555)
        yield source
        source.chmod(0o755)
        return
    target = tmp_path / "ro"
    target.mkdir()
    mounted = subprocess.run(["mount", "--bind", str(source), str(target)],
                             capture_output=True).returncode == 0
    if mounted:
        mounted = subprocess.run(["mount", "-o", "remount,bind,ro", str(target)],
                                 capture_output=True).returncode == 0
    if not mounted:
        subprocess.run(["umount", str(target)], capture_output=True)
        pytest.skip("SKIPPING read-only store test: root here cannot make a read-only bind "
                    "mount (and permissions do not stop root)")
    try:
        yield target
    finally:
        subprocess.run(["umount", str(target)], capture_output=True)


def test_a_read_only_store_is_a_typed_error_and_stays_untouched(
    read_only_folder: Path,
) -> None:
    """Reading a read-only SQLite store is not supported (its lock, WAL and index cache
    need the folder writable); opening one is a clear StorageError, never an OSError, and
    the files are untouched. Copied somewhere writable, it reads."""
    before = {p.name: p.read_bytes() for p in read_only_folder.iterdir()}
    with pytest.raises(TulvingError) as caught, Memory(read_only_folder / "ro.db",
                                                      agent_id="a", embedder="hashing") as m:
        m.get("k")
    assert isinstance(caught.value, StorageError) and "writable" in str(caught.value)
    assert {p.name: p.read_bytes() for p in read_only_folder.iterdir()} == before
