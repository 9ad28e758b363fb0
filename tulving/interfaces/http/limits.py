"""How much one request may ask of the server, and how long it may take.

Each limit is named in the refusal, with the ``tulving serve`` option that sets it, so a
client knows what to split. Measured by ``benchmarks/http_limits.py`` (the largest
``remember`` accepted, its time and peak memory, what a small call beside it saw):

- a ``remember`` text over ``max_remember_chars`` is refused (413) before any work: the
  library accepts 2 M characters, but one such call holds the writer for minutes and
  grows the process by a gigabyte (every turn becomes a memory, embedded and indexed);
- an import whose manifest declares more than ``max_import_entries`` entries is refused
  (413) before any is read (a bundle streams in and is read record by record, so its
  size in bytes is bounded by ``BodyLimit`` and its work by the count);
- a sync push is read into memory whole (its delta is checked and logged as one unit), so
  its body has a limit of its own, ``max_delta_bytes``, far below an import's;
- every call runs under ``timeout``: the client gets 503 at the time limit, and the
  library call, which runs on a worker thread Python cannot stop from outside, stops at
  its next safe point (:mod:`tulving.application.plumbing.deadline`) without writing. A
  call waiting for a worker or for the writer's lock counts that wait in its own time,
  so no request holds another past that other's own limit;
- ``concurrency`` bounds the worker threads that run library calls, not only the calls
  being answered: a call answered 503 keeps its worker slot until its thread has stopped
  (:class:`_Slot`), so calls that time out cannot pile up threads behind the answers (12
  of them once grew a server from 3 threads to 22 and slowed every other tenant);
- the slots are shared fairly between tenants (:class:`FairShare`): while another tenant
  has a call running or waiting, a tenant runs one call at a time (alone, it may use
  every slot), and its scans yield the interpreter at their safe points while another
  tenant's call runs, so a tenant sending costly texts cannot starve the others
  (``benchmarks/redaction_fairness.py``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from tulving.application.plumbing import deadline
from tulving.domain.errors import DeadlineExceeded
from tulving.interfaces.http.errors import HTTPError
from tulving.interfaces.request_limits import (
    DEFAULT_TIMEOUT,
    MAX_BODY,
    MAX_BUNDLE,
    MAX_DELTA,
    MAX_IMPORT_ENTRIES,
    MAX_REMEMBER_CHARS,
    Limits,
)

__all__ = ["DEFAULT_TIMEOUT", "MAX_BODY", "MAX_BUNDLE", "MAX_DELTA", "MAX_IMPORT_ENTRIES",
           "MAX_REMEMBER_CHARS", "Limits", "bounded"]

T = TypeVar("T")

#: How long a scan of a tenant's call sleeps at a safe point while another tenant's call
#: runs: the interpreter is handed over (a scan holds it between its safe points).
YIELD_SECONDS = 0.005


class FairShare:
    """Fair use of the worker slots between tenants. Its counts change on the event loop
    only; worker threads read them (two integers: a stale read costs a yield, no more)."""

    def __init__(self) -> None:
        self.running: Counter[str] = Counter()
        self.waiting: Counter[str] = Counter()
        self.total_running = 0
        self.total_waiting = 0
        self._changed: anyio.Event | None = None

    def _others_active(self, tenant: str) -> bool:
        return (self.total_running - self.running[tenant]
                + self.total_waiting - self.waiting[tenant]) > 0

    async def enter(self, tenant: str) -> None:
        """Wait, on the event loop, until ``tenant`` may start one more call."""
        self.waiting[tenant] += 1
        self.total_waiting += 1
        try:
            while self.running[tenant] and self._others_active(tenant):
                if self._changed is None:
                    self._changed = anyio.Event()
                await self._changed.wait()
        finally:
            self.waiting[tenant] -= 1
            self.total_waiting -= 1
            self._notify()
        self.running[tenant] += 1
        self.total_running += 1

    def leave(self, tenant: str) -> None:
        """A call of ``tenant`` has ended (on the event loop)."""
        self.running[tenant] -= 1
        self.total_running -= 1
        self._notify()

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def pacer(self, tenant: str) -> Callable[[], None]:
        """What a scan of ``tenant``'s call does at a safe point (on its worker thread):
        sleep a moment if a call of another tenant is running."""
        def pace() -> None:
            if self.total_running - self.running[tenant] > 0:
                time.sleep(YIELD_SECONDS)
        return pace


class _Slot:
    """One call's worker slot of ``limiter``, held from the call's start until both its
    thread has ended and its door has answered, whichever comes last: released by the
    door when the thread ended first (or never began: a call abandoned before a thread
    took it up is never run), else by the thread on its way out."""

    def __init__(self, limiter: anyio.CapacityLimiter, share: FairShare | None,
                 tenant: str) -> None:
        self.limiter = limiter
        self.share, self.tenant = share, tenant
        self.token = anyio.lowlevel.current_token()
        self.lock = threading.Lock()
        self.answered = False
        self.began = False
        self.ended = False

    def begin(self) -> bool:
        """The worker's side, first: False when the door has answered already (the slot
        is free again, and the call must not run)."""
        with self.lock:
            if self.answered:
                return False
            self.began = True
            return True

    def thread_done(self) -> None:
        """The worker's side, last: its call has returned or raised."""
        with self.lock:
            self.ended = True
            answered = self.answered
        if answered:  # the door gave up on it before: the slot is freed from here
            # (once the event loop has stopped, no call waits for a slot)
            with contextlib.suppress(RuntimeError):
                anyio.from_thread.run_sync(self.release, token=self.token)

    def door_done(self) -> None:
        """The door's side (on the event loop): it has answered."""
        with self.lock:
            self.answered = True
            free = self.ended or not self.began
        if free:
            self.release()

    def release(self) -> None:
        """The slot back to the limiter and the tenant's share (on the event loop)."""
        self.limiter.release_on_behalf_of(self)
        if self.share is not None:
            self.share.leave(self.tenant)


async def bounded(fn: Callable[..., T], *args: Any, timeout: float,
                  limiter: anyio.CapacityLimiter, share: FairShare | None = None,
                  tenant: str = "") -> T:
    """``fn(*args)`` on a worker thread (``limiter`` of them at once, counting the threads
    of calls already answered 503 that have not stopped yet) under ``timeout``: 503 when
    it passes, and the call itself cancelled at its next safe point; a call that has
    committed a write by then is waited for and answered (a 503 means nothing was
    written: :mod:`tulving.application.plumbing.deadline`). With ``share``, the call
    takes its turn among ``tenant``'s (see :class:`FairShare`)."""
    limit = deadline.Limit(timeout)
    if share is not None:
        limit.pace = share.pacer(tenant)
    finished = threading.Event()
    outcome: list[Any] = []
    slot = _Slot(limiter, share, tenant)
    holding = entered = False

    def work() -> T:
        if not slot.begin():
            raise DeadlineExceeded(f"the call {deadline.NOTHING_WRITTEN}")
        try:
            with deadline.within(limit):
                value = fn(*args)
            outcome.append((True, value))
            return value
        except BaseException as exc:
            outcome.append((False, exc))
            raise
        finally:
            finished.set()
            slot.thread_done()

    try:
        with anyio.fail_after(timeout):  # the wait for a slot counts in the call's time
            if share is not None:
                await share.enter(tenant)
                entered = True
            await limiter.acquire_on_behalf_of(slot)
            holding = True
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except TimeoutError as exc:
        if limit.give_up():
            raise HTTPError(503, "Timeout",
                            f"the call took over {timeout:g} s (serve --timeout); it is "
                            "cancelled at its next safe point, and nothing is written"
                            ) from exc
        # committed before the limit: only its answer is left to make
        while not finished.is_set():
            await anyio.sleep(0.005)
    finally:
        if holding:
            slot.door_done()
        elif entered and share is not None:
            share.leave(tenant)  # no slot was taken: the turn alone is given back
    ok, value = outcome[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]
