"""Writes planned before the tenant's write lock and checked under it (issue 44).

A write on PostgreSQL reads its candidates before it takes its tenant's lock and commits in
one message whose check refuses a plan that another writer outdated meanwhile. These tests
make that race happen on purpose: a second ``Memory`` (another process's writer, over the
same schema) writes between the first one's reads and its commit, through the seam the
writer itself uses (``PlannedReads.prefetch``). Whatever the interleaving, the decisions
are the ones the rules make from what was committed: an exact restatement is a no-op, a
restatement with other punctuation supersedes, a fact with a new value supersedes, and
the audit chain stays intact. The rows are read back behind the library's back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row

from tulving import Memory
from tulving.application.writing import write_plans

pytestmark = pytest.mark.postgres

TEXT = "The payments service deploy window is 12 minutes on weekdays for team alpha"


@pytest.fixture
def memories(pg_url: str, pg_schema: str) -> Iterator[Callable[[], Memory]]:
    opened: list[Memory] = []

    def make() -> Memory:
        memory = Memory(pg_url, agent_id="team", user_id="acme", embedder="hashing",
                        options={"storage": {"schema": pg_schema, "max_size": 2}})
        opened.append(memory.startup())
        return memory

    yield make
    for memory in opened:
        memory.close()


def rows(url: str, schema: str, query: str, params: Any = ()) -> list[dict[str, Any]]:
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema)))
        return conn.execute(query, params).fetchall()  # type: ignore[arg-type]


@pytest.fixture
def meanwhile(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[], Any]], list[int]]:
    """``meanwhile(write)``: the next planned write runs ``write`` between its reads and its
    commit (once); the returned list counts planned commits the store refused."""
    refused: list[int] = []
    plain_prefetch = write_plans.PlannedReads.prefetch
    pending: list[Callable[[], Any]] = []

    def prefetch(self: Any, *args: Any) -> None:
        plain_prefetch(self, *args)
        while pending:
            pending.pop()()

    from tulving.adapters.storage.postgres.store import PostgresStorage

    plain_commit = PostgresStorage.commit_planned

    def commit_planned(self: Any, *args: Any, **kwargs: Any) -> Any:
        done = plain_commit(self, *args, **kwargs)
        if done is None:
            refused.append(1)
        return done

    monkeypatch.setattr(write_plans.PlannedReads, "prefetch", prefetch)
    monkeypatch.setattr(PostgresStorage, "commit_planned", commit_planned)

    def arm(write: Callable[[], Any]) -> list[int]:
        pending.append(write)
        return refused

    return arm


def test_a_planned_write_commits_marked_and_audited(memories: Any, pg_url: str,
                                                    pg_schema: str) -> None:
    memory = memories()
    first = memory.store(TEXT, type="FACT")
    again = memory.store(TEXT, type="FACT")  # an exact restatement: reinforces the first
    other = memory.store("Refunds over 500 EUR need a second approver", type="DECISION",
                         tags=["payments", "refunds"])
    assert again.id == first.id
    marks = rows(pg_url, pg_schema, "SELECT entry_id, write_seq FROM entry_writes "
                 "ORDER BY write_seq")
    assert [m["entry_id"] for m in marks][-2:] == [first.id, other.id]
    assert marks[-1]["write_seq"] > marks[-2]["write_seq"]
    count = rows(pg_url, pg_schema, "SELECT seq FROM tenant_writes")[0]["seq"]
    assert count >= 3  # every writing transaction counted, the no-op's included
    assert memory.get(other.id).tags == ("payments", "refunds")
    assert memory.verify_audit()["ok"]
    decisions = [r.details.get("decision") for r in memory.audit_log()
                 if r.action == "store"]
    assert decisions == ["add", "reinforce", "add"]
    assert memory.get(first.id).metadata["evidence"]["count"] == 2


def test_a_twin_written_meanwhile_makes_the_write_a_no_op(memories: Any, meanwhile: Any,
                                                         pg_url: str, pg_schema: str) -> None:
    mine, theirs = memories(), memories()
    written: list[Any] = []
    refused = meanwhile(lambda: written.append(theirs.store(TEXT, type="FACT")))
    entry = mine.store(TEXT, type="FACT")
    assert refused == [1]  # the plan (an add) was outdated and not committed
    assert entry.id == written[0].id
    active = rows(pg_url, pg_schema, "SELECT id FROM entries WHERE archived_at IS NULL")
    assert [r["id"] for r in active] == [entry.id]
    assert mine.verify_audit()["ok"]


def test_a_near_duplicate_written_meanwhile_is_superseded_both_ways(
        memories: Any, meanwhile: Any, pg_url: str, pg_schema: str) -> None:
    mine, theirs = memories(), memories()
    written: list[Any] = []
    refused = meanwhile(lambda: written.append(theirs.store(TEXT, type="DECISION")))
    entry = mine.store(TEXT + ".", type="DECISION")  # the same words: an update
    assert refused == [1]
    found = {r["id"]: r for r in rows(
        pg_url, pg_schema, "SELECT id, supersedes, superseded_by, archived_at FROM entries")}
    assert found[entry.id]["supersedes"] == written[0].id
    assert found[written[0].id]["superseded_by"] == entry.id
    assert found[written[0].id]["archived_at"] is not None
    assert mine.verify_audit()["ok"]


def test_a_restated_fact_written_meanwhile_is_reinforced(
        memories: Any, meanwhile: Any, pg_url: str, pg_schema: str) -> None:
    mine, theirs = memories(), memories()
    written: list[Any] = []
    refused = meanwhile(lambda: written.append(theirs.store(TEXT, type="FACT")))
    entry = mine.store(TEXT + ".", type="FACT")  # the same words: one more statement
    assert refused == [1]
    assert entry.id == written[0].id and entry.metadata["evidence"]["count"] == 2
    active = rows(pg_url, pg_schema, "SELECT id, metadata FROM entries WHERE archived_at IS NULL")
    assert [r["id"] for r in active] == [entry.id]
    assert json.loads(active[0]["metadata"])["evidence"]["count"] == 2
    assert mine.verify_audit()["ok"]


def test_a_conflicting_number_written_meanwhile_is_flagged_both_ways(
        memories: Any, meanwhile: Any, pg_url: str, pg_schema: str) -> None:
    mine, theirs = memories(), memories()
    written: list[Any] = []
    refused = meanwhile(lambda: written.append(
        theirs.store(TEXT.replace("12", "15"), type="FACT")))
    entry = mine.store(TEXT, type="FACT")
    assert refused == [1]
    flags = {r["id"]: json.loads(r["conflict_ids"]) for r in rows(
        pg_url, pg_schema, "SELECT id, conflict_ids FROM entries")}
    assert flags[entry.id] == [written[0].id]
    assert flags[written[0].id] == [entry.id]


def test_a_fact_with_a_new_value_written_meanwhile_is_superseded(
        memories: Any, meanwhile: Any, pg_url: str, pg_schema: str) -> None:
    mine, theirs = memories(), memories()
    written: list[Any] = []
    refused = meanwhile(lambda: written.append(theirs.store(
        "acme's plan is basic", type="FACT", entity="acme", attribute="plan", value="basic")))
    entry = mine.store("acme's plan is pro", type="FACT", entity="acme", attribute="plan",
                       value="pro")
    assert refused == [1]
    assert entry.supersedes == written[0].id
    assert [r.entry.value for r in mine.search("acme plan", 5, mode="lexical")
            if r.entry.entity == "acme"] == ["pro"]


def test_an_unrelated_write_meanwhile_does_not_outdate_the_plan(
        memories: Any, meanwhile: Any, pg_url: str, pg_schema: str) -> None:
    mine, theirs = memories(), memories()
    refused = meanwhile(lambda: theirs.store("Lunch is at noon in the blue room",
                                             type="FACT"))
    mine.store(TEXT, type="FACT")
    assert refused == []  # committed as planned, in one message
    assert len(rows(pg_url, pg_schema, "SELECT id FROM entries WHERE archived_at IS NULL")) == 2
    assert mine.verify_audit()["ok"]


def test_writes_inside_a_writing_transaction_decide_under_its_lock(memories: Any) -> None:
    """``remember`` writes its entries inside the transaction that takes its job, and
    ``correct`` inside its own: no planning ahead there (the lock is held already)."""
    memory = memories()
    entries = memory.remember("User: the deploy window for team alpha is 12 minutes.",
                              idempotency_key="k1")
    assert entries
    again = memory.remember("User: the deploy window for team alpha is 12 minutes.",
                            idempotency_key="k1")
    assert {e.id for e in again} == {e.id for e in entries}
    fixed = memory.correct(entries[0].id, "the deploy window for team alpha is 15 minutes")
    assert fixed.content.endswith("15 minutes")
    assert memory.verify_audit()["ok"]
