"""``Memory(path, read_only=True)`` beside a writer in another process (issue 32: readers
beside the SQLite writer).

The writer is a real second process holding the store's lock and writing batches; the
reader takes no lock, writes nothing (no database change, no index cache, no session, no
access statistics, no read audit), and sees everything the writer committed, entries
whose vectors the writer's cache file does not hold included.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tulving import Memory, ModelMismatchError, ReadOnlyError
from tulving.adapters.storage.sqlite import connection as sqlite_store
from tulving.adapters.storage.sqlite.schema import MIGRATIONS

ROOT = Path(__file__).resolve().parents[2]

WRITER = """
import json, sys
from tulving import Memory
path, vectors = sys.argv[1], sys.argv[2]
memory = Memory(path, agent_id="w", embedder="hashing", vectors=vectors)
memory.startup()
print("ready", flush=True)
for line in sys.stdin:
    command = json.loads(line)
    if command["op"] == "store":
        ids = [e.id for e in memory.store_many(
            {"content": text, "type": "FACT"} for text in command["texts"])]
    elif command["op"] == "forget":
        ids = [memory.forget(command["id"]).id]
    elif command["op"] == "flush":
        memory.flush()
        ids = []
    print(json.dumps(ids), flush=True)
memory.close()
"""


class Writer:
    def __init__(self, path: Path, vectors: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), vectors], cwd=ROOT, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def send(self, **command: Any) -> list[str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        answer: list[str] = json.loads(self.proc.stdout.readline())
        return answer

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0


def reader(path: Path, vectors: str, **kw: Any) -> Memory:
    return Memory(path, agent_id="w", embedder="hashing", vectors=vectors, read_only=True, **kw)


def files_of(path: Path) -> dict[str, int]:
    """Every file beside the store but SQLite's own WAL and shared-memory files."""
    return {p.name: p.stat().st_mtime_ns for p in path.parent.iterdir()
            if p.name.startswith(path.name) and not p.name.endswith(("-wal", "-shm"))}


def table_counts(path: Path) -> tuple[int, int, int]:
    with sqlite3.connect(path) as db:
        return (db.execute("SELECT count(*) FROM audit_log").fetchone()[0],
                db.execute("SELECT coalesce(sum(access_count), 0) FROM entries").fetchone()[0],
                db.execute("SELECT count(*) FROM sessions").fetchone()[0])


@pytest.mark.parametrize("vectors", ["usearch", "hnsw"])
def test_a_reader_sees_what_another_process_writes(tmp_path: Path, vectors: str) -> None:
    pytest.importorskip("usearch" if vectors == "usearch" else "hnswlib")
    path = tmp_path / "m.db"
    writer = Writer(path, vectors)
    try:
        writer.send(op="store", texts=[f"note {i} about topic {i % 11}" for i in range(300)])
        writer.send(op="flush")  # a cache file holding those 300
        zebra = writer.send(op="store", texts=["zebras crossing the river at dawn"])[0]
        with reader(path, vectors) as memory:
            before = files_of(path), table_counts(path)
            hits = memory.search("zebras crossing the river", top_k=1, mode="semantic")
            assert hits[0].entry.id == zebra  # not in the writer's cache file: the log
            assert memory.stats()["active"] == 301
            gone = memory.search("topic 4", top_k=1, mode="lexical")[0].entry.id
            writer.send(op="forget", id=gone)
            heron = writer.send(op="store", texts=["a grey heron waiting by the pond"])[0]
            # the same reader, still open, catches up before its next read
            assert memory.search("grey heron by the pond", 1, mode="semantic")[0].entry.id \
                == heron
            assert gone not in {h.entry.id for h in memory.search("topic 4", 50)}
            assert memory.ctx.vectors is not None and memory.ctx.vectors.count() == 301
            memory.curate("zebras", token_budget=200)
            memory.get(zebra)
            memory.list_entries(10)
            # the writer saves its cache and trims the log past the reader's position
            writer.send(op="store", texts=[f"more {i}" for i in range(5)])
            writer.send(op="flush")
            otter = writer.send(op="store", texts=["an otter sliding down the bank"])[0]
            assert memory.search("otter sliding down", 1, mode="semantic")[0].entry.id == otter
            with pytest.raises(ReadOnlyError):
                memory.store("a reader cannot write", type="FACT")
            with pytest.raises(ReadOnlyError):
                memory.forget(zebra)
            after = files_of(path), table_counts(path)
            # nothing written by the reader: its reads left no file, audit, access or session
            assert after[0].keys() == before[0].keys()
            assert after[1][1:] == before[1][1:]
    finally:
        writer.close()


def test_a_reader_never_migrates_and_says_so(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.db"
    with monkeypatch.context() as patch:
        patch.setattr(sqlite_store, "MIGRATIONS", MIGRATIONS[:3])
        with Memory(path, agent_id="a", embedder="hashing", vectors="exact") as memory:
            memory.store("written by the previous schema", type="FACT")
    stamp = path.stat().st_mtime_ns
    with pytest.raises(ReadOnlyError, match="schema version 3"):
        reader(path, "exact").startup()
    assert path.stat().st_mtime_ns == stamp
    with pytest.raises(ReadOnlyError, match="no store"):
        reader(tmp_path / "missing.db", "exact").startup()
    assert not (tmp_path / "missing.db").exists()


def test_a_reader_with_another_model_refuses_instead_of_reembedding(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(path, agent_id="a", embedder="hashing", vectors="exact") as memory:
        memory.store("the deploy runs on Fridays", type="FACT")
    with sqlite3.connect(path) as db:
        vectors = db.execute("SELECT vector FROM embeddings").fetchall()
    other: Any = {"embedder": {"dimension": 128}}
    with pytest.raises(ModelMismatchError, match="tulving maintenance reembed"):
        Memory(path, agent_id="a", embedder="hashing", vectors="exact", read_only=True,
               options=other).startup()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT vector FROM embeddings").fetchall() == vectors


def test_read_only_needs_a_store_that_can_open_read_only(tmp_path: Path) -> None:
    from tulving import ConfigError

    with pytest.raises(ConfigError, match="read-only"):
        Memory(None, agent_id="a", embedder="hashing", read_only=True).startup()
    with pytest.raises(ConfigError):
        Memory(tmp_path / "m.db", agent_id="a", read_only="yes")  # type: ignore[arg-type]


def test_a_reader_opens_while_the_writer_holds_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(path, agent_id="w", embedder="hashing", vectors="exact") as memory:
        memory.store("held by this process", type="FACT")
        began = time.perf_counter()
        with reader(path, "exact") as other:
            assert [h.entry.content for h in other.search("held", 1)] == [
                "held by this process"]
        assert time.perf_counter() - began < 30
