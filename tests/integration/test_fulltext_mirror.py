"""The in-memory mirror of the SQLite full-text index ranks exactly as FTS5 does, follows
every committed write (and no rolled-back one), and steps aside whenever it cannot be
exact: inside the writer's own transaction, for a word FTS5 splits in two, after a
failed build."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tulving.adapters.storage.sqlite import create
from tulving.adapters.storage.sqlite import fulltext_mirror as fm
from tulving.adapters.storage.sqlite.store import SQLiteStorage
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ConfigError
from tulving.domain.query import EntryFilter
from tulving.domain.types import MemoryType

AT = datetime(2026, 1, 1, tzinfo=UTC)
EVERYONE = EntryFilter(partitions=("p", "q"))
WORDS = ("caroline", "adoption", "agency", "painting", "paint", "painted", "lake", "sunrise",
         "café", "cafe", "naïve", "über", "東京", "weekend", "support", "group", "the")


def _entry(n: int, content: str, partition: str = "p") -> MemoryEntry:
    return MemoryEntry(
        id=f"01J{n:023d}", content=content, type=MemoryType.FACT, agent_id="a",
        partition=partition, created_at=AT, updated_at=AT, valid_from=AT, last_accessed_at=AT,
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStorage]:
    storage = SQLiteStorage(str(tmp_path / "m.db"), fulltext_mirror_from=0)
    storage.open()
    yield storage
    storage.close()


def _fts5_ranking(path: str, terms: list[str]) -> list[tuple[int, float]]:
    """Every matching row with FTS5's own score, best first, ties by rowid."""
    expression = " OR ".join(f'"{t}"' for t in terms)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return [(r, -s) for r, s in conn.execute(
            "SELECT rowid, bm25(entries_fts) FROM entries_fts WHERE entries_fts MATCH ? "
            "ORDER BY bm25(entries_fts), rowid", (expression,))]


def _mirror_ranking(store: SQLiteStorage, terms: list[str]) -> list[tuple[int, float]] | None:
    assert store.fulltext_mirror_ready(10)
    mirror = store._mirror
    assert mirror is not None
    found = mirror.search(terms, 10**6)
    return None if found is None else found[0]


def _same_as_fts5(store: SQLiteStorage, terms: list[str]) -> None:
    assert _mirror_ranking(store, terms) == _fts5_ranking(store.path, terms)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(st.lists(st.sampled_from(WORDS), min_size=0, max_size=12),
                     min_size=1, max_size=30),
       ops=st.lists(st.tuples(st.sampled_from(["update", "delete", "rollback", "add"]),
                              st.integers(0, 1000),
                              st.lists(st.sampled_from(WORDS), min_size=1, max_size=8)),
                    max_size=12),
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5))
def test_scores_and_order_are_fts5s_through_any_history_of_writes(
    tmp_path_factory: pytest.TempPathFactory, docs: list[list[str]],
    ops: list[tuple[str, int, list[str]]], query: list[str],
) -> None:
    path = tmp_path_factory.mktemp("prop") / "m.db"
    store = SQLiteStorage(str(path), fulltext_mirror_from=0)
    store.open()
    try:
        entries = [_entry(i, " ".join(words)) for i, words in enumerate(docs)]
        store.write_many([(e, None) for e in entries])
        _same_as_fts5(store, list(dict.fromkeys(query)))  # builds the mirror
        for n, (op, pick, words) in enumerate(ops):
            text = " ".join(words)
            if op == "add" or not entries:
                entries.append(_entry(10_000 + n, text))
                store.write(entries[-1])
                continue
            target = entries[pick % len(entries)]
            if op == "update":
                store.replace(attrs.evolve(target, content=text))
            elif op == "delete":
                store.delete([target.id])
                entries.remove(target)
            else:
                with pytest.raises(RuntimeError), store.transaction():
                    store.write(_entry(20_000 + n, text))
                    store.replace(attrs.evolve(target, content=text))
                    raise RuntimeError("abandon")
        _same_as_fts5(store, list(dict.fromkeys(query)))
    finally:
        store.close()


@pytest.fixture
def twins(tmp_path: Path) -> Iterator[tuple[SQLiteStorage, SQLiteStorage]]:
    """One store file opened twice: with the mirror from its first row, and without."""
    path = str(tmp_path / "m.db")
    mirrored = SQLiteStorage(path, fulltext_mirror_from=0)
    mirrored.open()
    plain = SQLiteStorage(path, fulltext_mirror_from=None, lock=False)
    plain.open()
    yield mirrored, plain
    plain.close()
    mirrored.close()


def test_lexical_search_returns_the_same_hits_with_and_without_the_mirror(
    twins: tuple[SQLiteStorage, SQLiteStorage],
) -> None:
    mirrored, plain = twins
    texts = [" ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(i % 9 + 1))
             for i in range(120)]
    mirrored.write_many([(_entry(i, t, "p" if i % 3 else "q"), None)
                         for i, t in enumerate(texts)])
    assert mirrored.fulltext_mirror_ready(10)
    for query in (["caroline", "lake"], ["painting"], ["東京", "café"], ["nothing"]):
        for flt in (EVERYONE, EntryFilter(partitions=("q",))):
            for limit in (1, 5, 200):
                assert (mirrored.lexical_search(query, flt, limit)
                        == plain.lexical_search(query, flt, limit))


def test_a_filter_that_drops_the_best_matches_widens_the_mirror_before_fts5_joins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Archived versions and other partitions are in the index too: when the filter
    keeps fewer than asked of the mirror's best rows, the mirror is asked for more (the
    full FTS5 join cost 11 ms a query at 200k entries); past ``MIRROR_WIDEST`` the join
    runs. Either way the hits are FTS5's."""
    from tulving.adapters.storage.sqlite import lexical as lexical_module
    from tulving.adapters.storage.sqlite import store as store_module

    path = str(tmp_path / "m.db")
    mirrored = SQLiteStorage(path, fulltext_mirror_from=0)
    mirrored.open()
    plain = SQLiteStorage(path, fulltext_mirror_from=None, lock=False)
    plain.open()
    try:  # 1,500 short matches in "p" outrank 60 long ones in "q"
        entries = [_entry(i, "lake sunrise") for i in range(1500)]
        entries += [_entry(1500 + i, "lake " + "weekend group support " * (1 + i % 4), "q")
                    for i in range(60)]
        mirrored.write_many([(e, None) for e in entries])
        assert mirrored.fulltext_mirror_ready(10)
        only_q = EntryFilter(partitions=("q",))
        expected = {limit: plain.lexical_search(["lake"], only_q, limit) for limit in (10, 50)}
        joins: list[int] = []
        full = store_module.SQLiteStorage._full_lexical

        def counted(*args: object) -> object:
            joins.append(1)
            return full(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(store_module.SQLiteStorage, "_full_lexical", staticmethod(counted))
        for limit in (10, 50):
            got = mirrored.lexical_search(["lake"], only_q, limit)
            assert got == expected[limit] and len(got) == limit
        assert joins == []  # the mirror, asked for more, answered
        monkeypatch.setattr(lexical_module, "MIRROR_WIDEST", 100)
        assert mirrored.lexical_search(["lake"], only_q, 50) == expected[50]
        assert joins == [1]  # past MIRROR_WIDEST the FTS5 join answered
    finally:
        plain.close()
        mirrored.close()


def test_a_committed_write_is_found_by_the_next_search(store: SQLiteStorage) -> None:
    store.write(_entry(1, "the sunrise over the lake"))
    assert store.fulltext_mirror_ready(10)
    assert store.lexical_search(["weekend"], EVERYONE, 5) == []
    store.write(_entry(2, "a quiet weekend by the lake"))
    assert [h.id for h in store.lexical_search(["weekend"], EVERYONE, 5)] == [_entry(2, "").id]
    store.replace(attrs.evolve(_entry(2, ""), content="a busy week in the city"))
    assert store.lexical_search(["weekend"], EVERYONE, 5) == []
    store.delete([_entry(1, "").id])
    assert store.lexical_search(["sunrise"], EVERYONE, 5) == []
    _same_as_fts5(store, ["lake", "city", "week"])


def test_inside_its_own_transaction_the_writer_sees_its_uncommitted_rows(
    store: SQLiteStorage,
) -> None:
    store.write(_entry(1, "a lake at sunrise"))
    assert store.fulltext_mirror_ready(10)
    with store.transaction():
        store.write(_entry(2, "the adoption agency called"))
        assert [h.id for h in store.lexical_search(["adoption"], EVERYONE, 5)] == [
            _entry(2, "").id]
        seen_elsewhere: list[object] = []
        reader = threading.Thread(
            target=lambda: seen_elsewhere.append(store.lexical_search(["adoption"], EVERYONE, 5)))
        reader.start()
        reader.join(10)
        assert seen_elsewhere == [[]]  # not committed yet: other threads do not see it
    assert len(store.lexical_search(["adoption"], EVERYONE, 5)) == 1


def test_a_word_fts5_splits_into_several_tokens_is_answered_by_fts5(
    store: SQLiteStorage,
) -> None:
    store.write_many([(_entry(1, "we met at the lake-house"), None),
                      (_entry(2, "the house by the lake"), None)])
    assert store.fulltext_mirror_ready(10)
    assert _mirror_ranking(store, ["lake-house"]) is None  # a phrase: not the mirror's
    assert [h.id for h in store.lexical_search(["lake-house"], EVERYONE, 5)] == [
        _entry(1, "").id]


def test_a_failed_build_leaves_fts5_answering(
    store: SQLiteStorage, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(conn: sqlite3.Connection) -> object:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(fm.FullTextMirror, "_read_index", staticmethod(broken))
    store.write(_entry(1, "a lake at sunrise"))
    assert not store.fulltext_mirror_ready(10)
    assert "FTS5 answers alone" in caplog.text
    assert [h.id for h in store.lexical_search(["lake"], EVERYONE, 5)] == [_entry(1, "").id]


def test_deleted_or_rewritten_words_leave_the_mirror(store: SQLiteStorage) -> None:
    secret = _entry(1, "the vault code is zanzibarite")
    kept = _entry(2, "a lake at sunrise")
    store.write_many([(secret, None), (kept, None)])
    _same_as_fts5(store, ["lake"])
    mirror = store._mirror
    assert mirror is not None and mirror._index is not None
    assert "zanzibarit" in mirror._index._term_number  # porter-stemmed, as FTS5 holds it
    built = mirror._index
    store.replace(attrs.evolve(kept, importance=0.9))  # same text: the mirror stays
    assert store.lexical_search(["lake"], EVERYONE, 5)
    assert mirror._index is built
    store.delete([secret.id])  # erased: the mirror is rebuilt without its words
    assert store.lexical_search(["zanzibarite"], EVERYONE, 5) == []
    _same_as_fts5(store, ["lake", "vault"])
    assert mirror._index is not built
    assert "zanzibarit" not in mirror._index._term_number
    rebuilt = mirror._index
    store.replace(attrs.evolve(kept, content="a pond at dusk"))  # new text: rebuilt again
    _same_as_fts5(store, ["lake", "pond"])
    assert mirror._index is not rebuilt and "sunris" not in mirror._index._term_number


def test_a_bulk_import_rebuilds_the_mirror_and_fts5_answers_meanwhile(
    store: SQLiteStorage, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fm, "REFRESH_MAX_ROWS", 20)
    store.write(_entry(0, "a lake at sunrise"))
    assert store.fulltext_mirror_ready(10)
    store.write_many([(_entry(i, f"{WORDS[i % len(WORDS)]} lake {i}"), None)
                      for i in range(1, 60)])
    mirror = store._mirror
    assert mirror is not None
    assert mirror.search(["lake"], 5) is None and not mirror.ready  # too many to refresh
    # The next search rebuilds it (inline for a store this small; on a thread past
    # INLINE_BUILD_ROWS, FTS5 answering meanwhile).
    assert len(store.lexical_search(["lake"], EVERYONE, 100)) == 60
    _same_as_fts5(store, ["lake", "caroline", "sunrise"])


def test_closing_during_a_build_stops_it(tmp_path: Path) -> None:
    path = str(tmp_path / "big.db")
    store = SQLiteStorage(path, fulltext_mirror_from=0)
    store.open()
    store.write_many([(_entry(i, " ".join(WORDS[(i + j) % len(WORDS)] for j in range(30))),
                       None) for i in range(fm.INLINE_BUILD_ROWS + 500)])
    store.lexical_search(["lake"], EVERYONE, 5)  # starts the build on a thread
    store.close()  # interrupts and joins it; nothing is left running
    assert not [t for t in threading.enumerate() if t.name == "tulving-fulltext-mirror"]
    store.open()
    try:
        assert store.fulltext_mirror_ready(30)
        _same_as_fts5(store, ["lake", "caroline"])
    finally:
        store.close()


def test_writers_and_readers_in_threads_end_in_fts5s_state(store: SQLiteStorage) -> None:
    store.write(_entry(0, "lake"))
    assert store.fulltext_mirror_ready(10)
    errors: list[BaseException] = []

    def write(offset: int) -> None:
        try:
            for i in range(40):
                store.write(_entry(offset + i, f"{WORDS[i % len(WORDS)]} lake {i}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def read() -> None:
        try:
            for _ in range(40):
                store.lexical_search(["lake", "painting"], EVERYONE, 10)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(1000 * k,)) for k in (1, 2)]
    threads += [threading.Thread(target=read) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    _same_as_fts5(store, ["lake", "painting", "group"])


def test_the_threshold_is_checked_and_can_turn_the_mirror_off(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="fulltext_mirror_from"):
        create(None, path=str(tmp_path / "a.db"), fulltext_mirror_from=-1)
    with pytest.raises(ConfigError, match="fulltext_mirror_from"):
        create(None, path=str(tmp_path / "a.db"), fulltext_mirror_from="many")  # type: ignore[arg-type]
    for n, setting in enumerate((None, False)):  # False: what a TOML file can say
        off = create(None, path=str(tmp_path / f"b{n}.db"), fulltext_mirror_from=setting)
        off.open()
        try:
            off.write(_entry(1, "a lake"))
            assert not off.fulltext_mirror_ready(1)
            assert len(off.lexical_search(["lake"], EVERYONE, 5)) == 1
        finally:
            off.close()
    high = create(None, path=str(tmp_path / "c.db"), fulltext_mirror_from=1000)
    high.open()
    try:
        high.write(_entry(1, "a lake"))
        assert not high.fulltext_mirror_ready(1)  # one row: FTS5 is the right engine
    finally:
        high.close()


def test_a_large_store_builds_its_mirror_only_for_a_process_that_keeps_asking(
        tmp_path: Path) -> None:
    """A one-shot command on a large store is answered by FTS5 and builds no mirror (at a
    million memories the build costs 13.8 s of a core and ~1.2 GB); a process that keeps
    asking builds it after MIRROR_AFTER_QUERIES queries."""
    from tulving.adapters.storage.sqlite import store as sqlite_store

    storage = SQLiteStorage(str(tmp_path / "m.db"), fulltext_mirror_from=0)
    storage.open()
    try:
        rows = fm.INLINE_BUILD_ROWS + 10
        storage.write_many([(_entry(n, f"note {n} about the lake"), None)
                            for n in range(rows)])
        for _ in range(sqlite_store.MIRROR_AFTER_QUERIES - 1):
            assert len(storage.lexical_search(["lake"], EVERYONE, 5)) == 5
            assert storage._mirror is None
        storage.lexical_search(["lake"], EVERYONE, 5)
        assert storage._mirror is not None
        assert storage.fulltext_mirror_ready(30)
        assert len(storage.lexical_search(["lake"], EVERYONE, 5)) == 5
    finally:
        storage.close()


def test_inside_a_transaction_that_wrote_no_text_the_mirror_answers_as_fts5_would(
        twins: tuple[SQLiteStorage, SQLiteStorage], monkeypatch: pytest.MonkeyPatch) -> None:
    """The write path's restatement lookups run inside the writer's transaction before
    it writes its rows: the mirror answers them (on FTS5 each cost more the more rows
    matched) with FTS5's hits, and steps aside once the transaction has written a text."""
    mirrored, plain = twins
    texts = [" ".join(WORDS[(i * 5 + j * 2) % len(WORDS)] for j in range(i % 7 + 2))
             for i in range(150)]
    mirrored.write_many([(_entry(i, t, "p" if i % 4 else "q"), None)
                         for i, t in enumerate(texts)])
    assert mirrored.fulltext_mirror_ready(10) and mirrored._mirror is not None
    asked: list[object] = []
    search = mirrored._mirror.search
    monkeypatch.setattr(mirrored._mirror, "search",
                        lambda *a: asked.append(a) or search(*a))
    queries = (["caroline", "lake"], ["painting", "paint"], ["the"], ["nothing"])
    with mirrored.transaction():
        for query in queries:
            for flt in (EVERYONE, EntryFilter(partitions=("q",))):
                assert (mirrored.lexical_search(query, flt, 8)
                        == plain.lexical_search(query, flt, 8)), query
        answered = len(asked)
        assert answered >= 2 * len(queries)  # once a query, more when a filter widens
        mirrored.write(_entry(500, "caroline by the lake at sunrise"))
        found = mirrored.lexical_search(["sunrise"], EVERYONE, 200)
        assert _entry(500, "").id in {h.id for h in found}  # its own row, from FTS5
        assert len(asked) == answered
    assert mirrored.lexical_search(["sunrise"], EVERYONE, 200) == plain.lexical_search(
        ["sunrise"], EVERYONE, 200)


def test_a_writer_that_searches_only_inside_its_transactions_builds_the_mirror(
        tmp_path: Path) -> None:
    """A bulk writer of facts never searches outside a transaction; after
    MIRROR_AFTER_QUERIES of its lookups a commit starts the mirror's build."""
    from tulving.adapters.storage.sqlite import store as sqlite_store

    storage = SQLiteStorage(str(tmp_path / "m.db"), fulltext_mirror_from=0)
    storage.open()
    try:
        storage.write_many([(_entry(n, f"note {n} about the lake"), None)
                            for n in range(fm.INLINE_BUILD_ROWS + 10)])
        for n in range(sqlite_store.MIRROR_AFTER_QUERIES):
            assert storage._mirror is None
            with storage.transaction():
                assert len(storage.lexical_search(["lake"], EVERYONE, 5)) == 5
                storage.write(_entry(10_000 + n, f"one more note {n} by the lake"))
        assert storage._mirror is not None and storage.fulltext_mirror_ready(30)
        with storage.transaction():
            assert len(storage.lexical_search(["lake"], EVERYONE, 5)) == 5
    finally:
        storage.close()
