"""Contract of the state every process over one store agrees on (``ports.storage.SharedState``):
the write order (tenant write lock, targeted links), sessions, job claims and tokens.

Mixed into ``contract_tests.storage.StorageContract``, so every adapter runs it with
the same ``make_storage`` fixture. The races run threads against one adapter: a store
whose transactions are serial passes them by construction, a store shared by several
connections (PostgreSQL) passes them only if each claim is one atomic statement.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from contract_tests.builders import ALICE, BOB, Clockwork, make_entry
from tulving.domain.records import JobRecord, SessionRecord, TokenRecord
from tulving.domain.types import ArchiveReason
from tulving.ports.storage import Archival, Storage, Supersession

RACERS = 6


def race(n: int, fn: Callable[[int], Any]) -> list[Any]:
    """``fn(i)`` in ``n`` threads released together; results (or exceptions) in order."""
    results: list[Any] = [None] * n
    gate = threading.Barrier(n)

    def run(i: int) -> None:
        gate.wait()
        try:
            results[i] = fn(i)
        except Exception as exc:  # reported by the caller's assertions
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def token(clock: Clockwork, name: str, token_id: str, **fields: Any) -> TokenRecord:
    return TokenRecord(token_id, name, "00" * 16, "ab" * 32, clock.tick(), **fields)


class SharedStateContract:
    """Mixed into the storage suite; uses its ``storage`` and ``clock`` fixtures."""

    # tokens ------------------------------------------------------------------------
    def test_tokens_are_rows_created_and_revoked_atomically(self, storage: Storage,
                                                            clock: Clockwork) -> None:
        first = token(clock, "planner", "aaaaaaaaaaaa", user_id="u1", read_only=True)
        assert storage.add_token(first) is True
        assert storage.get_token("aaaaaaaaaaaa") == first
        assert storage.add_token(token(clock, "planner", "bbbbbbbbbbbb")) is False  # live name
        assert storage.add_token(token(clock, "other", "aaaaaaaaaaaa")) is False  # taken id
        second = token(clock, "coder", "cccccccccccc", agent_id="a1")
        assert storage.add_token(second)
        assert [t.id for t in storage.live_tokens()] == ["aaaaaaaaaaaa", "cccccccccccc"]
        gone = storage.revoke_token("planner", clock.tick())
        assert gone is not None and gone.id == "aaaaaaaaaaaa" and gone.revoked_at is not None
        assert storage.get_token("aaaaaaaaaaaa") is None
        assert storage.revoke_token("planner", clock.tick()) is None
        assert [t.id for t in storage.live_tokens()] == ["cccccccccccc"]
        # a revoked id never comes back; its name is free again
        assert storage.add_token(token(clock, "again", "aaaaaaaaaaaa")) is False
        assert storage.add_token(token(clock, "planner", "dddddddddddd"))
        assert storage.revoke_token("cccccccccccc", clock.tick()) is not None  # by id

    def test_tokens_persist(self, make_storage: Any, clock: Clockwork) -> None:
        store = make_storage("tokens")
        if not store.capabilities.persistent:
            pytest.skip("the adapter keeps nothing across opens")
        store.open()
        kept = token(clock, "kept", "eeeeeeeeeeee", workspace_id="w")
        store.add_token(kept)
        store.close()
        again = make_storage("tokens")
        again.open()
        try:
            assert again.live_tokens() == [kept]
        finally:
            again.close()

    def test_racing_token_writers_lose_nothing(self, storage: Storage,
                                               clock: Clockwork) -> None:
        at = clock.tick()
        made = race(RACERS, lambda i: [storage.add_token(TokenRecord(
            f"{i:02d}{n:010d}", f"w{i}-{n}", "00" * 16, "ab" * 32, at)) for n in range(5)])
        assert all(r == [True] * 5 for r in made), made
        assert len(storage.live_tokens()) == RACERS * 5
        same_name = race(RACERS, lambda i: storage.add_token(TokenRecord(
            f"ff{i:010d}", "contested", "00" * 16, "ab" * 32, at)))
        assert sorted(same_name, key=str) == [False] * (RACERS - 1) + [True]
        revoked = race(RACERS, lambda i: storage.revoke_token("contested", at))
        assert sum(r is not None for r in revoked) == 1
        revoking = race(RACERS, lambda i: [storage.revoke_token(f"w{i}-{n}", at)
                                           for n in range(0, 5, 2)])
        assert all(r is not None for batch in revoking for r in batch)
        assert len(storage.live_tokens()) == RACERS * 2

    # sessions ----------------------------------------------------------------------
    def _session(self, clock: Clockwork, sid: str, agent: str = "agent-a",
                 implicit: bool = True) -> SessionRecord:
        at = clock.tick()
        return SessionRecord(sid, agent, ALICE.tenant, at, at, implicit=implicit)

    def test_one_open_session_of_each_kind_per_agent(self, storage: Storage,
                                                     clock: Clockwork) -> None:
        first = storage.open_session(self._session(clock, "s1"))
        assert first.id == "s1" and first.ended_at is None
        assert storage.open_session(self._session(clock, "s2")).id == "s1"
        assert storage.get_session("s2") is None  # nothing written
        assert storage.open_session(self._session(clock, "e1", implicit=False)).id == "e1"
        assert storage.open_session(self._session(clock, "b1", agent="agent-b")).id == "b1"
        assert sorted(s.id for s in storage.open_sessions("agent-a", ALICE.tenant)) == [
            "e1", "s1"]
        ended = storage.end_session("s1", clock.tick(), "ended")
        assert ended is not None and ended.ended_at is not None and ended.end_reason == "ended"
        assert storage.end_session("s1", clock.tick(), "shutdown") is None
        assert storage.get_session("s1").end_reason == "ended"  # type: ignore[union-attr]
        assert storage.open_session(self._session(clock, "s3")).id == "s3"
        storage.set_session_summary("s1", "SUMMARY1")
        assert storage.get_session("s1").summary_id == "SUMMARY1"  # type: ignore[union-attr]

    def test_session_activity_only_moves_forward(self, storage: Storage,
                                                 clock: Clockwork) -> None:
        record = storage.open_session(self._session(clock, "s1"))
        later = clock.tick(120)
        storage.note_session_activity("s1", later)
        storage.note_session_activity("s1", record.started_at)
        assert storage.get_session("s1").last_activity_at == later  # type: ignore[union-attr]

    def test_racing_session_openers_and_enders_agree(self, storage: Storage,
                                                     clock: Clockwork) -> None:
        at = clock.tick()
        opened = race(RACERS, lambda i: storage.open_session(
            SessionRecord(f"s{i}", "agent-a", ALICE.tenant, at, at, implicit=True)))
        assert len({s.id for s in opened}) == 1, opened
        assert len(storage.open_sessions("agent-a", ALICE.tenant)) == 1
        ended = race(RACERS, lambda i: storage.end_session(opened[0].id, at, f"r{i}"))
        assert sum(e is not None for e in ended) == 1, ended

    # jobs --------------------------------------------------------------------------
    def test_job_leases(self, storage: Storage, clock: Clockwork) -> None:
        now = clock.tick()
        storage.enqueue(JobRecord("j1", "remember", {"text": "hi"}, now))
        later = clock.tick(60)
        assert storage.claim_job("j1", "p1", later, now)
        assert storage.claim_job("j1", "p1", later, now)  # its own lease: renewed
        assert not storage.claim_job("j1", "p2", later, now)  # live lease of another
        assert storage.claim_job("j1", "p2", clock.tick(60), clock.tick(61))  # lapsed
        job = storage.get_job("j1")
        assert job is not None and job.claimed_by == "p2" and job.status == "pending"
        storage.finish_job("j1")
        assert not storage.claim_job("j1", "p3", clock.tick(60), clock.tick(120))
        assert storage.get_job("missing") is None

    def test_a_taken_job_is_written_once(self, storage: Storage, clock: Clockwork) -> None:
        storage.enqueue(JobRecord("j1", "remember", {"text": "hi"}, clock.tick()))
        written: list[int] = []
        lock = threading.Lock()

        def runner(i: int) -> bool:
            with storage.transaction():
                job = storage.take_job("j1")
                if job is None:
                    return False
                time.sleep(0.05)  # the other runners queue behind this one
                storage.set_meta("job-result:j1", str(i))
                storage.finish_job("j1")
                with lock:
                    written.append(i)
                return True

        results = race(4, runner)
        assert results.count(True) == 1 and len(written) == 1, results
        assert storage.get_meta("job-result:j1") == str(written[0])
        assert storage.pending_jobs() == []
        with storage.transaction():
            assert storage.take_job("j1") is None

    # write order -------------------------------------------------------------------
    def test_conflict_links_are_two_way_and_targeted(self, storage: Storage,
                                                     clock: Clockwork) -> None:
        a, b, c = (make_entry(clock, f"entry {n}") for n in range(3))
        for e in (a, b, c):
            storage.write(e)
        storage.touch([a.id], clock.tick())  # a change the link must not undo
        at = clock.tick()
        assert storage.link_conflicts([(a.id, b.id), (c.id, a.id), ("missing", b.id)], at) == 3
        got = {e.id: e for e in storage.get_many([a.id, b.id, c.id])}
        assert got[a.id].conflict_ids == (b.id, c.id)
        assert got[b.id].conflict_ids == (a.id,) and got[c.id].conflict_ids == (a.id,)
        assert got[a.id].access_count == 1 and got[a.id].updated_at == at
        assert storage.link_conflicts([(b.id, a.id)], clock.tick()) == 0  # idempotent

    def test_racing_linkers_lose_no_link(self, storage: Storage, clock: Clockwork) -> None:
        hub = make_entry(clock, "the hub")
        spokes = [make_entry(clock, f"spoke {n}") for n in range(RACERS * 3)]
        for e in (hub, *spokes):
            storage.write(e)
        at = clock.tick()
        race(RACERS, lambda i: [storage.link_conflicts([(s.id, hub.id)], at)
                                for s in spokes[i::RACERS]])
        got = storage.get(hub.id)
        assert got is not None and sorted(got.conflict_ids) == sorted(s.id for s in spokes)
        assert all(e.conflict_ids == (hub.id,) for e in storage.get_many([s.id for s in spokes]))

    def test_supersede_entries_archives_only_active_ones(self, storage: Storage,
                                                         clock: Clockwork) -> None:
        old, other, new = (make_entry(clock, f"version {n}") for n in range(3))
        for e in (old, other, new):
            storage.write(e)
        storage.archive([_forgotten(other.id, clock)])
        at, until = clock.tick(), clock.tick()
        done = storage.supersede_entries([
            Supersession(old.id, new.id, at, until, "hmac-sha256:new"),
            Supersession(other.id, new.id, at, until)])
        assert done == [old.id]
        got = storage.get(old.id)
        assert got is not None and got.archived_at == at and got.superseded_by == new.id
        assert got.archive_reason is ArchiveReason.SUPERSEDED and got.valid_until == until
        assert got.signature == "hmac-sha256:new" and got.expired_at == at
        assert storage.get(other.id).archive_reason is ArchiveReason.FORGOTTEN  # type: ignore[union-attr]
        assert storage.supersede_entries([Supersession(old.id, other.id, at, until)]) == []

    def test_tenant_writes_are_serial(self, storage: Storage, clock: Clockwork) -> None:
        """A second writer of a tenant waits for the first to commit before it goes on."""
        events: list[str] = []
        holding = threading.Event()

        def first() -> None:
            with storage.transaction():
                storage.lock_tenant_writes(ALICE.tenant)
                holding.set()
                time.sleep(0.3)
                events.append("first commits")

        def second() -> None:
            holding.wait(10)
            with storage.transaction():
                storage.lock_tenant_writes(ALICE.tenant)
                events.append("second writes")

        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert events == ["first commits", "second writes"]
        with storage.transaction():  # another tenant, and the same again: re-entrant
            storage.lock_tenant_writes(BOB.tenant)
            storage.lock_tenant_writes(BOB.tenant)
            storage.write(make_entry(clock, "written under the lock", identity=BOB))


def _forgotten(entry_id: str, clock: Clockwork) -> Archival:
    return Archival(entry_id, ArchiveReason.FORGOTTEN, clock.tick())
