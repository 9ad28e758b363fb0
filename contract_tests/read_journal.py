"""The ``ReadJournal`` capability's contract (``tulving.ports.storage.ReadJournal``):
journaled reads are settled into the audit log and the access counts exactly once, never
by a transaction that rolled back, survive a reopen, and a journaled read does not wait
for a writer's transaction. Mixed into ``StorageContract``; skipped for an adapter
without the capability."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from contract_tests.builders import ALICE, Clockwork, make_entry
from tulving.domain.audit_chain import verify_chain
from tulving.domain.records import AuditDraft
from tulving.ports.storage import ReadJournal, Storage

#: How long the writer of the waiting case holds its transaction, and the most a journaled
#: read beside it may take (a read that waited for the writer takes the whole hold).
HOLD_S, QUICK_S = 2.0, 0.5


def _journal(storage: Storage) -> ReadJournal:
    if not isinstance(storage, ReadJournal):
        pytest.skip(f"{storage.name} keeps no read journal (optional): reads append their "
                    "records in batches")
    return storage


def _read(clock: Clockwork, action: str, ids: list[str]) -> AuditDraft:
    return AuditDraft(tenant=ALICE.tenant, at=clock.tick(), actor="reader", action=action,
                      entry_id=None, input_hash="0" * 64, details={"ids": ids})


class ReadJournalContract:
    def test_journaled_reads_settle_exactly_once(self, storage: Storage,
                                                 clock: Clockwork) -> None:
        journal = _journal(storage)
        entry = make_entry(clock, "read three times")
        storage.write(entry)
        before = len(storage.audit_records(ALICE.tenant))
        for n in range(3):
            journal.journal_read([_read(clock, f"search {n}", [entry.id])], [entry.id],
                                 clock.tick())
        last = clock.tick()
        journal.journal_read([], [entry.id], last)  # access only
        assert journal.journaled_reads() == 4
        with storage.transaction():
            assert journal.settle_reads() == 4
        assert journal.settle_reads() == 0  # (in a transaction of its own)
        assert journal.journaled_reads() == 0
        records = storage.audit_records(ALICE.tenant)
        assert [r.action for r in records[before:]] == ["search 0", "search 1", "search 2"]
        assert records[-1].details == {"ids": [entry.id]}
        assert verify_chain(records) == []
        read = storage.get(entry.id)
        assert read is not None and read.access_count == 4
        assert read.last_accessed_at == last

    def test_a_rolled_back_settling_settles_nothing(self, storage: Storage,
                                                    clock: Clockwork) -> None:
        journal = _journal(storage)
        entry = make_entry(clock, "read once")
        storage.write(entry)
        journal.journal_read([_read(clock, "get", [entry.id])], [entry.id], clock.tick())
        with pytest.raises(RuntimeError), storage.transaction():
            assert journal.settle_reads() == 1
            raise RuntimeError("the write fails after settling")
        assert journal.journaled_reads() == 1
        assert journal.settle_reads(limit=10) == 1
        read = storage.get(entry.id)
        assert read is not None and read.access_count == 1
        assert [r.action for r in storage.audit_records(ALICE.tenant)].count("get") == 1

    def test_journaled_reads_survive_a_reopen(self, make_storage: Callable[..., Storage],
                                              clock: Clockwork) -> None:
        first = make_storage("journaled")
        if not first.capabilities.persistent:
            pytest.skip("adapter declares capabilities.persistent = False")
        first.open()
        entry = make_entry(clock, "read before the process ended")
        try:
            journal = _journal(first)
            first.write(entry)
            journal.journal_read([_read(clock, "curate", [entry.id])], [entry.id],
                                 clock.tick())
        finally:
            first.close()
        second = make_storage("journaled")
        second.open()
        try:
            journal = _journal(second)
            assert journal.journaled_reads() == 1
            assert journal.settle_reads() == 1
            read = second.get(entry.id)
            assert read is not None and read.access_count == 1
            assert "curate" in [r.action for r in second.audit_records(ALICE.tenant)]
        finally:
            second.close()

    def test_a_journaled_read_does_not_wait_for_a_writer(self, storage: Storage,
                                                         clock: Clockwork) -> None:
        journal = _journal(storage)
        entry = make_entry(clock, "read while a write holds the store")
        storage.write(entry)
        holding = threading.Event()
        failure: list[BaseException] = []

        def long_write() -> None:
            try:
                with storage.transaction():
                    storage.lock_tenant_writes(ALICE.tenant)
                    storage.write(make_entry(clock, "a long write"))
                    holding.set()
                    time.sleep(HOLD_S)
            except BaseException as exc:  # reported below
                failure.append(exc)
                holding.set()

        writer = threading.Thread(target=long_write)
        writer.start()
        assert holding.wait(30)
        slowest: Any = 0.0
        began = time.perf_counter()
        while time.perf_counter() - began < HOLD_S / 2:
            t0 = time.perf_counter()
            journal.journal_read([_read(clock, "search", [entry.id])], [entry.id],
                                 clock.tick())
            slowest = max(slowest, time.perf_counter() - t0)
        writer.join()
        assert not failure, failure
        assert slowest < QUICK_S, f"a journaled read waited {slowest:.2f} s for the writer"
