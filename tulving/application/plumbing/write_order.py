"""The one lock order of a writing transaction (DESIGN.md, "The seams").

A write of this process takes, in this order: the Memory's lock (threads of one process,
views included), the store's transaction, the tenant's write lock in the store (many
processes: a PostgreSQL advisory lock, the same that chains the tenant's audit log), then
the key locks and entry rows the storage takes in sorted order. Taking the tenant lock
first means writers of one tenant never hold a row another one waits for while waiting
for the audit lock that one holds, and a write decides (dedup, supersede, conflict flags)
from what the last writer committed, not from a read made before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.telemetry import write_lock


@contextmanager
def writing(ctx: MemoryContext) -> Iterator[None]:
    """A transaction of ``ctx``'s store holding its tenant's write lock (nested calls join
    the outer transaction; the lock is re-entrant). ``write_lock`` times the wait for
    the lock and its hold for the server's metrics."""
    with write_lock() as lock, ctx.storage.transaction():
        ctx.storage.lock_tenant_writes(ctx.identity.tenant)
        lock.acquired()
        yield
