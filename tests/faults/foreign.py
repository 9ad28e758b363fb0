"""Foreign connections beside a live writer: the application's own use of the store file in
the writer's process (:mod:`._foreign_writer`), other processes reading, checkpointing
and copying it, and the checks after a SIGKILL of the writer. Shared by the test (a
bounded set of scenarios) and ``benchmarks/fault_sweep.py --foreign`` (all of them)."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.faults.sweep import ROOT, env
from tulving import Memory

#: Another process asks whether it could take SQLite's EXCLUSIVE lock on the database file
#: (the check a closing connection makes to decide it is the last one and may delete the
#: WAL): the byte range SQLite's SHARED locks use.
PROBE = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 510, 0x40000002, os.SEEK_SET)
except OSError:
    print("held")
else:
    print("free")
"""

#: What another process does to the store while the writer lives (``python -c``; the
#: store's path is argv[1]). Each is allowed beside a live Memory (docs/operations/faults.md).
OTHERS: dict[str, str] = {
    # a read-write connection that reads and closes: the one that, finding no lock held,
    # took itself for the last user and deleted the WAL under the writer
    "reader": "import sqlite3, sys\n"
              "c = sqlite3.connect(sys.argv[1], timeout=30)\n"
              "c.execute('SELECT count(*) FROM entries').fetchone()\nc.close()",
    "checkpoint": "import sqlite3, sys\n"
                  "c = sqlite3.connect(sys.argv[1], timeout=30)\n"
                  "c.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchone()\nc.close()",
    "backup": "import sqlite3, sys\n"
              "src = sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True, timeout=30)\n"
              "dst = sqlite3.connect(sys.argv[1] + '.copy')\nsrc.backup(dst)\n"
              "assert dst.execute('PRAGMA integrity_check').fetchone() == ('ok',)\n"
              "dst.close(); src.close()",
}
#: ... and the doors: a CLI command that only reads (a read-only open beside the writer),
#: and the system's sqlite3 shell where there is one.
DOORS = ("cli-search", "sqlite3-shell")


def others_see(path: Path) -> str:
    """"held" while some process holds a SHARED lock on the file, else "free"."""
    out = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def other_process(action: str, path: Path) -> None:
    """Run ``action`` (a key of :data:`OTHERS` or :data:`DOORS`) in another process."""
    if action in OTHERS:
        argv = [sys.executable, "-c", OTHERS[action], str(path)]
    elif action == "cli-search":
        argv = [sys.executable, "-m", "tulving.interfaces.cli.main", "--path", str(path),
                "--embedder", "hashing", "--vectors", "exact", "search", "acknowledged"]
    elif action == "sqlite3-shell":
        shell = shutil.which("sqlite3")
        if shell is None:
            return
        argv = [shell, str(path), "PRAGMA integrity_check; SELECT count(*) FROM entries;"]
    else:
        raise ValueError(action)
    run = subprocess.run(argv, cwd=ROOT, env=env(), capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, (action, run.stdout[-500:], run.stderr[-2000:])
    if action == "sqlite3-shell":
        assert run.stdout.splitlines()[0] == "ok", run.stdout


class ForeignWriter:
    """The writer process of one scenario (see :mod:`._foreign_writer`)."""

    def __init__(self, path: Path, beside: str) -> None:
        self.path = path
        self.acknowledged: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.faults._foreign_writer", str(path), beside],
            cwd=ROOT, env=env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self._expect("ready")

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            assert self.proc.stderr is not None
            raise AssertionError(f"the writer died: {self.proc.stderr.read()[-3000:]}")
        return line.strip()

    def _expect(self, word: str) -> str:
        line = self._line()
        assert line.split()[0] == word, line
        return line

    def _say(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def write(self, n: int) -> None:
        self._say(f"write {n}")
        while (line := self._line()) != "done":
            word, key = line.split()
            assert word == "ack", line
            self.acknowledged.append(key)

    def read(self) -> int:
        self._say("read")
        return int(self._expect("read").split()[1])

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def problems_after(path: Path, acknowledged: list[str]) -> list[str]:
    """What is wrong with the store once its writer is dead: its integrity, an
    acknowledged write missing, a store that does not open (empty: nothing)."""
    found: list[str] = []
    db = sqlite3.connect(path, timeout=30)
    try:
        check = [r[0] for r in db.execute("PRAGMA integrity_check")]
        if check != ["ok"]:
            found.append(f"integrity_check: {check[:5]}")
        keys = {r[0] for r in db.execute("SELECT key FROM entries WHERE key IS NOT NULL")}
    except sqlite3.DatabaseError as exc:
        return [f"the file does not read: {exc}"]
    finally:
        db.close()
    lost = [k for k in acknowledged if k not in keys]
    if lost:
        found.append(f"{len(lost)} of {len(acknowledged)} acknowledged writes lost: "
                     f"{lost[:5]}")
    try:
        with Memory(path, agent_id="faults", embedder="hashing", vectors="exact") as memory:
            report = memory.maintenance("inspect")
            if not report.integrity_ok:
                found.append(f"inspect: {report.integrity_messages}")
            if not memory.verify_audit().ok:
                found.append("audit chain broken")
    except Exception as exc:
        found.append(f"does not open: {type(exc).__name__}: {exc}")
    return found


def scenario(path: Path, beside: str, other: str) -> tuple[list[str], list[str]]:
    """One scenario: the writer with ``beside`` in its process writes, ``other`` acts
    from another process twice between its writes, the application reads, the writer is
    killed. Returns what was acknowledged and the problems found after."""
    writer = ForeignWriter(path, beside)
    try:
        writer.write(3)
        held = others_see(path)
        other_process(other, path)
        writer.write(5)
        seen = writer.read()
        other_process(other, path)
        writer.write(2)
    finally:
        writer.kill()
    found = [] if held == "held" else ["the writer's process held no SHARED lock"]
    if seen < 1 + 8:
        found.append(f"the application's connections read {seen} of {1 + 8} entries")
    return writer.acknowledged, found + problems_after(path, writer.acknowledged)
