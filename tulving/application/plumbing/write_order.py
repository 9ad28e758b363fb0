"""The one lock order of a writing transaction (DESIGN.md, "The seams").

A write of this process takes, in this order: the Memory's lock (threads of one process,
views included), the store's transaction, the tenant's write lock in the store (many
processes: a PostgreSQL advisory lock, the same that chains the tenant's audit log), then
the key locks and entry rows the storage takes in sorted order. Taking the tenant lock
first means writers of one tenant never hold a row another one waits for while waiting
for the audit lock that one holds, and a write decides (dedup, supersede, conflict flags)
from what the last writer committed, not from a read made before it (or, on a store with
``WriteMarks``, from a read made before it and checked under the lock against what was
written since: ``commit_at_once``).
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from tulving.application.plumbing import deadline
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.telemetry import note_write_lock, write_lock
from tulving.ports.storage import PlannedCommit

T = TypeVar("T")
#: How deep in nested writing transactions this thread is (0: outside any).
_depth: contextvars.ContextVar[int] = contextvars.ContextVar("tulving_write_depth", default=0)
#: What runs once the outermost writing transaction of this thread has committed.
_after: contextvars.ContextVar[list[Callable[[], None]] | None] = contextvars.ContextVar(
    "tulving_after_commit", default=None)


def inside_writing() -> bool:
    """Whether this thread is inside a writing transaction (an enrichment's commit that
    writes entries: they join it rather than commit on their own)."""
    return _depth.get() > 0


def after_commit(action: Callable[[], None]) -> None:
    """Run ``action`` once the outermost writing transaction of this thread commits (at
    once outside one; never if it rolls back). Why: a background worker woken inside the
    transaction would look for the tasks it queued before they are visible."""
    pending = _after.get()
    if pending is None:
        action()
    else:
        pending.append(action)


@contextmanager
def writing(ctx: MemoryContext) -> Iterator[None]:
    """A transaction of ``ctx``'s store holding its tenant's write lock, taken after the
    Memory's lock (``ctx.serial``): every write path of the application goes through
    here, so none can take them in another order or skip the first (nested calls join
    the outer transaction; both locks are re-entrant). ``write_lock`` times the wait for
    the tenant's lock and its hold for the server's metrics."""
    depth = _depth.get()
    token = _depth.set(depth + 1)
    pending: list[Callable[[], None]] = []
    queued = _after.set(pending) if depth == 0 else None
    try:
        with ctx.serial, write_lock() as lock, ctx.storage.transaction():
            ctx.storage.lock_tenant_writes(ctx.identity.tenant)
            lock.acquired()
            yield
            # A call with a deadline (a server's --timeout) may pass it while it writes (a
            # long batch; a remember's turns and what was read off them): the outermost
            # transaction is its last safe point (raising here rolls it all back).
            if depth == 0:
                deadline.committing("the write")
    finally:
        _depth.reset(token)
        if queued is not None:
            _after.reset(queued)
    for action in pending:  # committed (an exception above skips this)
        action()


def commit_at_once(ctx: MemoryContext, commit: Callable[[], T]) -> T:
    """The same order in one storage call (``WriteMarks.commit_planned``): a write planned
    before the lock is committed by a transaction that takes the tenant's write lock,
    checks the plan and writes, in one round trip, holding nothing else before it (not
    the Memory's lock either: no index of this process has to follow it). ``ctx`` is
    the writer's. The lock's hold is the one the store measured (``PlannedCommit.held``);
    its wait, the rest of the call, round trip included."""
    deadline.committing("the write")
    began = time.perf_counter()
    result = commit()
    if isinstance(result, PlannedCommit):
        held = max(0.0, float(result.held))
        note_write_lock(max(0.0, time.perf_counter() - began - held), held)
    return result
