"""The background worker that runs enrichment tasks: write now, enrich later.

A write returns once it is durable and findable by full text; what derives from it (the
vectors it deferred, a stronger encoder's vectors, extraction, summaries) is queued as a
task in the write's own transaction (:meth:`Enricher.queue`, or every write for a kind
registered ``on_write``) and run here (docs/architecture.md, "Enrichment").

Why it runs each task once, whatever is killed when: a worker claims a batch of one kind
with a lease (one statement), prepares the result outside every lock (the slow part),
then, under the Memory's lock and in one writing transaction, finishes the tasks it still
holds and writes the result for exactly those. A kill before that commit leaves the tasks
queued (the next writer of a single-writer store takes them when it opens, a worker of a
store shared by many once their lease has lapsed); a kill after leaves them done.
A worker whose lease lapsed and was taken over finishes nothing and writes nothing.

A batch that fails is run again one task at a time (one bad target must not hold the others
back); a task that fails with an error is tried again up to ``GIVE_UP_AFTER`` times, then
parked as failed with its error (``stats().enrichment``, ``failed_tasks``); one that fails
because the store did (``StorageError``) gives its lease back uncounted and the worker
backs off. A store without the ``EnrichmentTasks`` capability gets tasks kept in process
memory (``durable`` False): lost with the process, and vectors repaired at the next start
by embedding the entries that have none.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar

from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.write_order import after_commit, writing
from tulving.domain.enrichment import (
    GIVE_UP_AFTER,
    EnrichmentReport,
    TaskBacklog,
    TaskFailure,
    TaskTable,
)
from tulving.domain.errors import ConfigError, StorageError
from tulving.domain.log_masking import masked_logger
from tulving.ports.storage import EnrichmentTasks, ReadOnlyOpen

log = masked_logger("tulving.enrichment")

P = TypeVar("P")
#: How long a claim keeps other workers off a batch (a killed worker's batch waits this
#: long before another takes it).
LEASE = timedelta(minutes=2)
#: How often an idle worker looks for tasks it was not woken for (another process's
#: writes on a shared store, leases of a killed worker that lapsed).
IDLE_POLL = 2.0
#: How long a worker waits after the store failed before it tries again.
BACK_OFF = 1.0


class Enrichment(Protocol[P]):
    """One kind of enrichment. ``prepare`` runs outside every lock and may be slow; it
    must tolerate targets that no longer exist (deleted since they were queued).
    ``commit`` runs inside the writing transaction that finished the tasks, for the
    targets finished (a subset of those prepared); ``after_commit`` once it committed
    (caches such as the vector index follow the store there)."""

    kind: str
    #: How many targets one claim takes.
    batch: int

    def prepare(self, targets: list[str]) -> P: ...

    def commit(self, targets: list[str], prepared: P) -> None: ...

    def after_commit(self, targets: list[str]) -> None: ...


class InProcessTasks:
    """``EnrichmentTasks`` in process memory, for a store without the capability."""

    def __init__(self) -> None:
        self._table = TaskTable()
        self._lock = threading.Lock()

    def add_tasks(self, kind: str, targets: Sequence[str], at: datetime) -> int:
        with self._lock:
            return self._table.add(kind, targets, at)

    def claim_tasks(self, kind: str, owner: str, now: datetime, until: datetime,
                    limit: int) -> list[str]:
        with self._lock:
            return self._table.claim(kind, owner, now, until, limit)

    def finish_tasks(self, kind: str, targets: Sequence[str], owner: str) -> list[str]:
        with self._lock:
            return self._table.finish(kind, targets, owner)

    def release_tasks(self, kind: str, targets: Sequence[str], owner: str, at: datetime,
                      *, error: str | None = None, give_up_after: int = GIVE_UP_AFTER) -> None:
        with self._lock:
            self._table.release(kind, targets, owner, at, error, give_up_after)

    def clear_leases(self) -> int:
        with self._lock:
            return self._table.clear_leases()

    def task_backlog(self, now: datetime) -> Mapping[str, TaskBacklog]:
        with self._lock:
            return self._table.backlog(now)

    def failed_tasks(self, limit: int = 100) -> list[TaskFailure]:
        with self._lock:
            return self._table.failures(limit)

    def retry_failed_tasks(self, kind: str | None = None) -> int:
        with self._lock:
            return self._table.retry(kind)


class Enricher:
    """The enrichment kinds of one store and the worker thread that runs them (one per
    writing Memory; its views share it). Kinds run in the order they were registered."""

    def __init__(self, ctx: MemoryContext, *, read_only: bool = False,
                 lease: timedelta = LEASE, idle_poll: float = IDLE_POLL,
                 give_up_after: int = GIVE_UP_AFTER) -> None:
        self._ctx = ctx
        storage = ctx.storage
        self.durable = isinstance(storage, EnrichmentTasks)
        self._tasks: EnrichmentTasks = storage if isinstance(storage, EnrichmentTasks) \
            else InProcessTasks()
        self.read_only = read_only or (isinstance(storage, ReadOnlyOpen)
                                       and storage.read_only)
        self._lease = lease
        self._idle_poll = idle_poll
        self._give_up_after = give_up_after
        self._kinds: dict[str, Enrichment[Any]] = {}
        self._on_write: list[str] = []
        self.owner = f"{os.getpid()}:{uuid.uuid4().hex[:12]}"  # whose leases these are
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._thread_lock = threading.Lock()
        #: Tasks that failed with an error in this process (each attempt counted).
        self.failures = 0

    # kinds -----------------------------------------------------------------------------
    def register(self, handler: Enrichment[Any], *, on_write: bool = False) -> None:
        """Add a kind; ``on_write``: every entry a write inserts is queued for it."""
        if handler.kind in self._kinds:
            raise ConfigError(f"enrichment kind {handler.kind!r} is registered already")
        if not isinstance(handler.batch, int) or handler.batch < 1:
            raise ConfigError(f"enrichment kind {handler.kind!r}: batch must be >= 1")
        self._kinds[handler.kind] = handler
        if on_write:
            self._on_write.append(handler.kind)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self._kinds)

    def handler(self, kind: str) -> Enrichment[Any] | None:
        return self._kinds.get(kind)

    # queueing (inside a writing transaction) ----------------------------------------------
    def queue(self, kind: str, targets: Iterable[str]) -> int:
        """Queue ``kind`` for ``targets`` in the caller's transaction (a task exists iff
        the write commits); the worker is woken once it has committed."""
        if kind not in self._kinds:
            raise ConfigError(f"no enrichment kind {kind!r} (registered: "
                              f"{', '.join(self._kinds) or 'none'})")
        if self.read_only:
            return 0
        wanted = list(dict.fromkeys(targets))
        if not wanted:
            return 0
        added = self._tasks.add_tasks(kind, wanted, self._ctx.clock.now())
        after_commit(self.wake)
        return added

    def on_write(self, entry_ids: Sequence[str]) -> list[tuple[str, str]]:
        """The tasks a write of ``entry_ids`` queues for the ``on_write`` kinds, as
        (kind, target) pairs (for a store that commits them itself: ``commit_planned``)."""
        if self.read_only:
            return []
        return [(kind, i) for kind in self._on_write for i in entry_ids]

    def queue_on_write(self, entry_ids: Sequence[str]) -> None:
        """Queue the ``on_write`` kinds for ``entry_ids`` in the caller's transaction."""
        for kind in self._on_write:
            self.queue(kind, entry_ids)

    # running -------------------------------------------------------------------------
    def run_once(self, kinds: Iterable[str] | None = None) -> int:
        """Claim and run one batch of the first kind (in order) that has work; returns how
        many tasks it claimed (0: nothing was claimable). A failure of the store itself
        (``StorageError``) gives the leases back uncounted and is raised."""
        if self.read_only:
            return 0
        for kind in self._wanted(kinds):
            now = self._ctx.clock.now()
            targets = self._tasks.claim_tasks(kind, self.owner, now, now + self._lease,
                                              self._kinds[kind].batch)
            if targets:
                self._run(self._kinds[kind], targets)
                return len(targets)
        return 0

    def _run(self, handler: Enrichment[Any], targets: list[str]) -> int:
        kind = handler.kind
        try:
            prepared = handler.prepare(targets)
            done: list[str] = []
            with writing(self._ctx):
                done = self._tasks.finish_tasks(kind, targets, self.owner)
                if done:
                    handler.commit(done, prepared)
        except StorageError:  # the store failed, not the task: no attempt counted
            self._release(kind, targets, None)
            raise
        except Exception as exc:  # the task failed: counted, parked after the last try
            if len(targets) > 1:  # one bad target must not fail the batch: one by one
                return sum(self._run(handler, [target]) for target in targets)
            self.failures += 1
            log.warning("enrichment %s failed for %d task(s): %s: %s", kind, len(targets),
                        type(exc).__name__, exc)
            self._release(kind, targets, f"{type(exc).__name__}: {exc}"[:2000])
            return 0
        if done:
            try:
                handler.after_commit(done)
            except Exception as exc:  # the result is committed; a cache follows at startup
                log.warning("enrichment %s: after the commit: %s: %s", kind,
                            type(exc).__name__, exc)
        return len(done)

    def _release(self, kind: str, targets: list[str], error: str | None) -> None:
        try:
            self._tasks.release_tasks(kind, targets, self.owner, self._ctx.clock.now(),
                                      error=error, give_up_after=self._give_up_after)
        except StorageError as exc:  # the lease lapses on its own
            log.warning("enrichment %s: could not release leases: %s", kind, exc)

    def _wanted(self, kinds: Iterable[str] | None) -> list[str]:
        if kinds is None:
            return list(self._kinds)
        asked = list(kinds)
        unknown = [k for k in asked if k not in self._kinds]
        if unknown:
            raise ConfigError(f"no enrichment kind {', '.join(map(repr, unknown))} "
                              f"(registered: {', '.join(self._kinds) or 'none'})")
        return [k for k in self._kinds if k in asked]

    # status and waiting ----------------------------------------------------------------
    def report(self, kinds: Iterable[str] | None = None) -> EnrichmentReport:
        """The backlog of the registered kinds (or of ``kinds``), and of any other kind
        the store holds tasks of (e.g. queued by a newer version)."""
        backlog = dict(self._tasks.task_backlog(self._ctx.clock.now()))
        if kinds is not None:
            wanted = set(self._wanted(kinds))
            backlog = {k: b for k, b in backlog.items() if k in wanted}
        return EnrichmentReport(tasks=backlog, durable=self.durable)

    def failed(self, limit: int = 100) -> list[TaskFailure]:
        return self._tasks.failed_tasks(limit)

    def retry_failed(self, kind: str | None = None) -> int:
        if kind is not None:
            self._wanted([kind])
        count = self._tasks.retry_failed_tasks(kind)
        if count:
            self.wake()
        return count

    def wait(self, kinds: Iterable[str] | None = None, timeout: float | None = None
             ) -> EnrichmentReport:
        """Run the backlog of ``kinds`` (all) in the calling thread too, then wait for
        tasks other workers hold, until none is left or ``timeout`` seconds passed;
        returns what is left. A read-only Memory only waits (the writer runs them)."""
        wanted = self._wanted(kinds)
        end = None if timeout is None else time.monotonic() + max(0.0, timeout)
        pause = 0.02
        while True:
            while self.run_once(wanted):
                if end is not None and time.monotonic() >= end:
                    return self.report(wanted)
            left = self.report(wanted)
            if left.settled or (end is not None and time.monotonic() >= end):
                return left
            time.sleep(pause if end is None else min(pause, max(0.0, end - time.monotonic())))
            pause = min(pause * 2, 0.5)

    # the worker thread -----------------------------------------------------------------
    def clear_stale_leases(self) -> int:
        """At a writer's start on a store with one writing process at a time: every lease
        left is a dead or closed process's, so its batch runs now instead of after the
        lease (a store shared by many writers waits for the lease to lapse)."""
        if self.read_only or self._ctx.storage.capabilities.multi_process_writers:
            return 0
        return self._tasks.clear_leases()

    def wake(self) -> None:
        """Start the worker if it is not running, and tell it there is work."""
        if self.read_only or not self._kinds:
            return
        with self._thread_lock:
            if self._stop.is_set():
                return
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="tulving-enrichment")
                self._thread.start()
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                did = self.run_once()
            except Exception as exc:  # the store failed (closing, full, gone): back off
                log.warning("enrichment worker: %s: %s; trying again",
                            type(exc).__name__, exc)
                did = 0
                self._stop.wait(BACK_OFF)
            if not did:
                self._wake.wait(self._idle_poll)
                self._wake.clear()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the worker after the batch in hand; queued tasks stay for the next start."""
        with self._thread_lock:
            self._stop.set()
            thread, self._thread = self._thread, None
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
