"""A time limit for one call, checked at safe points by the code that does the work.

A server answers a call that runs past its ``--timeout`` with 503 at once, but the
library call runs on a worker thread, which Python cannot stop from outside. So the door
sets a deadline around the call (:func:`within`) and the long loops check it
(:func:`check`) where stopping is safe: between batches of embedding or extraction, and
right after a writer takes the lock, and between the rules and the blocks of lines of
a redaction scan (:data:`tulving.domain.detection.checkpoint`). Past the deadline the check raises
:class:`~tulving.domain.errors.DeadlineExceeded`, the transaction rolls back and nothing
is written: the work is cancelled, not left running behind an answer that said it
failed. Without a deadline (the library used directly) the checks cost one
context-variable read.

The last safe point is the commit (:func:`committing`, called by the outermost writing
transaction just before it commits). There the call and its door agree under one lock:
either the door has given up (then the commit is refused and rolled back) or the call
commits, and from then on it is not cancelled and the door waits for its answer (a 503
would say "nothing was written" of a write that was made: a long batch used to commit
just inside its limit and be answered 503 a moment later, while its entries were read
back into the answer).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Iterator

from tulving.domain import detection
from tulving.domain.errors import DeadlineExceeded

NOTHING_WRITTEN = "ran past its time limit and was cancelled; nothing was written"


class Limit:
    """One call's time limit, shared by the worker that does the work and the door that
    waits for it. ``at`` is set when the work starts (a call queued for a worker past its
    limit never starts)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at: float | None = None
        self.lock = threading.Lock()
        self.cancelled = False  # the door answered 503: nothing may be committed
        self.committed = False  # something was committed: the call runs to its end
        #: What a scan does at its safe points besides the check: a door's fair share
        #: (sleep a moment while another tenant's call runs), or nothing.
        self.pace: Callable[[], None] | None = None

    def start(self) -> None:
        with self.lock:
            if self.cancelled:
                raise DeadlineExceeded(f"the call {NOTHING_WRITTEN}")
            self.at = time.monotonic() + self.seconds

    def give_up(self) -> bool:
        """The door's side: cancel the call unless it has committed (True: cancelled)."""
        with self.lock:
            if not self.committed:
                self.cancelled = True
            return self.cancelled

    def expired(self) -> bool:
        return self.cancelled or (self.at is not None and time.monotonic() > self.at)


_limit: contextvars.ContextVar[Limit | None] = contextvars.ContextVar(
    "tulving_deadline", default=None)


@contextlib.contextmanager
def within(limit: float | Limit | None) -> Iterator[Limit | None]:
    """Run the body under ``limit`` (seconds from now, a door's :class:`Limit`, or None:
    none)."""
    if limit is None:
        yield None
        return
    if not isinstance(limit, Limit):
        limit = Limit(limit)
    limit.start()
    token = _limit.set(limit)
    scanning = detection.checkpoint.set(_scan_check)  # redaction stops at the limit too
    try:
        yield limit
    finally:
        detection.checkpoint.reset(scanning)
        _limit.reset(token)


def check(what: str = "the call") -> None:
    """DeadlineExceeded if the current call's deadline has passed (and it has not
    committed anything yet)."""
    limit = _limit.get()
    if limit is not None and not limit.committed and limit.expired():
        raise DeadlineExceeded(f"{what} {NOTHING_WRITTEN}")


def _scan_check() -> None:
    check("redaction")
    limit = _limit.get()
    if limit is not None and limit.pace is not None:
        limit.pace()


def committing(what: str = "the write") -> None:
    """The last safe point, just before a commit: DeadlineExceeded if the door gave up or
    the deadline has passed; else the call is marked committed and runs to its end."""
    limit = _limit.get()
    if limit is None:
        return
    with limit.lock:
        if limit.committed:
            return
        if limit.expired():
            limit.cancelled = True
            raise DeadlineExceeded(f"{what} {NOTHING_WRITTEN}")
        limit.committed = True


def remaining() -> float | None:
    """Seconds left before the deadline (None without one)."""
    limit = _limit.get()
    if limit is None or limit.at is None:
        return None
    return max(0.0, limit.at - time.monotonic())
