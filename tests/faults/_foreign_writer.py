"""The writer process of the foreign-connection scenarios: a live ``Memory`` with what an
application keeps beside it in the same process, writing on the parent's word and
acknowledging every write on stdout once it has returned (the parent kills it with
SIGKILL at the end: what was acknowledged must be in the store).

Usage: ``python -m tests.faults._foreign_writer PATH BESIDE`` where BESIDE is one of
:data:`BESIDE`. Lines on stdin: ``write N`` (N memories, ``ack KEY`` each, then
``done``), ``read`` (the application's connections read; ``read COUNT``).
"""

from __future__ import annotations

import gc
import sqlite3
import sys
from typing import Any

from tulving import Memory

#: What the application holds in the writer's process, and when it opened it:
#: ``reader-before``  a read-only sqlite3 connection opened (and read) before the Memory
#:                    opens, kept open (the door suites' back channel of issue 46);
#: ``reader-after``   the same, opened once the Memory is open;
#: ``collected``      connections read and dropped without close(), closed by the cyclic
#:                    collector at a moment nobody chooses (sqlite3's statement cache
#:                    keeps a cycle), forced now and then;
#: ``read-write``     a read-write sqlite3 connection that only reads;
#: ``read-only-memory`` a Memory(read_only=True) of the same file, opened and closed;
#: ``nothing``        the writer alone.
BESIDE = ("nothing", "reader-before", "reader-after", "collected", "read-write",
          "read-only-memory")


def _open(path: str, **options: Any) -> Memory:
    return Memory(path, agent_id="faults", embedder="hashing", vectors="exact",
                  **options).startup()


def _reader(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    conn.execute("SELECT count(*) FROM entries").fetchone()
    return conn


class Beside:
    """The application's own use of the store file, in the writer's process."""

    def __init__(self, path: str, kind: str) -> None:
        self.path, self.kind = path, kind
        self.kept: list[sqlite3.Connection] = []
        if kind == "reader-before":
            self.kept.append(_reader(path))

    def after_open(self) -> None:
        if self.kind == "reader-after":
            self.kept.append(_reader(path=self.path))
        elif self.kind == "read-write":
            conn = sqlite3.connect(self.path, timeout=30)
            conn.execute("SELECT count(*) FROM entries").fetchone()
            self.kept.append(conn)

    def read(self) -> int:
        if self.kind == "collected":
            for _ in range(5):  # dropped, never closed
                sqlite3.connect(f"file:{self.path}?mode=ro", uri=True).execute(
                    "SELECT count(*) FROM entries").fetchone()
            gc.collect()
        if self.kind == "read-only-memory":
            reader = _open(self.path, read_only=True)
            try:
                return reader.stats().active
            finally:
                reader.close()
        counts = [int(c.execute("SELECT count(*) FROM entries").fetchone()[0])
                  for c in self.kept]
        fresh = _reader(self.path)  # a new connection reads what the writer committed
        try:
            counts.append(int(fresh.execute("SELECT count(*) FROM entries").fetchone()[0]))
        finally:
            fresh.close()
        return min(counts)


def main() -> None:
    path, kind = sys.argv[1], sys.argv[2]
    with Memory(path, agent_id="faults", embedder="hashing", vectors="exact") as first:
        first.store("the store exists before the application looks at it", type="FACT",
                    key="seed")
    beside = Beside(path, kind)
    memory = _open(path)
    beside.after_open()
    written = 0
    print("ready", flush=True)
    for line in sys.stdin:
        word, *args = line.split()
        if word == "write":
            for _ in range(int(args[0])):
                written += 1
                key = f"w{written}"
                memory.store(f"acknowledged write {written} " + "x" * 2000, type="FACT",
                             key=key)
                if kind == "collected" and written % 2 == 0:
                    beside.read()
                print("ack", key, flush=True)
            print("done", flush=True)
        elif word == "read":
            print("read", beside.read(), flush=True)


if __name__ == "__main__":
    main()
