"""SQLite reads beside writes: pooled reader connections, the side connection for access
statistics, and hybrid search running its lexical query on a worker thread."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest

from tulving import Memory
from tulving.adapters.storage.sqlite.store import SQLiteStorage
from tulving.application.retrieval import search
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import StorageError
from tulving.domain.query import EntryFilter
from tulving.domain.types import MemoryType

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _entry(n: int, content: str = "") -> MemoryEntry:
    return MemoryEntry(
        id=f"01J{n:023d}", content=content or f"memory number {n}", type=MemoryType.FACT,
        agent_id="a", partition="p", created_at=AT, updated_at=AT, valid_from=AT,
        last_accessed_at=AT,
    )


def _in_thread(fn):  # type: ignore[no-untyped-def]
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive(), "the read waited for another thread's transaction"
    return out[0]


@pytest.fixture
def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    storage = SQLiteStorage(str(tmp_path / "m.db"))
    storage.open()
    yield storage
    storage.close()


def test_reads_neither_wait_for_nor_see_another_threads_open_transaction(
    store: SQLiteStorage,
) -> None:
    store.write(_entry(1))
    with store.transaction():
        store.write(_entry(2))
        # This thread sees its own uncommitted write...
        assert [e.id for e in store.get_many([_entry(2).id])] == [_entry(2).id]
        # ...another thread reads at once, the last committed state only.
        seen = _in_thread(lambda: {e.id for e in store.query(EntryFilter(partitions=None))})
        assert seen == {_entry(1).id}
    assert _in_thread(lambda: {e.id for e in store.query(EntryFilter(partitions=None))}) == {
        _entry(1).id, _entry(2).id}


def test_lexical_search_in_a_transaction_sees_its_own_write(store: SQLiteStorage) -> None:
    with store.transaction():
        store.write(_entry(1, "the zeppelin landed"))
        hits = store.lexical_search(["zeppelin"], EntryFilter(partitions=None), 5)
    assert [h.id for h in hits] == [_entry(1).id]


def test_readers_are_renewed_after_close_and_reopen(store: SQLiteStorage) -> None:
    store.write(_entry(1))
    assert len(store.get_many([_entry(1).id])) == 1  # a reader now sits in the pool
    store.close()
    with pytest.raises(StorageError):
        store.get_many([_entry(1).id])
    store.open()
    store.write(_entry(2))
    assert {e.id for e in store.get_many([_entry(1).id, _entry(2).id])} == {
        _entry(1).id, _entry(2).id}


def test_touch_outside_and_inside_a_transaction(store: SQLiteStorage) -> None:
    store.write_many([(_entry(1), None), (_entry(2), None)])
    later = datetime(2026, 2, 1, tzinfo=UTC)
    store.touch([_entry(1).id], later)  # the side connection
    with store.transaction():  # the side connection would wait on this: the main one is used
        store.touch([_entry(2).id], later)
    for entry in store.get_many([_entry(1).id, _entry(2).id]):
        assert entry.access_count == 1
        assert entry.last_accessed_at == later


def test_touch_in_the_background_does_not_hold_up_reads(store: SQLiteStorage) -> None:
    store.write_many([(_entry(n), None) for n in range(200)])
    ids = [_entry(n).id for n in range(200)]
    stop = threading.Event()
    errors: list[BaseException] = []

    def toucher() -> None:
        try:
            while not stop.is_set():
                store.touch(ids, AT)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    thread = threading.Thread(target=toucher)
    thread.start()
    try:
        for _ in range(50):
            assert len(store.get_many(ids[:20])) == 20
    finally:
        stop.set()
        thread.join()
    assert not errors
    assert min(e.access_count for e in store.get_many(ids)) >= 1


@pytest.fixture(autouse=True)
def _worker_for_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """These stores are tiny; the lexical worker is normally kept for large ones."""
    monkeypatch.setattr(search, "PARALLEL_FROM", 0)


def _memory(tmp_path: Path) -> Memory:
    memory = Memory(tmp_path / "s.db", agent_id="a", embedder="hashing", vectors="hnsw")
    memory.store_many(
        {"content": text, "type": "FACT"} for text in [
            "Caroline went to the LGBTQ support group on Sunday",
            "Melanie painted a sunrise over the lake last year",
            "The deploy failed because the database migration timed out",
            "We decided to use PostgreSQL for the billing service",
            "Caroline is researching adoption agencies",
            "The lake house has a leaky roof",
        ] * 3
    )
    return memory


def test_hybrid_search_is_the_same_with_and_without_the_lexical_worker(
    tmp_path: Path,
) -> None:
    memory = _memory(tmp_path)
    storage = memory.ctx.storage
    assert storage.capabilities.concurrent_reads
    queries = ["when did Caroline go to the support group", "lake", "database migration"]
    parallel = [[(r.entry.id, r.score) for r in memory.search(q)] for q in queries]
    assert any(name.startswith("tulving-lexical") for name in
               (t.name for t in threading.enumerate()))
    storage.capabilities = attrs.evolve(storage.capabilities, concurrent_reads=False)
    serial = [[(r.entry.id, r.score) for r in memory.search(q)] for q in queries]
    assert parallel == serial
    assert all(parallel)
    memory.close()
    assert not any(t.name.startswith("tulving-lexical") and t.is_alive()
                   for t in threading.enumerate())


def test_a_failing_vector_query_waits_for_the_lexical_worker_and_raises(
    tmp_path: Path,
) -> None:
    memory = _memory(tmp_path)
    vectors = memory.ctx.vectors
    assert vectors is not None
    finished: list[bool] = []
    searcher = memory._searcher
    lexical = searcher.lexical

    def slow_lexical(*args, **kwargs):  # type: ignore[no-untyped-def]
        result = lexical(*args, **kwargs)
        finished.append(True)
        return result

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("index gone")

    searcher.lexical = slow_lexical  # type: ignore[method-assign]
    vectors.query = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="index gone"):
        memory.search("lake house")
    assert finished == [True]
    memory.close()


def test_vector_hits_are_read_while_the_full_text_query_runs(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    searcher = memory._searcher
    storage = memory.ctx.storage
    lexical_done = threading.Event()
    reads: list[tuple[bool, int]] = []
    lexical, get_briefs = searcher.lexical, storage.get_briefs  # type: ignore[attr-defined]

    def slow_lexical(*args, **kwargs):  # type: ignore[no-untyped-def]
        result = lexical(*args, **kwargs)
        threading.Event().wait(0.2)
        lexical_done.set()
        return result

    def counting(ids):  # type: ignore[no-untyped-def]
        reads.append((lexical_done.is_set(), len(ids)))
        return get_briefs(ids)

    expected = [(r.entry.id, r.score) for r in memory.search("lake house roof")]
    searcher.lexical = slow_lexical  # type: ignore[method-assign]
    storage.get_briefs = counting  # type: ignore[attr-defined]
    got = [(r.entry.id, r.score) for r in memory.search("lake house roof")]
    assert got == expected
    # Search reads its rerank candidates as briefs, the first ones before the lexical list.
    assert reads and reads[0][0] is False and reads[0][1] > 0
    memory.close()


def test_a_small_store_searches_without_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "PARALLEL_FROM", 5_000)
    memory = _memory(tmp_path)
    assert memory.search("lake house")
    assert memory._searcher._workers is None
    memory.close()
