"""Reads record themselves in the store's read journal; a background thread settles them.

A read never takes the Memory's lock or waits for a writer's transaction: what it records
about itself (its audit record, one access per entry it returned) goes to the store's
read journal (``ports.storage.ReadJournal``), which no write holds, and is durable when
the read returns. A thread of the writing Memory (views share their root's) settles the
journal into the audit log and the access statistics: every ``max_age_s``, or sooner once
``batch`` reads wait, under the Memory's lock and in writing transactions of at most
``batch`` reads each, so a long write delays only the settling, never a read. ``settle``
does the same in the calling thread (``flush()``, ``close()``, the audit log read back);
a writing Memory settles at start what a process killed before its settling left.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.warnings_once import warn_once
from tulving.domain.records import AuditDraft
from tulving.ports.storage import ReadJournal

#: Reads settled per writing transaction (and the backlog that wakes the thread early).
BATCH = 4096


class JournaledReads:
    def __init__(self, ctx: MemoryContext, journal: ReadJournal, *,
                 max_age_s: float = 2.0, batch: int = BATCH) -> None:
        self._ctx = ctx
        self._journal = journal
        self._max_age_s = max_age_s
        self._batch = batch
        self._since = 0  # reads journaled by this process since the last settling
        self._due = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._before: list[Callable[[], None]] = []

    def record(self, drafts: Sequence[AuditDraft], touched: Sequence[str]) -> None:
        """Journal one read (durable on return); no lock of a writer is taken."""
        self._journal.journal_read(drafts, touched, self._ctx.clock.now())
        self._since += 1
        if self._since >= self._batch:
            self._due.set()

    def before_settling(self, step: Callable[[], None]) -> None:
        """Run ``step`` before each settling (what a recorder holds in memory is
        journaled first: refusals, ``governance.audit``)."""
        self._before.append(step)

    def settle(self) -> int:
        """Settle every journaled read now, in this thread; returns how many."""
        self._journal_held()
        self._since = 0
        settled = 0
        while True:
            with self._ctx.serial, self._ctx.storage.transaction():
                n = self._journal.settle_reads(self._batch)
            settled += n
            if n < self._batch:
                return settled

    def settle_with_write(self) -> None:
        """(In a write's transaction.) Settle what waits first, where the store allows a
        write to (``ReadJournal.settle_with_writes``): the log stays in call order."""
        if self._journal.settle_with_writes and self._since:
            self._since = 0
            self._journal.settle_reads()

    def _journal_held(self) -> None:
        for step in self._before:
            step()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="tulving-read-settling",
                                            daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the thread (after the settling in hand); ``settle`` once more after it."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping.set()
            self._due.set()
            thread.join()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._due.wait(self._max_age_s)
            self._due.clear()
            if self._stopping.is_set():
                return
            try:
                self._journal_held()
                if self._since:
                    self.settle()
            except Exception as exc:  # left in the journal for the next settling
                warn_once("read-settling",
                          f"settling journaled reads in the background failed: {exc}")
