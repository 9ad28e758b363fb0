"""Single-writer lock for a SQLite store (ADR-015).

An exclusive ``flock`` on ``<db>.lock``: the kernel releases it when the holder dies, so a
lock left by a killed process is recovered by simply acquiring it again, with no stale-PID
guessing. The file records the holder (pid, host) so a refusal can name it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from typing import IO

from tulving.domain.errors import LockError, StorageError


class WriterLock:
    def __init__(self, path: str) -> None:
        self.path = path
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        if self._handle is not None:
            return
        try:
            handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held open on purpose
        except OSError as exc:  # a read-only folder or file, a full disk
            raise StorageError(
                f"cannot open {self.path[:-5]} for writing ({exc.strerror or exc}): a SQLite "
                "memory needs its folder writable (its lock, WAL and index cache live "
                "beside it); copy a read-only store somewhere writable to read it"
            ) from exc
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise LockError(
                f"{self.path[:-5]} is open for writing by another process ({holder}); "
                "one process writes a SQLite memory at a time — use PostgreSQL for many writers"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is None:
            return
        try:
            self._handle.seek(0)
            self._handle.truncate()
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
        finally:
            self._handle.close()
            self._handle = None
