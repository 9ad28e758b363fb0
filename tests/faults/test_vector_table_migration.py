"""Migration 3 moves the vectors to a rowid table (2 KB a vector instead of 4.7 KB). A store
written by the previous schema must come out with every vector intact, and a process
killed with SIGKILL in the middle of the migration must leave a store that opens, either
still on the old table (the migration runs again) or on the new one, never between."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from tests.faults.sweep import kill_after
from tulving import Memory
from tulving.adapters.storage.sqlite import connection as sqlite_store
from tulving.adapters.storage.sqlite.schema import MIGRATIONS


def old_store(path: Path, entries: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store as schema version 2 wrote it (vectors in a WITHOUT ROWID table)."""
    with monkeypatch.context() as patch:
        patch.setattr(sqlite_store, "MIGRATIONS", MIGRATIONS[:2])
        with Memory(path, agent_id="a", embedder="hashing", vectors="exact") as memory:
            for start in range(0, entries, 2000):
                memory.store_many({"content": f"note {i} about topic {i % 97}", "type": "OBSERVATION"}
                                  for i in range(start, min(entries, start + 2000)))
    assert "WITHOUT ROWID" in table_sql(path)


def table_sql(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'embeddings'").fetchone()
        return str(row[0])


def vectors(path: Path) -> dict[str, bytes]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT entry_id, vector FROM embeddings").fetchall())


def test_an_old_store_keeps_every_vector(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.db"
    old_store(path, 500, monkeypatch)
    before = vectors(path)
    with Memory(path, agent_id="a", embedder="hashing", vectors="exact") as memory:
        assert memory.search("topic 13", top_k=3, mode="semantic")
        assert memory.ctx.storage.get_meta("schema_version") == str(len(MIGRATIONS))
        memory.store("one more note", type="FACT")
    assert "WITHOUT ROWID" not in table_sql(path)
    after = vectors(path)
    assert len(after) == 501 and all(after[k] == v for k, v in before.items())
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # the unique index keeps one vector per entry; replacing one still works
        conn.execute("INSERT OR REPLACE INTO embeddings(entry_id, vector) "
                     "SELECT entry_id, vector FROM embeddings LIMIT 1")
        assert conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 501


OPEN = """
import sys
from tests.faults.sweep import kill_after
from tulving import Memory
Memory(sys.argv[1], agent_id="a", embedder="hashing", vectors="exact").startup()
print("opened", flush=True)
"""


@pytest.mark.parametrize("delay", [0.05, 0.3, 0.6, 1.0])
def test_a_kill_in_the_middle_leaves_a_working_store(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, delay: float) -> None:
    path = tmp_path / "big.db"
    old_store(path, 20_000, monkeypatch)
    before = vectors(path)
    kill_after(OPEN, path, delay)
    sql = table_sql(path)  # whole: either the old table or the new one
    assert ("WITHOUT ROWID" in sql) or ("UNIQUE" in sql)
    with Memory(path, agent_id="a", embedder="hashing", vectors="exact") as memory:
        assert len(memory.search("topic 13", top_k=5, mode="semantic")) == 5
    assert "WITHOUT ROWID" not in table_sql(path)
    after = vectors(path)
    assert after.keys() == before.keys()
    sample = list(before)[::997]
    assert all(np.array_equal(np.frombuffer(after[k], np.float32),
                              np.frombuffer(before[k], np.float32)) for k in sample)
