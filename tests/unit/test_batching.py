"""BatchQueue: batches by size and age; background batches never make a read wait."""

from __future__ import annotations

import threading
import time
import warnings

from tulving.application.plumbing.batching import BatchQueue
from tulving.application.plumbing.warnings_once import TulvingWarning, reset_warnings


def test_a_full_batch_is_written_inline_by_default() -> None:
    written: list[list[int]] = []
    queue: BatchQueue[int] = BatchQueue(written.append, max_pending=3, max_age_s=60)
    queue.add([1, 2])
    assert written == []
    queue.add([3])
    assert written == [[1, 2, 3]]


def test_a_background_batch_is_written_by_another_thread_and_flush_waits_for_it() -> None:
    written: list[tuple[str, list[int]]] = []
    release = threading.Event()

    def slow_sink(items: list[int]) -> None:
        release.wait(5)
        written.append((threading.current_thread().name, items))

    queue: BatchQueue[int] = BatchQueue(slow_sink, max_pending=2, max_age_s=60,
                                        background=True, name="test")
    started = time.perf_counter()
    queue.add([1, 2])  # due: handed to the worker, which blocks on the event
    assert time.perf_counter() - started < 1.0  # the caller did not wait for the write
    queue.add([3])
    release.set()
    queue.flush()  # joins the worker, then writes what is left
    assert sorted(i for _, items in written for i in items) == [1, 2, 3]
    assert written[0][0] == "tulving-test"


def test_a_failed_background_write_warns_once_and_never_raises_in_the_reader() -> None:
    reset_warnings()

    def broken(items: list[int]) -> None:
        raise OSError("disk full")

    queue: BatchQueue[int] = BatchQueue(broken, max_pending=1, max_age_s=60,
                                        background=True, name="broken")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        queue.add([1])
        queue.flush()  # waits for the worker; nothing left to write inline
    assert any(issubclass(w.category, TulvingWarning) and "disk full" in str(w.message)
               for w in caught)
