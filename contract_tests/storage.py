"""Storage contract suite (see ``tulving.ports.storage`` for the invariants).

Supply ``make_storage``: a callable ``make_storage(name="default") -> Storage`` returning
an adapter that is NOT yet opened, for a fresh store per test; calling it again with the
same ``name`` in the same test must return a new adapter over the SAME data (used for
persistence checks when ``capabilities.persistent``). The suite opens and closes it.

Every optional capability (``tulving.ports.storage``) is checked for an adapter that
implements it, and skipped with the reason for one that does not: ``BriefReader``,
``VectorChangeLog``, ``EntryCensus``, ``StrongVectors``, ``EnrichmentTasks``
(``contract_tests.enrichment``), ``ReadTransactions``, ``TokenSessions``, ``UnlockedOpen``
(``contract_tests.server_reads``), ``WriteMarks`` (``contract_tests.write_marks``),
``SyncLog`` (its own suite, ``contract_tests.sync_log``); a ``ReadOnlyOpen`` adapter's
suite also supplies
``open_read_only(name)`` (a new instance over the same store, opened read-only) and an
``EncryptionChange`` adapter's ``reopen_with_key(name, key)``; without them the case
fails, saying which fixture is missing.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import attrs
import numpy as np
import pytest

from contract_tests.builders import ALICE, BOB, Clockwork, make_entry
from contract_tests.enrichment import EnrichmentContract
from contract_tests.governance import GovernanceContract
from contract_tests.server_reads import ServerReadsContract
from contract_tests.shared_state import SharedStateContract
from contract_tests.write_marks import WriteMarksContract
from tulving.domain.audit_chain import verify_chain
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.entry import EntryBrief
from tulving.domain.errors import ReadOnlyError, TulvingError
from tulving.domain.identity import Identity
from tulving.domain.query import STORE_WIDE, EntryFilter
from tulving.domain.records import AuditDraft, JobRecord, SessionRecord
from tulving.domain.types import ArchiveReason, MemoryType, Scope
from tulving.ports.storage import (
    Archival,
    BriefReader,
    EncryptionChange,
    EntryCensus,
    ReadOnlyOpen,
    Storage,
    StrongVectors,
    VectorChangeLog,
)

A_PARTS = ALICE.visible_partitions()
B_PARTS = BOB.visible_partitions()


def _vec(seed: int, dim: int = 8) -> Any:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


class StorageContract(GovernanceContract, SharedStateContract, EnrichmentContract,
                      ServerReadsContract, WriteMarksContract):
    """Base class of the storage suite; subclass it and provide ``make_storage``."""

    @pytest.fixture
    def storage(self, make_storage: Callable[..., Storage]) -> Iterator[Storage]:
        store = make_storage()
        store.open()
        yield store
        store.close()

    @pytest.fixture
    def clock(self) -> Clockwork:
        return Clockwork()

    # basic round trip -------------------------------------------------------------
    def test_is_a_storage(self, storage: Storage) -> None:
        assert isinstance(storage, Storage)
        assert isinstance(storage.name, str) and storage.name

    def test_open_is_idempotent(self, storage: Storage) -> None:
        storage.open()
        assert storage.count(EntryFilter(partitions=A_PARTS)) == 0

    def test_round_trip_keeps_every_field(self, storage: Storage, clock: Clockwork) -> None:
        entry = make_entry(
            clock, "Ünïcode ✓ 漢字 content", key="proj/auth", tags=("a", "b"), importance=0.9,
            pinned=True, confidence=0.8, trust=0.95, source_instance="run-7", model_id="m1",
            related_to=("X1",), source_entry_ids=("S1", "S2"), conflict_ids=("C1",),
            metadata={"n": 1, "nested": {"x": [1, 2]}}, entity="alice", attribute="city",
            value="Paris", success_count=2, failure_count=1, signature="sig",
            valid_until=clock.now + timedelta(days=3), session_id="sess-1",
        )
        outcome = storage.write(entry)
        assert outcome.superseded is None
        assert storage.get(entry.id) == entry

    def test_briefs_agree_with_whole_entries(self, storage: Storage, clock: Clockwork) -> None:
        if not isinstance(storage, BriefReader):
            pytest.skip("adapter is no BriefReader (optional): search reads whole entries")
        get_briefs = storage.get_briefs
        turn = make_entry(clock, "Caroline: we adopted a dog last Friday")
        fact = make_entry(clock, "Caroline adopted a dog", source_entry_ids=(turn.id,))
        storage.write_many([(turn, None), (fact, None)])
        ids = [fact.id, "01J00000000000000000000000", turn.id, fact.id]
        briefs = get_briefs(ids)
        assert briefs == [EntryBrief.of(e) for e in storage.get_many(ids)]
        assert [b.derived_from for b in briefs] == [turn.id, None, turn.id]
        assert get_briefs([]) == []

    def test_get_unknown_is_none(self, storage: Storage) -> None:
        assert storage.get("01J00000000000000000000000") is None

    def test_get_many_keeps_order_and_skips_unknown(self, storage: Storage, clock: Clockwork) -> None:
        a, b = make_entry(clock, "first"), make_entry(clock, "second")
        storage.write_many([(a, None), (b, None)])
        got = storage.get_many([b.id, "missing", a.id])
        assert [e.id for e in got] == [b.id, a.id]

    # key supersede ------------------------------------------------------------------
    def test_same_key_supersedes_and_links_both_ways(self, storage: Storage, clock: Clockwork) -> None:
        old = make_entry(clock, "use JWT", key="auth/strategy")
        new = make_entry(clock, "use sessions", key="auth/strategy")
        storage.write(old)
        outcome = storage.write(new)
        assert outcome.superseded is not None and outcome.superseded.id == old.id
        assert outcome.entry.supersedes == old.id
        stored_old, stored_new = storage.get(old.id), storage.get(new.id)
        assert stored_old is not None and stored_new is not None
        assert stored_old.archive_reason is ArchiveReason.SUPERSEDED
        assert stored_old.superseded_by == new.id and stored_new.supersedes == old.id
        assert stored_old.expired_at == new.created_at
        active = storage.active_by_key(A_PARTS, "auth/strategy")
        assert active is not None and active.id == new.id
        assert storage.count(EntryFilter(partitions=A_PARTS)) == 1

    def test_keys_are_per_partition(self, storage: Storage, clock: Clockwork) -> None:
        a = make_entry(clock, "alice's", key="k")
        b = make_entry(clock, "bob's", key="k", identity=BOB)
        storage.write(a)
        assert storage.write(b).superseded is None
        assert storage.active_by_key(A_PARTS, "k").id == a.id  # type: ignore[union-attr]
        assert storage.active_by_key(B_PARTS, "k").id == b.id  # type: ignore[union-attr]

    def test_batch_may_supersede_within_itself(self, storage: Storage, clock: Clockwork) -> None:
        first, second = make_entry(clock, "v1", key="k"), make_entry(clock, "v2", key="k")
        outcomes = storage.write_many([(first, None), (second, None)])
        assert outcomes[1].superseded is not None and outcomes[1].superseded.id == first.id
        assert storage.active_by_key(A_PARTS, "k").content == "v2"  # type: ignore[union-attr]

    def test_batch_is_atomic(self, storage: Storage, clock: Clockwork) -> None:
        good = make_entry(clock, "good")
        storage.write(good)
        fresh = make_entry(clock, "fresh")
        with pytest.raises(TulvingError):
            storage.write_many([(fresh, None), (good, None)])  # duplicate id fails the batch
        assert storage.get(fresh.id) is None
        assert storage.count(EntryFilter(partitions=A_PARTS)) == 1

    def test_transaction_rolls_back_on_error(self, storage: Storage, clock: Clockwork) -> None:
        entry = make_entry(clock)
        with pytest.raises(RuntimeError), storage.transaction():
            storage.write(entry)
            storage.set_meta("inside", "1")
            raise RuntimeError("boom")
        assert storage.get(entry.id) is None
        assert storage.get_meta("inside") is None

    # filters --------------------------------------------------------------------------
    def test_filters(self, storage: Storage, clock: Clockwork) -> None:
        d = make_entry(clock, "decided", type=MemoryType.DECISION, tags=("arch",), key="d/1")
        p = make_entry(clock, "planned", type=MemoryType.PLAN, tags=("todo", "arch"), pinned=True)
        s = make_entry(clock, "session note", session_id="s1", entity="bob", attribute="role")
        storage.write_many([(d, None), (p, None), (s, None)])
        ids = lambda **kw: [e.id for e in storage.query(EntryFilter(partitions=A_PARTS, **kw))]  # noqa: E731
        assert ids(types=(MemoryType.DECISION,)) == [d.id]
        assert ids(tags=("arch",)) == [p.id, d.id]
        assert ids(tags=("todo", "nope")) == [p.id]
        assert ids(key_prefix="d/") == [d.id]
        assert ids(key_prefix="x") == []
        assert ids(since=p.valid_from) == [s.id, p.id]
        assert ids(until=p.valid_from) == [p.id, d.id]
        assert ids(session_id="s1") == [s.id]
        assert ids(pinned=True) == [p.id]
        assert ids(ids=(d.id, s.id)) == [s.id, d.id]
        assert ids(entity="bob", attribute="role") == [s.id]
        assert ids(entity="Bob") == []  # exact by default: the write-time fact rules
        assert ids(entity="BoB", entity_any_case=True) == [s.id]  # reads by wording
        assert ids(after_id=d.id) == [s.id, p.id]  # keyset pagination
        assert ids(after_id=s.id) == []
        assert ids(content_hash=d.content_hash) == [d.id]
        flt = EntryFilter(partitions=A_PARTS)
        assert [e.id for e in storage.query(flt, newest_first=False)] == [d.id, p.id, s.id]
        assert [e.id for e in storage.query(flt, limit=1, offset=1)] == [p.id]
        assert storage.count(flt) == 3
        assert storage.ids_matching(EntryFilter(partitions=A_PARTS, tags=("arch",))) == {d.id, p.id}
        assert storage.tag_counts(flt) == {"arch": 2, "todo": 1}

    def test_tenancy_is_a_hard_partition(self, storage: Storage, clock: Clockwork) -> None:
        mine = make_entry(clock, "alpha secret plan")
        theirs = make_entry(clock, "alpha other plan", identity=BOB)
        shared = make_entry(clock, "alpha shared note", scope=Scope.SHARED)
        storage.write_many([(mine, None), (theirs, None), (shared, None)])
        assert {e.id for e in storage.query(EntryFilter(partitions=A_PARTS))} == {mine.id, shared.id}
        assert {e.id for e in storage.query(EntryFilter(partitions=B_PARTS))} == {theirs.id}
        assert {h.id for h in storage.lexical_search(["alpha"], EntryFilter(partitions=B_PARTS), 10)} == {theirs.id}
        assert storage.count(EntryFilter(partitions=())) == 0
        assert storage.count(EntryFilter(partitions=STORE_WIDE)) == 3
        # another agent of alice's tenant sees the shared entry but not agent-a's own
        colleague = Identity(agent_id="agent-c", user_id="alice", workspace_id="ws1")
        seen = {e.id for e in storage.query(EntryFilter(partitions=colleague.visible_partitions()))}
        assert seen == {shared.id}

    def test_census_counts_active_entries_per_tenant(self, storage: Storage,
                                                     clock: Clockwork) -> None:
        if not isinstance(storage, EntryCensus):
            pytest.skip(f"{storage.name} offers no EntryCensus (optional)")
        mine = [make_entry(clock, f"alice note {i}") for i in range(3)]
        shared = make_entry(clock, "alice shared note", scope=Scope.SHARED)
        theirs = make_entry(clock, "bob note", identity=BOB)
        storage.write_many([(e, None) for e in [*mine, shared, theirs]])
        storage.archive([Archival(mine[0].id, ArchiveReason.FORGOTTEN, clock.tick())])
        census = dict(storage.active_entries_by_tenant())
        assert census == {ALICE.tenant: storage.count(EntryFilter(partitions=A_PARTS)),
                          BOB.tenant: 1}
        assert census[ALICE.tenant] == 3
        storage.delete([theirs.id])
        assert BOB.tenant not in storage.active_entries_by_tenant()

    # archive, delete, touch -----------------------------------------------------------
    def test_archive_hides_and_is_idempotent(self, storage: Storage, clock: Clockwork) -> None:
        e = make_entry(clock, "to archive")
        storage.write(e)
        at = clock.tick()
        assert storage.archive([Archival(e.id, ArchiveReason.EVICTED, at)]) == 1
        assert storage.archive([Archival(e.id, ArchiveReason.EVICTED, at)]) == 0
        assert storage.query(EntryFilter(partitions=A_PARTS)) == []
        assert storage.lexical_search(["archive"], EntryFilter(partitions=A_PARTS), 5) == []
        got = storage.query(EntryFilter(partitions=A_PARTS, include_archived=True))
        assert got[0].archive_reason is ArchiveReason.EVICTED and got[0].archived_at == at
        assert storage.count(EntryFilter(partitions=A_PARTS, archive_reasons=(ArchiveReason.EVICTED,))) == 1
        assert storage.unarchive([e.id], clock.tick()) == 1
        assert storage.get(e.id).archived_at is None  # type: ignore[union-attr]

    def test_as_of_reads_the_past(self, storage: Storage, clock: Clockwork) -> None:
        old = make_entry(clock, "v1", key="k")
        storage.write(old)
        between = clock.tick()
        new = make_entry(clock, "v2", key="k")
        storage.write(new)
        then = storage.query(EntryFilter(partitions=A_PARTS, as_of=between))
        assert [e.id for e in then] == [old.id]
        now = storage.query(EntryFilter(partitions=A_PARTS, as_of=clock.tick()))
        assert [e.id for e in now] == [new.id]

    def test_delete_removes_everything(self, storage: Storage, clock: Clockwork) -> None:
        e = make_entry(clock, "zebra crossing", tags=("t",))
        storage.write(e, _vec(1))
        assert storage.delete([e.id]) == 1
        assert storage.get(e.id) is None
        assert storage.vectors_for([e.id]) == {}
        assert storage.lexical_search(["zebra"], EntryFilter(partitions=A_PARTS, include_archived=True), 5) == []
        assert storage.tag_counts(EntryFilter(partitions=A_PARTS, include_archived=True)) == {}
        assert storage.delete([e.id]) == 0

    def test_touch_counts_every_access(self, storage: Storage, clock: Clockwork) -> None:
        a, b = make_entry(clock, "a"), make_entry(clock, "b")
        storage.write_many([(a, None), (b, None)])
        at = clock.tick()
        storage.touch([a.id, b.id], at)
        storage.touch([a.id], at)
        storage.touch([b.id, a.id, b.id], at)  # an id named twice in a batch was read twice
        got_a, got_b = storage.get(a.id), storage.get(b.id)
        assert got_a.access_count == 3 and got_b.access_count == 3  # type: ignore[union-attr]
        assert got_a.last_accessed_at == at  # type: ignore[union-attr]

    def test_concurrent_touches_add_up(self, storage: Storage, clock: Clockwork) -> None:
        e = make_entry(clock)
        storage.write(e)
        at = clock.tick()
        threads = [threading.Thread(target=lambda: [storage.touch([e.id], at) for _ in range(25)])
                   for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert storage.get(e.id).access_count == 100  # type: ignore[union-attr]

    def test_replace_updates_fields_and_full_text(self, storage: Storage, clock: Clockwork) -> None:
        e = make_entry(clock, "original walrus", tags=("x",))
        storage.write(e)
        changed = attrs.evolve(e, content="updated narwhal", tags=("y",), importance=0.1)
        storage.replace(changed)
        assert storage.get(e.id) == changed
        flt = EntryFilter(partitions=A_PARTS)
        assert storage.lexical_search(["walrus"], flt, 5) == []
        assert [h.id for h in storage.lexical_search(["narwhal"], flt, 5)] == [e.id]

    # lexical search --------------------------------------------------------------------
    def test_lexical_search_treats_words_as_words(self, storage: Storage, clock: Clockwork) -> None:
        both = make_entry(clock, "Caroline went to the adoption agency on Friday")
        one = make_entry(clock, "Melanie painted a sunrise over the lake")
        other = make_entry(clock, "The agency sent a letter")
        keyed = make_entry(clock, "use rotating tokens", key="auth/refresh-strategy", tags=("security",))
        storage.write_many([(both, None), (one, None), (other, None), (keyed, None)])
        flt = EntryFilter(partitions=A_PARTS)
        hits = storage.lexical_search(["caroline", "agency"], flt, 10)
        assert [h.id for h in hits][:1] == [both.id]
        assert {h.id for h in hits} == {both.id, other.id}
        assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
        assert hits[0].score > hits[-1].score
        assert [h.id for h in storage.lexical_search(["strategy"], flt, 10)] == [keyed.id]
        assert [h.id for h in storage.lexical_search(["security"], flt, 10)] == [keyed.id]
        assert [h.id for h in storage.lexical_search(["painted"], flt, 1)] == [one.id]
        assert storage.lexical_search([], flt, 10) == []
        # query syntax characters are plain words, never an FTS syntax error
        assert storage.lexical_search(['"', "AND", "NEAR(", "*"], flt, 10) is not None

    def test_lexical_search_stems(self, storage: Storage, clock: Clockwork) -> None:
        e = make_entry(clock, "we deployed the services twice")
        storage.write(e)
        hits = storage.lexical_search(["deploy", "service"], EntryFilter(partitions=A_PARTS), 5)
        assert [h.id for h in hits] == [e.id]

    def test_lexical_search_respects_filters(self, storage: Storage, clock: Clockwork) -> None:
        a = make_entry(clock, "kiwi fruit", type=MemoryType.FACT)
        b = make_entry(clock, "kiwi bird", type=MemoryType.OBSERVATION)
        storage.write_many([(a, None), (b, None)])
        flt = EntryFilter(partitions=A_PARTS, types=(MemoryType.OBSERVATION,))
        assert [h.id for h in storage.lexical_search(["kiwi"], flt, 5)] == [b.id]

    def test_lexical_filters_never_lose_recall(self, storage: Storage, clock: Clockwork) -> None:
        """Many better matches outside the filter must not hide the few inside it."""
        crowd = [(make_entry(clock, "kiwi kiwi kiwi orchard", identity=BOB), None)
                 for _ in range(260)]
        mine = [(make_entry(clock, f"one kiwi in a long note about other things {i}"), None)
                for i in range(3)]
        storage.write_many(crowd + mine)
        hits = storage.lexical_search(["kiwi"], EntryFilter(partitions=A_PARTS), 10)
        assert {h.id for h in hits} == {e.id for e, _ in mine}

    def test_adjacent_finds_neighbours_in_write_order_at_one_event_time(
        self, storage: Storage, clock: Clockwork
    ) -> None:
        """Neighbours share the event time, pass the filter and are the nearest in id
        order on each side; other times, archived entries and other tenants never count."""
        when = clock.tick()
        turns = [make_entry(clock, f"turn {i}", valid_from=when) for i in range(5)]
        other_time = make_entry(clock, "a later note")
        bob = make_entry(clock, "bob's turn", identity=BOB, valid_from=when)
        storage.write_many([(e, None) for e in [*turns[:3], bob, *turns[3:], other_time]])
        storage.archive([Archival(turns[3].id, ArchiveReason.EVICTED, clock.tick())])
        flt = EntryFilter(partitions=A_PARTS)
        got = storage.adjacent([turns[0].id, turns[2].id, turns[4].id, other_time.id,
                                "missing-id"], flt)
        assert got[turns[0].id] == (turns[1].id,)
        assert got[turns[2].id] == (turns[1].id, turns[4].id)  # 3 archived, bob elsewhere
        assert got[turns[4].id] == (turns[2].id,)
        assert got[other_time.id] == ()
        assert "missing-id" not in got
        only_facts = EntryFilter(partitions=A_PARTS, types=(MemoryType.OBSERVATION,))
        assert storage.adjacent([turns[2].id], only_facts)[turns[2].id] == ()

    # vectors ----------------------------------------------------------------------------
    def test_vectors_are_kept_exactly(self, storage: Storage, clock: Clockwork) -> None:
        a, b, c = make_entry(clock, "a"), make_entry(clock, "b"), make_entry(clock, "c")
        storage.write_many([(a, _vec(1)), (b, _vec(2)), (c, None)])
        got = storage.vectors_for([a.id, b.id, c.id])
        assert set(got) == {a.id, b.id}
        np.testing.assert_array_equal(got[a.id], _vec(1))
        assert got[a.id].dtype == np.float32
        flt = EntryFilter(partitions=A_PARTS)
        assert [i for i, _ in storage.iter_vectors(flt, batch=1)] == sorted([a.id, b.id])
        assert [e.id for e in storage.missing_vectors(flt, 10)] == [c.id]
        storage.put_vectors([(c.id, _vec(3))])
        assert storage.missing_vectors(flt, 10) == []
        storage.clear_vectors()
        assert storage.vectors_for([a.id, b.id, c.id]) == {}

    # the strong tier's vectors (optional: ports.storage.StrongVectors) ----------------------
    @staticmethod
    def _strong(storage: Storage) -> Any:
        if not isinstance(storage, StrongVectors):
            pytest.skip("adapter stores no strong vectors (optional): the strong tier "
                        "computes them for each search")
        return storage

    def test_strong_vectors_are_kept_per_model_beside_the_fast_ones(
            self, storage: Storage, clock: Clockwork) -> None:
        strong = self._strong(storage)
        a, b = make_entry(clock, "a"), make_entry(clock, "b")
        storage.write_many([(a, _vec(1)), (b, _vec(2))])
        assert strong.strong_vectors_for("m1", [a.id, b.id]) == {}
        assert strong.lacking_strong_vectors("m1", 10) == [a.id, b.id]
        wide = _vec(3, dim=24)
        assert strong.put_strong_vectors("m1", [(a.id, wide)]) == 1
        got = strong.strong_vectors_for("m1", [a.id, b.id])
        assert list(got) == [a.id]
        assert got[a.id].dtype == np.float32 and got[a.id].shape == (24,)
        assert abs(float(got[a.id] @ wide) - 1.0) < 1e-3  # half precision, same direction
        assert strong.strong_vectors_for("m2", [a.id]) == {}  # another model's space
        assert strong.lacking_strong_vectors("m1", 10) == [b.id]
        assert strong.count_strong_vectors("m1") == 1
        # the fast vectors are untouched, and replacing a strong vector keeps one
        assert set(storage.vectors_for([a.id, b.id])) == {a.id, b.id}
        strong.put_strong_vectors("m1", [(a.id, _vec(4, dim=24))])
        assert strong.count_strong_vectors("m1") == 1
        strong.clear_strong_vectors("m1")
        assert strong.strong_vectors_for("m1", [a.id]) == {}

    def test_strong_vectors_of_missing_entries_are_skipped_and_deleted_with_theirs(
            self, storage: Storage, clock: Clockwork) -> None:
        strong = self._strong(storage)
        a, b = make_entry(clock, "a"), make_entry(clock, "b")
        storage.write_many([(a, _vec(1)), (b, _vec(2))])
        # a background job finishing after an erasure writes nothing back
        assert strong.put_strong_vectors("m", [(a.id, _vec(5, 16)), ("no-such-id", _vec(6, 16))]) == 1
        strong.put_strong_vectors("m", [(b.id, _vec(7, 16))])
        storage.delete([a.id])
        assert strong.strong_vectors_for("m", [a.id, b.id]).keys() == {b.id}
        assert strong.count_strong_vectors("m") == 1
        storage.archive([Archival(b.id, ArchiveReason.FORGOTTEN, clock.tick())])
        assert strong.lacking_strong_vectors("m", 10) == []  # archived: nothing to backfill

    def test_a_strong_vector_of_changed_content_is_not_returned(
            self, storage: Storage, clock: Clockwork) -> None:
        strong = self._strong(storage)
        a = make_entry(clock, "the first wording")
        storage.write_many([(a, _vec(1))])
        strong.put_strong_vectors("m", [(a.id, _vec(2, 16))])
        from tulving.domain.entry import content_hash

        storage.replace(attrs.evolve(a, content="another wording",
                                     content_hash=content_hash("another wording")))
        assert strong.strong_vectors_for("m", [a.id]) == {}
        assert strong.lacking_strong_vectors("m", 10) == [a.id]

    def test_a_bad_strong_vector_is_refused_and_nothing_is_written(
            self, storage: Storage, clock: Clockwork) -> None:
        strong = self._strong(storage)
        a, b = make_entry(clock, "a"), make_entry(clock, "b")
        storage.write_many([(a, _vec(1)), (b, _vec(2))])
        bad = np.array([np.nan, 1.0], dtype=np.float32)
        with pytest.raises(TulvingError):
            strong.put_strong_vectors("m", [(a.id, _vec(3, 16)), (b.id, bad)])
        assert strong.strong_vectors_for("m", [a.id, b.id]) == {}

    # the vector change log (optional: ports.storage.VectorChangeLog) ---------------------
    @staticmethod
    def _log(storage: Storage) -> Any:
        if not isinstance(storage, VectorChangeLog):
            pytest.skip("adapter keeps no vector change log (optional): indexes over it are "
                        "reconciled in full")
        return storage

    @staticmethod
    def _changed(log: Any, after: int) -> set[str]:
        step = log.vector_changes(after)
        assert step is not None
        ids, reached = step
        assert len(ids) == len(set(ids))  # each entry named once
        assert reached == log.vector_log_position()
        return set(ids)

    def test_vector_log_names_every_change_of_the_index_set(
            self, storage: Storage, clock: Clockwork) -> None:
        log = self._log(storage)
        start = log.vector_log_position()
        a, b, c = make_entry(clock, "a"), make_entry(clock, "b"), make_entry(clock, "c")
        storage.write_many([(a, _vec(1)), (b, _vec(2)), (c, None)])
        after_write = log.vector_log_position()
        assert after_write > start
        assert self._changed(log, start) == {a.id, b.id}  # c has no vector
        storage.put_vectors([(c.id, _vec(3))])
        assert self._changed(log, after_write) == {c.id}
        at = log.vector_log_position()
        storage.archive([Archival(a.id, ArchiveReason.FORGOTTEN, clock.tick())])
        assert self._changed(log, at) == {a.id}
        at = log.vector_log_position()
        storage.unarchive([a.id], clock.tick())
        assert self._changed(log, at) == {a.id}
        at = log.vector_log_position()
        storage.delete([b.id])
        assert self._changed(log, at) == {b.id}
        at = log.vector_log_position()
        storage.touch([c.id], clock.tick())  # bookkeeping is not a change of the index set
        assert log.vector_changes(at) == ([], at)
        storage.clear_vectors()
        assert self._changed(log, at) == {a.id, c.id}

    def test_vector_log_follows_a_supersede_and_a_replace(
            self, storage: Storage, clock: Clockwork) -> None:
        log = self._log(storage)
        old = make_entry(clock, "use JWT", key="auth")
        storage.write(old, _vec(1))
        at = log.vector_log_position()
        new = make_entry(clock, "use sessions", key="auth")
        storage.write(new, _vec(2))
        assert self._changed(log, at) == {old.id, new.id}
        at = log.vector_log_position()
        stored = storage.get(new.id)
        assert stored is not None
        storage.replace(attrs.evolve(stored, importance=0.9))  # still active: no change
        assert log.vector_changes(at) == ([], at)
        storage.replace(attrs.evolve(stored, archived_at=clock.tick(),
                                     archive_reason=ArchiveReason.FORGOTTEN))
        assert self._changed(log, at) == {new.id}

    def test_vector_log_pages_and_trims(self, storage: Storage, clock: Clockwork) -> None:
        log = self._log(storage)
        start = log.vector_log_position()
        entries = [make_entry(clock, f"note {i}") for i in range(5)]
        storage.write_many([(e, _vec(i)) for i, e in enumerate(entries)])
        step = log.vector_changes(start, 2)
        assert step is not None and step[0] == [e.id for e in entries[:2]]
        rest = log.vector_changes(step[1])
        assert rest is not None and rest[0] == [e.id for e in entries[2:]]
        end = log.vector_log_position()
        log.trim_vector_log(step[1])
        assert log.vector_changes(start) is None  # trimmed past: reconcile in full
        assert log.vector_changes(step[1]) == rest
        log.trim_vector_log(end)
        assert log.vector_changes(end) == ([], end)
        assert log.vector_log_position() == end  # positions never go back
        more = make_entry(clock, "one more")
        storage.write(more, _vec(9))
        assert self._changed(log, end) == {more.id}

    def test_a_rolled_back_write_logs_nothing(self, storage: Storage, clock: Clockwork) -> None:
        log = self._log(storage)
        at = log.vector_log_position()
        with pytest.raises(RuntimeError), storage.transaction():
            storage.write(make_entry(clock, "never"), _vec(1))
            raise RuntimeError("abort")
        assert log.vector_log_position() in (at, at + 1)  # a number may be spent, no row
        assert log.vector_changes(at) == ([], at) or log.vector_changes(at)[0] == []

    # meta, sessions, audit, jobs ----------------------------------------------------------
    def test_meta(self, storage: Storage) -> None:
        assert storage.get_meta("embedding_model_id") is None
        storage.set_meta("embedding_model_id", "m")
        storage.set_meta("embedding_model_id", "m2")
        assert storage.get_meta("embedding_model_id") == "m2"
        assert storage.get_meta("schema_version") is not None

    def test_sessions(self, storage: Storage, clock: Clockwork) -> None:
        at = clock.tick()
        s1 = SessionRecord("s1", "agent-a", ALICE.tenant, at, at, goal="g")
        s2 = SessionRecord("s2", "agent-b", ALICE.tenant, at, at)
        storage.put_session(s1)
        storage.put_session(s2)
        assert storage.get_session("s1") == s1
        assert [s.id for s in storage.open_sessions("agent-a", ALICE.tenant)] == ["s1"]
        storage.put_session(attrs.evolve(s1, ended_at=clock.tick(), end_reason="ended"))
        assert storage.open_sessions("agent-a", ALICE.tenant) == []

    def test_audit_chain_per_tenant(self, storage: Storage, clock: Clockwork) -> None:
        for i in range(3):
            storage.append_audit([
                AuditDraft(ALICE.tenant, clock.tick(), "agent-a", "store", f"e{i}", "h", {"i": i}),
                AuditDraft(BOB.tenant, clock.tick(), "agent-b", "store", None, "h"),
            ])
        alice = storage.audit_records(ALICE.tenant)
        assert len(alice) == 3 and verify_chain(alice) == []
        assert verify_chain(storage.audit_records(BOB.tenant)) == []
        assert len(storage.audit_records()) == 6
        assert alice[1].details == {"i": 1}
        about = storage.audit_records(ALICE.tenant, entry_id="e1")
        assert [r.entry_id for r in about] == ["e1"] and about[0].details == {"i": 1}
        assert storage.audit_records(BOB.tenant, entry_id="e1") == []

    def test_concurrent_audit_appends_never_fork(self, storage: Storage, clock: Clockwork) -> None:
        at = clock.tick()

        def work(n: int) -> None:
            for i in range(20):
                storage.append_audit([AuditDraft(ALICE.tenant, at, f"t{n}", "read", None, str(i))])

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        records = storage.audit_records(ALICE.tenant)
        assert len(records) == 80 and verify_chain(records) == []

    def test_jobs_are_idempotent(self, storage: Storage, clock: Clockwork) -> None:
        job = JobRecord("j1", "remember", {"text": "hi"}, clock.tick(), idempotency_key="k1")
        assert storage.enqueue(job) == job
        again = storage.enqueue(attrs.evolve(job, id="j2"))
        assert again.id == "j1"
        assert [j.id for j in storage.pending_jobs("remember")] == ["j1"]
        storage.finish_job("j1")
        assert storage.pending_jobs() == []

    def test_stats_and_maintenance(self, storage: Storage, clock: Clockwork) -> None:
        storage.write(make_entry(clock))
        stats = storage.stats()
        assert stats["rows"] == 1
        assert storage.maintenance("integrity")["ok"] is True
        storage.maintenance("vacuum")
        with pytest.raises(TulvingError):
            storage.maintenance("defragment-the-moon")

    # persistence ------------------------------------------------------------------------
    def test_reopen_keeps_everything(self, make_storage: Callable[..., Storage], clock: Clockwork) -> None:
        first = make_storage("persist")
        if not first.capabilities.persistent:
            pytest.skip("adapter declares capabilities.persistent = False")
        first.open()
        e = make_entry(clock, "durable", key="k", tags=("t",))
        first.write(e, _vec(5))
        first.set_meta("embedding_model_id", "m")
        first.close()
        second = make_storage("persist")
        second.open()
        try:
            assert second.get(e.id) == e
            np.testing.assert_array_equal(second.vectors_for([e.id])[e.id], _vec(5))
            assert second.get_meta("embedding_model_id") == "m"
        finally:
            second.close()

    # optional capabilities (tulving.ports.storage) -------------------------------------
    @pytest.fixture
    def open_read_only(self) -> Callable[..., Storage] | None:
        """An adapter that is a ``ReadOnlyOpen`` supplies ``open_read_only(name)``: a new,
        unopened instance over the store ``make_storage(name)`` made, opened read-only.
        (None: the adapter offers no read-only open.)"""
        return None

    def test_read_only_open_sees_commits_and_writes_nothing(
        self, make_storage: Callable[..., Storage], clock: Clockwork,
        open_read_only: Callable[..., Storage] | None,
    ) -> None:
        writer = make_storage("shared")
        if not isinstance(writer, ReadOnlyOpen):
            pytest.skip("adapter is no ReadOnlyOpen (optional): a read-only Memory is refused")
        assert open_read_only is not None, (
            "a ReadOnlyOpen adapter's suite must supply the open_read_only fixture")
        writer.open()
        try:
            assert writer.read_only is False
            first = make_entry(clock, "written before the reader opened")
            writer.write(first, _vec(1))
            reader = open_read_only("shared")
            reader.open()
            try:
                assert isinstance(reader, ReadOnlyOpen) and reader.read_only is True
                assert reader.get(first.id) == first
                later = make_entry(clock, "written while the reader is open")
                writer.write(later, _vec(2))
                assert reader.get(later.id) == later  # it sees what the writer commits
                np.testing.assert_array_equal(reader.vectors_for([later.id])[later.id],
                                              _vec(2))
                for attempt in (lambda: reader.write(make_entry(clock, "no"), None),
                                lambda: reader.set_meta("k", "v"),
                                lambda: reader.archive([]),
                                lambda: reader.transaction().__enter__()):
                    with pytest.raises(ReadOnlyError):
                        attempt()
            finally:
                reader.close()
            assert writer.get(later.id) == later
            assert writer.get_meta("k") is None
        finally:
            writer.close()

    @pytest.fixture
    def reopen_with_key(self) -> Callable[..., Storage] | None:
        """An adapter that is an ``EncryptionChange`` supplies ``reopen_with_key(name,
        key)``: a new, unopened instance over the store ``make_storage(name)`` made, opened
        with ``key`` (an ``EncryptionKey``; None for a plain store)."""
        return None

    def test_encryption_change_keeps_everything(
        self, make_storage: Callable[..., Storage], clock: Clockwork,
        reopen_with_key: Callable[..., Storage] | None,
    ) -> None:
        store = make_storage("sealed")
        if not isinstance(store, EncryptionChange):
            pytest.skip("adapter is no EncryptionChange (optional): it cannot be encrypted")
        assert reopen_with_key is not None, (
            "an EncryptionChange adapter's suite must supply the reopen_with_key fixture")
        key = EncryptionKey(b"contract-suite-key-0123456789abcdef", source="test")
        store.open()
        kept = make_entry(clock, "kept across the change of key", key="k")
        store.write(kept, _vec(3))
        with pytest.raises(TulvingError):  # refused while open
            store.change_encryption(key)
        store.close()
        switched: list[bool] = []
        store.change_encryption(key, lambda: switched.append(True))
        assert switched == [True]
        sealed = reopen_with_key("sealed", key)
        sealed.open()
        try:
            assert sealed.get(kept.id) == kept
            np.testing.assert_array_equal(sealed.vectors_for([kept.id])[kept.id], _vec(3))
            assert sealed.capabilities.encrypted_at_rest
        finally:
            sealed.close()
        with pytest.raises(TulvingError):  # the old way in no longer opens it
            plain = reopen_with_key("sealed", None)
            try:
                plain.open()
                plain.get(kept.id)
            finally:
                plain.close()

