"""Writes that cannot deadlock or leave half a link, on SQLite and on PostgreSQL.

Threads store near-identical texts at once: texts differing in a number flag each other
as conflicts (both sides), a restatement with a full stop supersedes the unpunctuated one,
an exact restatement is a no-op. Every link must point both ways afterwards, no exact text
may be active twice, and on PostgreSQL no transaction may have deadlocked. Before writes
took one lock order and changed links by targeted updates, the flags were whole rows
rewritten from a read made before the transaction, and the second of two flaggers of one
entry erased the first one's link.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from tulving.domain.query import EntryFilter

THREADS = 8
STORES = 15
TEMPLATE = "The payments service deploy window is {n} minutes on weekdays for team alpha"


def hammer(memories: list[Any]) -> list[BaseException]:
    errors: list[BaseException] = []
    gate = threading.Barrier(THREADS)

    def writer(i: int) -> None:
        rng = random.Random(i)
        memory = memories[i % len(memories)]
        gate.wait()
        for _ in range(STORES):
            text = TEMPLATE.format(n=rng.randint(10, 16)) + ("." if rng.random() < 0.3 else "")
            try:
                memory.store(text, type="FACT")
            except BaseException as exc:  # reported below
                errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return errors


def check(memory: Any) -> None:
    entries = {e.id: e for e in memory.ctx.storage.query(
        EntryFilter(partitions=memory.ctx.visible_partitions(), include_archived=True))}
    half = [(e.id, other) for e in entries.values() for other in e.conflict_ids
            if other not in entries or e.id not in entries[other].conflict_ids]
    assert half == [], f"{len(half)} conflict links point one way"
    chains = [e.id for e in entries.values() if e.superseded_by is not None
              and entries[e.superseded_by].supersedes != e.id]
    assert chains == []
    active = Counter(e.content for e in entries.values() if e.archived_at is None)
    assert [t for t, n in active.items() if n > 1] == []
    assert any(e.conflict_ids for e in entries.values())


def test_threads_of_one_sqlite_memory(make_memory: Callable[..., Any]) -> None:
    memory = make_memory()
    memory.startup()
    assert hammer([memory]) == []
    check(memory)


@pytest.mark.postgres
def test_two_processes_worth_of_pools_over_one_postgres_store(pg_url: str,
                                                              pg_schema: str) -> None:
    from tests.replicas.checks import deadlocks
    from tulving import Memory

    class Back:
        def rows(self, query: str) -> Any:
            import psycopg
            from psycopg.rows import dict_row

            with psycopg.connect(pg_url, row_factory=dict_row) as conn:
                return conn.execute(query).fetchall()

    before = deadlocks(Back())
    memories = [Memory(pg_url, agent_id="team", embedder="hashing",
                       options={"storage": {"schema": pg_schema, "max_size": 4}})
                for _ in range(2)]
    try:
        for m in memories:
            m.startup()
        assert hammer(memories) == []
        check(memories[0])
    finally:
        for m in memories:
            m.close()
    assert deadlocks(Back()) == before


@pytest.fixture
def pg_url() -> str:
    from tulving.testing.postgres import require_server

    return require_server()


@pytest.fixture
def pg_schema(pg_url: str) -> Any:
    from tulving.testing.postgres import drop_schema, new_schema_name

    schema = new_schema_name("writeorder")
    yield schema
    drop_schema(pg_url, schema)
