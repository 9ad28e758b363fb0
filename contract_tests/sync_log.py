"""Contract suite of the sync log (``tulving.ports.storage.SyncLog``): the server's side of
sync kept in the store.

Supply ``make_storage`` exactly as for ``contract_tests.storage.StorageContract``
(an unopened adapter; the same ``name`` twice in one test gives two adapters over the
same data). The adapter must implement ``SyncLog``; an adapter that does not is served
without ``/v1/sync`` and need not run this suite.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from tulving.domain.errors import StorageError, ValidationError
from tulving.domain.sync_records import (
    DELTA_MERGED,
    DELTA_PENDING,
    DELTA_QUARANTINED,
    DELTA_STORED,
    SyncDelta,
)
from tulving.ports.storage import Storage, SyncLog

T1 = "u1\x1f"
T2 = "u2\x1fw"
AT = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


class SyncLogContract:
    """Base class of the sync log suite; subclass it and provide ``make_storage``."""

    @pytest.fixture
    def log(self, make_storage: Callable[..., Storage]) -> Iterator[SyncLog]:
        store = make_storage()
        store.open()
        assert isinstance(store, SyncLog)
        yield store
        store.close()

    def test_is_a_sync_log(self, log: SyncLog) -> None:
        assert isinstance(log, SyncLog)
        assert log.sync_last(T1) == 0 and log.sync_watermark(T1) == 0
        assert log.sync_deltas(T1, 0, 10) == [] and log.sync_read(T1, 1) is None

    def test_numbers_per_tenant_in_order(self, log: SyncLog) -> None:
        first, new = log.sync_append(T1, "a1", b"one", e2e=False, at=AT)
        assert new and first.seq == 1 and first.state == DELTA_PENDING
        assert log.sync_append(T2, "a1", b"one", e2e=False, at=AT)[0].seq == 1
        second, _ = log.sync_append(T1, "b2", b"two", e2e=True, at=AT + timedelta(seconds=1))
        assert second.seq == 2 and second.e2e and second.state == DELTA_STORED
        assert log.sync_last(T1) == 2 and log.sync_last(T2) == 1
        listed = log.sync_deltas(T1, 0, 10)
        assert [d.seq for d in listed] == [1, 2]
        assert listed[0] == SyncDelta(1, "a1", first.delta_id, 3, False, AT, DELTA_PENDING)
        assert listed[1].pushed_at == AT + timedelta(seconds=1) and listed[1].size == 3
        assert log.sync_read(T1, 2) == b"two" and log.sync_read(T2, 2) is None

    def test_a_retried_push_is_the_same_delta(self, log: SyncLog) -> None:
        first, new = log.sync_append(T1, "a1", b"bytes", e2e=False, at=AT)
        again, new_again = log.sync_append(T1, "a1", b"bytes", e2e=False, at=AT)
        assert new and not new_again and again == first
        assert log.sync_find(T1, "a1", first.delta_id) == first
        assert log.sync_find(T1, "b2", first.delta_id) is None
        other, other_new = log.sync_append(T1, "b2", b"bytes", e2e=False, at=AT)
        assert other_new and other.seq == 2  # another device's push is its own delta
        assert log.sync_last(T1) == 2

    @pytest.mark.parametrize("device", ["ab\n", "AB", "", "g1", "a" * 65, "ab/../x", " ab",
                                        "ab\x00", "\u0661\u0662", 12])
    def test_a_device_name_is_a_full_match(self, log: SyncLog, device: object) -> None:
        with pytest.raises(ValidationError):
            log.sync_append(T1, device, b"x", e2e=False, at=AT)  # type: ignore[arg-type]
        assert log.sync_last(T1) == 0 and log.sync_deltas(T1, 0, 10) == []
        assert log.sync_append(T1, "0123456789abcdef" * 4, b"x", e2e=False, at=AT)[0].seq == 1

    def test_bytes_round_trip(self, log: SyncLog) -> None:
        blob = bytes(range(256)) * 4096  # 1 MiB, every byte value
        delta, _ = log.sync_append(T1, "a1", blob, e2e=True, at=AT)
        assert log.sync_read(T1, delta.seq) == blob and delta.size == len(blob)

    def test_listing_filters(self, log: SyncLog) -> None:
        for i in range(6):
            log.sync_append(T1, "a1" if i % 2 else "b2", f"d{i}".encode(), e2e=False, at=AT)
        assert [d.seq for d in log.sync_deltas(T1, 2, 10)] == [3, 4, 5, 6]
        assert [d.seq for d in log.sync_deltas(T1, 2, 2)] == [3, 4]
        assert [d.seq for d in log.sync_deltas(T1, 0, 10, upto=3)] == [1, 2, 3]
        assert [d.seq for d in log.sync_deltas(T1, 0, 10, device="a1")] == [2, 4, 6]
        assert log.sync_deltas(T1, 0, 10, states=[DELTA_MERGED]) == []
        assert log.sync_deltas(T1, 0, 0) == []

    def _settle(self, log: SyncLog, seq: int, state: str, reason: str | None = None) -> int:
        with log.sync_merger(T1) as mark:
            log.sync_settle(T1, seq, state, reason)
        return mark

    def test_settling_moves_the_watermark_in_order(self, log: SyncLog) -> None:
        for i in range(3):
            log.sync_append(T1, "a1", f"d{i}".encode(), e2e=False, at=AT)
        with pytest.raises(StorageError):
            self._settle(log, 2, DELTA_MERGED)  # 1 comes first
        assert self._settle(log, 1, DELTA_MERGED) == 0
        assert log.sync_watermark(T1) == 1 and log.sync_watermark(T2) == 0
        assert self._settle(log, 2, DELTA_QUARANTINED, "it belongs to another tenant") == 1
        with pytest.raises(StorageError):
            self._settle(log, 2, DELTA_MERGED)  # settled once only
        with pytest.raises(ValidationError):
            self._settle(log, 3, "lost")
        assert log.sync_watermark(T1) == 2
        quarantined = log.sync_deltas(T1, 0, 10, states=[DELTA_QUARANTINED])
        assert [(d.seq, d.reason) for d in quarantined] == [(2, "it belongs to another tenant")]
        assert [d.state for d in log.sync_deltas(T1, 0, 10)] == [
            DELTA_MERGED, DELTA_QUARANTINED, DELTA_PENDING]

    def test_a_claim_is_let_go_when_its_block_fails(self, log: SyncLog) -> None:
        with pytest.raises(RuntimeError), log.sync_merger(T1):
            raise RuntimeError("the merge failed")
        with log.sync_merger(T1) as mark:  # not held by the failed block any more
            assert mark == 0

    def test_a_rolled_back_transaction_leaves_no_trace(self, log: SyncLog) -> None:
        with pytest.raises(RuntimeError), log.transaction():  # type: ignore[attr-defined]
            delta, _ = log.sync_append(T1, "a1", b"gone", e2e=False, at=AT)
            log.sync_settle(T1, delta.seq, DELTA_MERGED)
            raise RuntimeError("the merge failed")
        assert log.sync_last(T1) == 0 and log.sync_watermark(T1) == 0
        assert log.sync_deltas(T1, 0, 10) == [] and log.sync_read(T1, 1) is None
        again, new = log.sync_append(T1, "a1", b"gone", e2e=False, at=AT)
        assert new and again.seq == 1

    def test_concurrent_appends_get_distinct_numbers(self, log: SyncLog) -> None:
        errors: list[BaseException] = []
        seqs: list[int] = []
        lock = threading.Lock()

        def push(n: int) -> None:
            try:
                for i in range(5):
                    delta, _ = log.sync_append(T1, f"{n:x}", f"{n}-{i}".encode(), e2e=False,
                                               at=AT)
                    with lock:
                        seqs.append(delta.seq)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=push, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert sorted(seqs) == list(range(1, 41))
        assert [d.seq for d in log.sync_deltas(T1, 0, 100)] == list(range(1, 41))

    def test_one_merger_per_tenant(self, log: SyncLog,
                                   make_storage: Callable[..., Storage]) -> None:
        """A second claim of the tenant waits for the first block to end, then reads
        the watermark the first moved (in the same process on one adapter, and across
        two adapters over the same data when the adapter allows several writers)."""
        log.sync_append(T1, "a1", b"d1", e2e=False, at=AT)
        log.sync_append(T1, "a1", b"d2", e2e=False, at=AT)
        others: list[SyncLog] = [log]
        if log.capabilities.multi_process_writers:  # type: ignore[attr-defined]
            second = make_storage()
            second.open()
            assert isinstance(second, SyncLog)
            others.append(second)
        try:
            for other in others:
                self._second_claim_waits(log, other)
        finally:
            for other in others[1:]:
                other.close()  # type: ignore[attr-defined]

    def _second_claim_waits(self, log: SyncLog, other: SyncLog) -> None:
        mark = log.sync_watermark(T1)
        claimed, release = threading.Event(), threading.Event()
        seen: list[tuple[str, int, float]] = []

        def first() -> None:
            with log.sync_merger(T1) as got:
                assert got == mark
                claimed.set()
                release.wait(10)
                log.sync_settle(T1, mark + 1, DELTA_MERGED)
                seen.append(("first settled", mark + 1, time.monotonic()))

        def second() -> None:
            claimed.wait(10)
            with other.sync_merger(T1) as got:
                seen.append(("second claimed", got, time.monotonic()))

        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for t in threads:
            t.start()
        assert claimed.wait(10)
        time.sleep(0.3)  # the second claimer is waiting now
        assert seen == []
        release.set()
        for t in threads:
            t.join(20)
        assert [(what, n) for what, n, _ in seen] == [("first settled", mark + 1),
                                                      ("second claimed", mark + 1)]

    def test_the_log_persists(self, make_storage: Callable[..., Storage]) -> None:
        store = make_storage("kept")
        if not store.capabilities.persistent:
            pytest.skip("the adapter keeps nothing after close (capabilities.persistent)")
        store.open()
        assert isinstance(store, SyncLog)
        try:
            store.sync_append(T1, "a1", b"kept", e2e=False, at=AT)
            with store.sync_merger(T1):
                store.sync_settle(T1, 1, DELTA_QUARANTINED, "a reason")
        finally:
            store.close()
        again = make_storage("kept")
        again.open()
        assert isinstance(again, SyncLog)
        try:
            assert again.sync_watermark(T1) == 1 and again.sync_read(T1, 1) == b"kept"
            assert again.sync_deltas(T1, 0, 5)[0].reason == "a reason"
            assert again.sync_append(T1, "a1", b"next", e2e=False, at=AT)[0].seq == 2
        finally:
            again.close()

    def test_adopting_an_older_log_keeps_its_numbers(self, log: SyncLog) -> None:
        import hashlib

        def old(seq: int, data: bytes, state: str) -> SyncDelta:
            return SyncDelta(seq, "ab12", hashlib.sha256(data).hexdigest(), len(data),
                             state == DELTA_STORED, AT, state)

        blobs = [b"one", b"two", b"three", b"four"]
        deltas = [old(3, blobs[0], DELTA_MERGED), old(4, blobs[1], DELTA_STORED),
                  old(5, blobs[2], DELTA_PENDING), old(7, blobs[3], DELTA_PENDING)]
        assert log.sync_adopt(T1, deltas, blobs) == 4
        assert [d.seq for d in log.sync_deltas(T1, 0, 10)] == [3, 4, 5, 7]
        assert log.sync_watermark(T1) == 4 and log.sync_last(T1) == 7
        assert log.sync_read(T1, 7) == b"four"
        assert log.sync_find(T1, "ab12", deltas[2].delta_id) == deltas[2]
        assert log.sync_append(T1, "ab12", b"five", e2e=False, at=AT)[0].seq == 8
        with log.sync_merger(T1) as mark:
            assert mark == 4
            log.sync_settle(T1, 5, DELTA_MERGED)
        assert log.sync_adopt(T1, deltas, blobs) == 0  # only into an empty log
        assert log.sync_adopt(T2, [], []) == 0 and log.sync_last(T2) == 0
