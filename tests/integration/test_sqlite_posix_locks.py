"""A second open of a store in a process that holds it must not drop the first one's
SQLite locks (POSIX locks belong to the process: closing any descriptor of the file drops
them all). When they were dropped, another process took the WAL for one nobody used,
checkpointed and deleted it under the first connection, and the store read "database
disk image is malformed" (found by the door suites: the library's store, probed by a
read-only open beside the writer, then written by the CLI). An application's own
connections beside a Memory: ``tests/faults/test_foreign_connections.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.foreign import others_see as _others_see
from tulving import Memory


@pytest.mark.parametrize("second", ["read_only", "writer_refused", "encrypted_check"])
def test_a_second_open_keeps_the_first_ones_locks(tmp_path: Path, second: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TULVING_TEST_LOCKS_KEY", "a key that this plain store refuses")
    path = tmp_path / "m.db"
    with Memory(path, agent_id="a", embedder="hashing", vectors="exact") as first:
        first.store("the first connection holds the file", type="FACT")
        assert first.search("first connection", 1)  # a read: its SHARED lock is held
        assert _others_see(path) == "held"
        if second == "read_only":
            with Memory(path, agent_id="a", embedder="hashing", vectors="exact",
                        read_only=True) as reader:
                assert reader.search("first connection", 1)
        elif second == "writer_refused":
            from tulving.domain.errors import TulvingError

            with pytest.raises(TulvingError):  # the writer lock is taken: refused
                Memory(path, agent_id="a", embedder="hashing", vectors="exact").startup()
        else:
            from tulving.domain.errors import EncryptionError

            with pytest.raises(EncryptionError):  # a key for a plain file: refused
                Memory(path, agent_id="a", embedder="hashing", vectors="exact",
                       read_only=True, encryption="env:TULVING_TEST_LOCKS_KEY").startup()
        assert _others_see(path) == "held"  # before the fix: "free"
        first.store("and keeps writing safely", type="FACT")
    import sqlite3

    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == 2
