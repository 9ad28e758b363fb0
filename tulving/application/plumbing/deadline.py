"""A time limit for one call, checked at safe points by the code that does the work.

A server answers a call that runs past its ``--timeout`` with 503 at once, but the
library call runs on a worker thread, which Python cannot stop from outside. So the door
sets a deadline around the call (:func:`within`) and the long loops check it
(:func:`check`) where stopping is safe: between batches of embedding or extraction, and
right after a writer takes the lock, before it commits. Past the deadline the check
raises :class:`~tulving.domain.errors.DeadlineExceeded`, the transaction rolls back and
nothing is written: the work is cancelled, not left running behind an answer that said
it failed. Without a deadline (the library used directly) the checks cost one
context-variable read.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

from tulving.domain.errors import DeadlineExceeded

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "tulving_deadline", default=None)


@contextlib.contextmanager
def within(seconds: float | None) -> Iterator[None]:
    """Run the body with a deadline ``seconds`` from now (None: none)."""
    if seconds is None:
        yield
        return
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def check(what: str = "the call") -> None:
    """DeadlineExceeded if the current call's deadline has passed."""
    at = _deadline.get()
    if at is not None and time.monotonic() > at:
        raise DeadlineExceeded(f"{what} ran past its time limit and was cancelled; "
                               "nothing was written")


def remaining() -> float | None:
    """Seconds left before the deadline (None without one)."""
    at = _deadline.get()
    return None if at is None else max(0.0, at - time.monotonic())
