"""A durable queue of ``remember`` jobs and the worker thread that drains it: the path of
a ``remember`` with an ``idempotency_key`` (and of the deprecated ``wait=False``). A plain
``remember`` commits its turns and leaves what is read off them to the enrichment worker
(``read_off_turns``); this queue is kept for what users rely on: a key that makes a
repeat a no-op across processes, and the ``RememberJob`` handle. (Named apart from the
storage port's ``JobQueue``, the capability it uses.)

Why durable: ``remember(text, wait=False)`` must return at once yet lose nothing if the
process dies. The job (with the text) is persisted through ``storage.enqueue`` before
``remember`` returns; the entries of a job, the record of their ids and the job's
completion are committed in one transaction, so a kill -9 at any point leaves either a
pending job (run again at the next startup or by ``run_jobs()``) or a finished one, never
half of both. Idempotency keys are namespaced per tenant and agent, so one agent's key
never swallows another's job; the store holds them unique.

Why once, whichever process runs it (server replicas share one store): that transaction
first takes the job in the store (``take_job``: a row lock in PostgreSQL); a second runner
waits for the first to commit, finds the job finished and answers with its entries. The
slow part (extraction, maybe an LLM call) runs before, outside every lock; so that two
background workers do not both pay for it, a worker first takes a lease on the job in one
statement (``claim_job``) and leaves jobs with another owner's live lease alone. A lease
of a killed process lapses after ``LEASE``; a caller waiting on its own ``remember`` does
not wait for leases (the row lock keeps the write single).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.write_order import writing
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import StorageError, TulvingError, ValidationError
from tulving.domain.ids import new_id
from tulving.domain.records import JobRecord

REMEMBER = "remember"
_RESULT_META = "job-result:"
_ERROR_META = "job-error:"
#: How long a background worker's lease on a job keeps other workers from preparing it.
LEASE = timedelta(minutes=5)

#: ``prepare(job)`` does the slow part (LLM extraction) outside any transaction;
#: ``write(job, prepared) -> entries`` runs inside the transaction this module opens.
Prepare = Callable[[JobRecord], Any]
Write = Callable[[JobRecord, Any], list[MemoryEntry]]


def scoped_key(ctx: MemoryContext, key: str | None) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str) or not key or len(key) > 200:
        raise ValidationError("idempotency_key must be a non-empty string of at most 200 chars")
    owner = hashlib.sha256(f"{ctx.identity.tenant}\x1f{ctx.identity.agent_id}".encode()).hexdigest()
    return f"{owner[:16]}:{key}"


class KeyedRememberJobs:
    def __init__(self, ctx: MemoryContext, prepare: Prepare, write: Write) -> None:
        self._ctx = ctx
        self._prepare = prepare
        self._write = write
        #: The Memory's lock, taken before the store's transaction (plumbing.write_order).
        self._serial = ctx.serial
        self.owner = f"{os.getpid()}:{uuid.uuid4().hex[:12]}"  # whose leases these are
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.failed = 0

    def submit(self, payload: dict[str, Any], idempotency_key: str | None) -> tuple[JobRecord, bool]:
        """Persist a job; returns it and whether it is new (False: the key was seen)."""
        ctx = self._ctx
        job = JobRecord(
            id=new_id(ctx.clock.now()), kind=REMEMBER,
            payload={**payload, "agent_id": ctx.identity.agent_id, "tenant": ctx.identity.tenant},
            created_at=ctx.clock.now(), idempotency_key=scoped_key(ctx, idempotency_key),
        )
        stored = ctx.storage.enqueue(job)
        return stored, stored.id == job.id

    def result(self, job: JobRecord) -> list[MemoryEntry] | None:
        """Entries a finished job produced (as they are now), or None if it has not run."""
        raw = self._ctx.storage.get_meta(_RESULT_META + job.id)
        if raw is None:
            return None
        return self._ctx.storage.get_many(json.loads(raw))

    def error(self, job: JobRecord) -> str | None:
        """Why a job failed (its entries were never written), or None."""
        return self._ctx.storage.get_meta(_ERROR_META + job.id)

    def mine(self) -> list[JobRecord]:
        ident = self._ctx.identity
        return [
            j for j in self._ctx.storage.pending_jobs(REMEMBER)
            if j.payload.get("agent_id") == ident.agent_id and j.payload.get("tenant") == ident.tenant
        ]

    def claim(self, job: JobRecord) -> bool:
        """Take (or renew) this queue's lease on ``job``: False when another owner's lease
        is live or the job is finished."""
        now = self._ctx.clock.now()
        return self._ctx.storage.claim_job(job.id, self.owner, now + LEASE, now)

    def run(self, job: JobRecord) -> list[MemoryEntry]:
        """Run one job now unless it has run (in this process or any other) and return its
        entries; a job that failed raises the error it failed with."""
        done = self.result(job)
        if done is not None:
            return done
        self._raise_failure(job)
        storage = self._ctx.storage
        entries: list[MemoryEntry] | None = None
        try:
            prepared = self._prepare(job)  # outside every lock: the slow part
            with self._serial, writing(self._ctx):
                if storage.take_job(job.id) is not None:  # else finished meanwhile
                    entries = self._write(job, prepared)
                    storage.set_meta(_RESULT_META + job.id, json.dumps([e.id for e in entries]))
                    storage.finish_job(job.id)
        except StorageError:
            raise  # the store failed, not the job: it stays pending and runs again
        except TulvingError as exc:
            # Bad input cannot get better by retrying: record it, keep the text in the job.
            message = f"{type(exc).__name__}: {exc}"[:2000]
            with self._serial, writing(self._ctx):
                if storage.take_job(job.id) is not None:
                    storage.finish_job(job.id, error=message)
                    storage.set_meta(_ERROR_META + job.id, message)
                    self.failed += 1
            raise
        if entries is None:  # another runner finished it: its entries, or its failure
            self._raise_failure(job)
            return self.result(job) or []
        return entries

    def _raise_failure(self, job: JobRecord) -> None:
        failure = self.error(job)
        if failure is not None:
            raise ValidationError(f"remember job {job.id} failed: {failure}")

    def run_pending(self) -> int:
        count = 0
        for job in self.mine():
            if self._stop.is_set() and threading.current_thread() is self._thread:
                break
            if not self.claim(job):  # another worker prepares it
                continue
            with contextlib.suppress(TulvingError):
                self.run(job)
            count += 1
        return count

    # -- background worker -----------------------------------------------------------
    def wake(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="tulving-jobs", daemon=True)
            self._thread.start()
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(timeout=1.0)
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                self.run_pending()
            except Exception:  # the worker must outlive one bad job
                continue

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the worker after the job in hand; pending jobs stay queued for next time."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None


class RememberJob:
    """What ``remember(..., wait=False)`` returns: a handle on the queued job.

    The job is already persisted when the handle exists; the background worker (or the
    next startup, or ``run_jobs()``) runs it. ``wait()`` is the way to its memories: it
    runs the job in the calling thread unless the worker already has (never twice).
    """

    def __init__(self, queue: KeyedRememberJobs, job: JobRecord) -> None:
        self._queue = queue
        self._job = job

    @property
    def id(self) -> str:
        return self._job.id

    @property
    def status(self) -> str:
        """``"done"``, ``"failed"`` (see ``error``) or ``"pending"``."""
        if self._queue.result(self._job) is not None:
            return "done"
        return "failed" if self._queue.error(self._job) is not None else "pending"

    @property
    def error(self) -> str | None:
        return self._queue.error(self._job)

    def entries(self) -> list[MemoryEntry] | None:
        """The job's memories as they are now, or None while it has not run."""
        return self._queue.result(self._job)

    def wait(self) -> list[MemoryEntry]:
        """The job's memories, running it now if nothing has; a failed job raises the
        ``ValidationError`` it failed with (the text stays in the job record)."""
        done = self._queue.result(self._job)
        if done is not None:
            return done
        failure = self._queue.error(self._job)
        if failure is not None:
            raise ValidationError(f"remember job {self.id} failed: {failure}")
        return self._queue.run(self._job)

    def __repr__(self) -> str:
        return f"RememberJob(id={self.id!r}, status={self.status!r})"
