"""Reads never wait behind writes, and what they record about themselves survives a kill.

A read used to append its audit record (every 128 reads, or 2 s) on the caller's thread,
in a transaction of the store: beside a long write (an import holds its transaction from
its first batch to its last; a remember of 100,000 characters held it 31.7 s) that read
waited for the whole write. Reads now journal their records (``ports.storage
.ReadJournal``) and a background thread settles them. In-process here, through a server
process in ``tests/http/test_reads_beside_writes.py``, the figures in
``benchmarks/read_fairness.py``."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.faults.sweep import ROOT, env
from tulving import Memory

#: Entries of the import the reads run beside (long enough to span 128 reads' records).
IMPORTED = 2000
#: The slowest read allowed beside it (a read that waited would take the import's rest).
QUICK_S = 0.5


def _memory(path: Path, **options: object) -> Memory:
    return Memory(path, agent_id="reader", embedder="hashing", vectors="exact",
                  **options)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bundle")
    with _memory(folder / "source.db") as source:
        source.store_many({"content": f"imported note {i} about the harbour crane",
                           "type": "FACT"} for i in range(IMPORTED))
        source.export(folder / "notes.tulving")
    return folder / "notes.tulving"


def test_reads_beside_a_long_import_do_not_wait_for_it(tmp_path: Path, bundle: Path) -> None:
    importing = threading.Event()

    def progress(what: str, done: int, total: int) -> None:
        if what == "import":
            importing.set()  # (called inside the import's one transaction)

    memory = _memory(tmp_path / "m.db", progress=progress).startup()
    try:
        first = memory.store("a memory to read while the import runs", type="FACT",
                             key="read-me")
        memory.search("memory to read", 3)
        memory.curate("memory to read", token_budget=300)  # (the tokenizer loads once)
        importer = threading.Thread(target=memory.import_bundle, args=(bundle,))
        began = time.perf_counter()
        importer.start()
        assert importing.wait(60)
        latencies: list[float] = []
        while importer.is_alive():
            t0 = time.perf_counter()
            memory.get("read-me")
            if len(latencies) % 20 == 0:
                memory.search("memory to read", 3)
                memory.curate("memory to read", token_budget=300)
            latencies.append(time.perf_counter() - t0)
        importer.join()
        spanned = time.perf_counter() - began
        assert memory.stats().active == IMPORTED + 1
        assert max(latencies) < QUICK_S, (
            f"a read waited {max(latencies):.2f} s beside an import of {spanned:.1f} s")
        assert len(latencies) > 200, "the import ended before 200 reads: make it longer"
        memory.flush()  # every read's record and access now in the store
        gets = [r for r in memory.audit_log() if r.action == "get"]
        assert len(gets) == len(latencies)
        assert memory.get(first.id).access_count >= len(latencies)
    finally:
        memory.close()


#: A writer process reads, acknowledges each read, and is killed before it settles them.
CHILD = r"""
import sys
from tulving import Memory
memory = Memory(sys.argv[1], agent_id="reader", embedder="hashing", vectors="exact",
                ).startup()
ids = [e.id for e in memory.store_many({"content": f"kiwi note {i}", "type": "FACT"}
                                       for i in range(5))]
print("ready", flush=True)
for n in range(40):
    hits = memory.search("kiwi note", 3)
    print("search", " ".join(h.entry.id for h in hits), flush=True)
for n in range(20):
    print("get", memory.get(ids[n % 5]).id, flush=True)
print("done", flush=True)
sys.stdin.readline()
"""


def test_what_reads_recorded_survives_a_kill(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], cwd=ROOT, env=env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acknowledged: list[tuple[str, list[str]]] = []
    for line in proc.stdout:
        word, *ids = line.split()
        if word == "done":
            break
        if word != "ready":
            acknowledged.append((word, ids))
    proc.send_signal(signal.SIGKILL)  # before the background settling (2 s)
    proc.wait()
    assert len(acknowledged) == 60, proc.stderr.read() if proc.stderr else ""
    with _memory(path) as memory:  # a writer settles what the killed one journaled
        actions = Counter(r.action for r in memory.audit_log())
        assert actions["search"] == 40 and actions["get"] == 20, actions
        returned = Counter(i for _, ids in acknowledged for i in ids)
        for entry_id, n in returned.items():
            assert memory.get(entry_id).access_count == n  # (this get's own: after it)
        assert memory.verify_audit().ok
