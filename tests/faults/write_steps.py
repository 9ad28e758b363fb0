"""Faults at every write step of the store: the fixed workload of :mod:`._steps` run under
``strace``, which counts the system calls that write the store's files (the database,
its WAL, shared memory and rollback journal, and the read journal with its own) and then
stops the workload at any one of them: with SIGKILL (the process dies before that write
reaches the file), or by failing it (ENOSPC: the disk is full; EIO: an I/O error) for a
window of calls, after which the disk "heals" and the workload goes on.

After each run the store must open, pass ``PRAGMA integrity_check``, FTS5's own check and
its audit chain, hold every acknowledged step (and every unacknowledged batch whole or
not at all). Shared by the test (a bounded set of points) and ``benchmarks/fault_sweep.py
--steps`` (every point)."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.faults.sweep import ROOT, env
from tulving import Memory
from tulving.domain.query import STORE_WIDE, EntryFilter

#: The system calls that change a store file (SQLite writes with pwrite64; the shared
#: memory grows by ftruncate; commits and checkpoints sync with fdatasync/fsync).
WRITES = ("pwrite64", "write", "fdatasync", "fsync", "ftruncate", "unlink", "rename")
SUFFIXES = ("", "-wal", "-shm", "-journal", ".reads", ".reads-wal", ".reads-shm",
            ".reads-journal")
CHILD = [sys.executable, "-m", "tests.faults._steps"]
BATCH, IMPORTED = 10, 20


def strace_missing() -> str | None:
    return None if shutil.which("strace") else "strace is not installed (apt-get install strace)"


def make_bundle(folder: Path) -> Path:
    """What the workload imports: ``IMPORTED`` entries tagged ``i1``."""
    target = folder / "import.tulving"
    if not target.exists():
        with Memory(folder / "bundle-source.db", agent_id="other", embedder="hashing",
                    vectors="exact") as source:
            source.store_many({"content": f"i1 imported note {i}", "type": "FACT",
                               "tags": ["i1"]} for i in range(IMPORTED))
            source.export(target)
    return target


def _strace(path: Path, *options: str, also: str = "") -> list[str]:
    files = [opt for suffix in SUFFIXES for opt in ("-P", f"{path}{suffix}")]
    calls = ",".join([*WRITES, *([also] if also and also not in WRITES else [])])
    return ["strace", "-f", "-qq", "-e", f"trace={calls}", *files, *options]


def count_writes(folder: Path, bundle: Path) -> dict[str, int]:
    """How many times each write call reaches the store's files in one clean run (per
    thread: strace counts injections per call and per thread), for a fresh store."""
    path = folder / "counted.db"
    log = folder / "counted.strace"
    run = subprocess.run([*_strace(path, "-o", str(log)), *CHILD, str(path), str(bundle)],
                         cwd=ROOT, env=env(), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "ack close" in run.stdout, run.stderr[-2000:]
    per_thread: Counter[tuple[str, str]] = Counter()
    for line in log.read_text().splitlines():
        tid, _, rest = line.partition(" ")  # strace pads a short pid: "3567  pwrite64("
        call = rest.lstrip().split("(", 1)[0]
        if call in WRITES:
            per_thread[(call, tid)] += 1
    out: dict[str, int] = {}
    for (call, _), n in per_thread.items():
        out[call] = max(out.get(call, 0), n)
    return out


def run_faulted(path: Path, bundle: Path, inject: str) -> tuple[list[list[str]], int]:
    """The workload on a fresh store at ``path`` under ``-e inject=INJECT``: its
    acknowledgements and refusals (lines split) and its exit status (-9: killed)."""
    run = subprocess.run([*_strace(path, "-o", "/dev/null", "-e", f"inject={inject}",
                                   also=inject.split(":", 1)[0]),
                          *CHILD, str(path), str(bundle)], cwd=ROOT, env=env(),
                         capture_output=True, text=True, timeout=300)
    lines = [line.split() for line in run.stdout.splitlines() if line.strip()]
    if run.returncode not in (0, 137, -9):
        lines.append(["crash", run.stderr[-1500:]])
    return lines, run.returncode


def problems_after(path: Path, said: list[list[str]]) -> list[str]:
    """What is wrong with the store after a faulted run (empty: nothing)."""
    found = [f"the workload crashed (not a typed error): {line[1]}" for line in said
             if line[0] == "crash"]
    acked = {(line[1], line[2]) for line in said if line[0] == "ack"}
    if ("open", "-") not in acked:
        if path.exists():  # a kill in the first open: whatever is there must still open
            try:
                with Memory(path, agent_id="faults", embedder="hashing",
                            vectors="exact") as memory:
                    memory.stats()
            except Exception as exc:
                found.append(f"does not open after a kill in its first open: {exc!r}")
        return found
    db = sqlite3.connect(path, timeout=30)
    try:
        check = [r[0] for r in db.execute("PRAGMA integrity_check")]
        if check != ["ok"]:
            found.append(f"integrity_check: {check[:3]}")
    finally:
        db.close()
    try:
        memory = Memory(path, agent_id="faults", embedder="hashing",
                        vectors="exact").startup()
    except Exception as exc:
        return [*found, f"does not open: {type(exc).__name__}: {exc}"]
    try:
        found += _content_problems(memory, acked)
    finally:
        memory.close()
    return found


def _content_problems(memory: Memory, acked: set[tuple[str, str]]) -> list[str]:
    found: list[str] = []
    report = memory.maintenance("inspect")
    if not report.integrity_ok:
        found.append(f"inspect: {report.integrity_messages}")
    if not memory.verify_audit().ok:
        found.append("audit chain broken")
    storage = memory.ctx.storage
    every = list(storage.query(EntryFilter(partitions=STORE_WIDE, include_archived=True)))
    tags = Counter(t for e in every for t in e.tags)
    for tag, whole in (("b1", BATCH), ("b2", BATCH), ("i1", IMPORTED)):
        kind = "import" if tag == "i1" else "batch"
        if tags[tag] not in (0, whole):
            found.append(f"{tag} holds {tags[tag]} of {whole} entries (half a write)")
        elif (kind, tag) in acked and tags[tag] != whole:
            found.append(f"acknowledged {kind} {tag} is missing")
    k1 = memory.ctx.storage.active_by_key(memory.ctx.visible_partitions(), "k1")
    if ("store", "k1") in acked and k1 is None:
        found.append("acknowledged store k1 is missing")
    if ("correct", "k1") in acked and (k1 is None or "second version" not in k1.content):
        found.append("acknowledged correction of k1 is missing")
    if ("remember", "r1") in acked and not any("r1 I prefer" in e.content for e in every):
        found.append("acknowledged remember r1 is missing")
    if ("forget", "k2") in acked and storage.active_by_key(
            memory.ctx.visible_partitions(), "k2") is not None:
        found.append("acknowledged forget of k2 undone")
    if ("forget-hard", "k3") in acked and any("k3 to erase" in e.content for e in every):
        found.append("acknowledged hard delete of k3 undone")
    if ("session", "s1") in acked and any(
            r.goal == "s1 goal" for r in storage.open_sessions("faults", memory.identity.tenant)):
        found.append("acknowledged end of session s1 undone")
    actions = Counter(r.action for r in memory.audit_log())
    for kind in ("search", "get", "curate"):
        wanted = sum(1 for k, n in acked if k == "read" and n.startswith(kind))
        if actions[kind] < wanted:
            found.append(f"{wanted - actions[kind]} acknowledged {kind} records lost")
    return found


def kill_points(counts: dict[str, int], *, every: int = 1) -> list[tuple[str, int]]:
    """(call, n) for each write step; ``every`` > 1 keeps every ``every``-th pwrite64
    (the rarer calls, each sync, truncation and unlink, are all kept)."""
    points = []
    for call, n in sorted(counts.items()):
        step = every if call == "pwrite64" else 1
        points += [(call, k) for k in range(1, n + 1, step)]
    return points
