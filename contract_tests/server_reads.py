"""Contract of the optional capabilities a server's requests lean on
(``tulving.ports.storage``): ``ReadTransactions`` (one request's reads in one read
transaction), ``TokenSessions`` (the token and the agent's open sessions in one read) and
``UnlockedOpen`` (the store opened beside the process holding its writer lock, for the
token commands).

Mixed into ``contract_tests.storage.StorageContract``; each test is skipped, naming the
capability, for an adapter without it (the server then pays a read per call, or a token
command waits for the server to stop).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from contract_tests.builders import ALICE, BOB, Clockwork, make_entry
from tulving.domain.errors import LockError
from tulving.domain.identity import Identity
from tulving.domain.records import SessionRecord, TokenRecord
from tulving.ports.storage import ReadTransactions, Storage, TokenSessions, UnlockedOpen


def _reads(storage: Storage) -> ReadTransactions:
    if not isinstance(storage, ReadTransactions):
        pytest.skip(f"{storage.name} offers no ReadTransactions (optional): each read is "
                    "its own transaction")
    return storage


def _token_reads(storage: Storage) -> TokenSessions:
    if not isinstance(storage, TokenSessions):
        pytest.skip(f"{storage.name} offers no TokenSessions (optional): the token and "
                    "the sessions are two reads")
    return storage


def _session(clock: Clockwork, session_id: str, agent: str, tenant: str) -> SessionRecord:
    at = clock.tick()
    return SessionRecord(session_id, agent, tenant, at, at)


class ServerReadsContract:
    """Mixed into the storage suite; uses its ``storage``, ``make_storage`` and ``clock``."""

    # ReadTransactions -------------------------------------------------------------------
    def test_a_read_scope_reads_what_is_committed_and_lets_writes_through(
        self, storage: Storage, clock: Clockwork
    ) -> None:
        reads = _reads(storage)
        first = make_entry(clock, "written before the scope")
        storage.write(first)
        later = make_entry(clock, "written by another thread inside the scope")
        mine = make_entry(clock, "written inside the scope")
        with reads.reading():
            assert storage.get(first.id) == first
            writer = threading.Thread(target=storage.write, args=(later,))
            writer.start()
            writer.join(30)
            assert storage.get(later.id) == later  # each statement: what is committed now
            storage.write(mine)  # a write ends the read transaction and commits as usual
            with reads.reading():  # a nested scope joins the outer one
                assert storage.get(mine.id) == mine
        assert storage.get(mine.id) == mine

    def test_a_write_that_fails_inside_a_read_scope_rolls_back_alone(
        self, storage: Storage, clock: Clockwork
    ) -> None:
        reads = _reads(storage)
        kept, lost = make_entry(clock, "kept"), make_entry(clock, "lost")
        with reads.reading():
            storage.write(kept)
            with pytest.raises(RuntimeError), storage.transaction():
                storage.write(lost)
                raise RuntimeError("abort")
            assert storage.get(kept.id) == kept
            assert storage.get(lost.id) is None

    # TokenSessions ----------------------------------------------------------------------
    def test_the_token_comes_with_its_agents_open_sessions(self, storage: Storage,
                                                           clock: Clockwork) -> None:
        reads = _token_reads(storage)
        token = TokenRecord("aaaaaaaaaaaa", "planner", "00" * 16, "ab" * 32, clock.tick(),
                            user_id=ALICE.user_id, workspace_id=ALICE.workspace_id)
        bound = TokenRecord("bbbbbbbbbbbb", "coder", "00" * 16, "ab" * 32, clock.tick(),
                            user_id=ALICE.user_id, workspace_id=ALICE.workspace_id,
                            agent_id="agent-b")
        assert storage.add_token(token) and storage.add_token(bound)
        tenant = Identity("agent-a", ALICE.user_id, ALICE.workspace_id).tenant
        mine = _session(clock, "s1", "agent-a", tenant)
        storage.put_session(mine)
        storage.put_session(_session(clock, "s2", "agent-b", tenant))
        storage.put_session(_session(clock, "s3", "agent-a", BOB.tenant))  # another tenant
        found, sessions = reads.token_with_sessions("aaaaaaaaaaaa", "agent-a")
        assert found == storage.get_token("aaaaaaaaaaaa")
        assert sessions == storage.open_sessions("agent-a", tenant) == [mine]
        _, pinned = reads.token_with_sessions("bbbbbbbbbbbb", "agent-a")
        assert [s.id for s in pinned] == ["s2"]  # the token's bound agent, not the asker
        storage.revoke_token("planner", clock.tick())
        assert reads.token_with_sessions("aaaaaaaaaaaa", "agent-a") == (None, [])
        assert reads.token_with_sessions("cccccccccccc", "agent-a") == (None, [])

    # UnlockedOpen -----------------------------------------------------------------------
    def test_an_unlocked_open_writes_beside_the_lock_holder(
        self, make_storage: Callable[..., Storage], clock: Clockwork
    ) -> None:
        holder = make_storage("unlocked")
        if not isinstance(holder, UnlockedOpen):
            pytest.skip(f"{holder.name} offers no UnlockedOpen (optional): a token command "
                        "waits until the process holding the store lets it go")
        holder.open()
        try:
            blocked = make_storage("unlocked")
            try:
                blocked.open()
            except LockError:
                pass  # what a single-writer store says while its lock is held
            finally:
                blocked.close()
            side = make_storage("unlocked")
            assert isinstance(side, UnlockedOpen)
            side.open_unlocked()
            try:
                token = TokenRecord("dddddddddddd", "side", "00" * 16, "ab" * 32,
                                    clock.tick())
                assert side.add_token(token)
                assert holder.get_token("dddddddddddd") == token  # seen at its next read
            finally:
                side.close()
        finally:
            holder.close()
