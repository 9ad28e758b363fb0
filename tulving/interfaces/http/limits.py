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
  so no request holds another past that other's own limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from tulving.application.plumbing import deadline
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

async def bounded(fn: Callable[..., T], *args: Any, timeout: float,
                  limiter: anyio.CapacityLimiter) -> T:
    """``fn(*args)`` on a worker thread (``limiter`` of them at once) under ``timeout``:
    503 when it passes, and the call itself cancelled at its next safe point."""

    def work() -> T:
        with deadline.within(timeout):
            return fn(*args)

    try:
        with anyio.fail_after(timeout):
            return await anyio.to_thread.run_sync(work, limiter=limiter,
                                                  abandon_on_cancel=True)
    except TimeoutError as exc:
        raise HTTPError(503, "Timeout",
                        f"the call took over {timeout:g} s (serve --timeout); it is cancelled "
                        "at its next safe point, and a write not committed by then is not "
                        "made") from exc
