"""Enrichment tasks as data: the work derived from a write that runs after it returns.

A task is ``(kind, target)``: the kind names the work (``vectors``, ``strong``,
``extract``, ...), the target what it applies to (an entry id, or a session id for work
on a group). The rules every store keeps (``ports.storage.EnrichmentTasks``):

- adding a task already queued changes nothing;
- a claim leases free or lapsed tasks of one kind to one owner, oldest first;
- finishing deletes only the tasks the owner still holds, and says which: the caller
  writes the result for exactly those, so a worker whose lease lapsed and was taken over
  writes nothing (never twice);
- releasing gives a lease back; with an error it counts an attempt, and after the last
  attempt the task is parked as failed (kept with its error, claimed no more) until an
  operator retries it.

Why in the domain: :class:`TaskTable` keeps those rules in process memory, for the
in-memory store and for the application's fallback over a store without the capability
(tasks then live as long as the process: documented, and vectors are repaired at the next
start by embedding what has none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import attrs

from tulving.domain.reports import Report

#: How many failed attempts park a task as failed.
GIVE_UP_AFTER = 3


@attrs.frozen
class TaskBacklog(Report):
    """Tasks of one kind: waiting to be claimed, leased to a worker now, and parked as
    failed after their last attempt."""

    pending: int = 0
    running: int = 0
    failed: int = 0

    @property
    def settled(self) -> bool:
        """Nothing of this kind is left to run (failed tasks wait for an operator)."""
        return self.pending == 0 and self.running == 0


@attrs.frozen
class TaskFailure(Report):
    """A task parked as failed: what it was, how often it was tried, and why it failed."""

    kind: str
    target: str
    attempts: int
    error: str
    failed_at: datetime


@attrs.frozen
class EnrichmentReport(Report):
    """The backlog of every kind with tasks (``stats().enrichment``; what
    ``wait_enriched`` returns): empty, or all settled, when everything derived from the
    writes so far has been written."""

    tasks: Mapping[str, TaskBacklog] = attrs.field(factory=dict)
    #: False when the tasks live in process memory only (a store without the capability):
    #: they are lost with the process.
    durable: bool = True

    @property
    def settled(self) -> bool:
        return all(b.settled for b in self.tasks.values())


@attrs.define
class _Task:
    kind: str
    target: str
    created_at: datetime
    seq: int
    claimed_by: str | None = None
    claimed_until: datetime | None = None
    attempts: int = 0
    failed_at: datetime | None = None
    error: str | None = None


class TaskTable:
    """The task rules over a dict, for one process (see the module doc). Not thread-safe
    by itself: its owner holds a lock around each call (the in-memory store's, the
    fallback's)."""

    def __init__(self) -> None:
        self._tasks: dict[tuple[str, str], _Task] = {}
        self._seq = 0

    def copy(self) -> TaskTable:
        """A snapshot to roll back to (the in-memory store's transactions)."""
        other = TaskTable()
        other._tasks = {k: attrs.evolve(t) for k, t in self._tasks.items()}
        other._seq = self._seq
        return other

    def add(self, kind: str, targets: Sequence[str], at: datetime) -> int:
        added = 0
        for target in dict.fromkeys(targets):
            if (kind, target) not in self._tasks:
                self._seq += 1
                self._tasks[(kind, target)] = _Task(kind, target, at, self._seq)
                added += 1
        return added

    def claim(self, kind: str, owner: str, now: datetime, until: datetime,
              limit: int) -> list[str]:
        free = sorted((t for t in self._tasks.values()
                       if t.kind == kind and t.failed_at is None
                       and (t.claimed_until is None or t.claimed_until < now)),
                      key=lambda t: t.seq)[:max(0, limit)]
        for task in free:
            task.claimed_by, task.claimed_until = owner, until
        return [t.target for t in free]

    def finish(self, kind: str, targets: Sequence[str], owner: str) -> list[str]:
        done = []
        for target in dict.fromkeys(targets):
            task = self._tasks.get((kind, target))
            if task is not None and task.claimed_by == owner and task.failed_at is None:
                del self._tasks[(kind, target)]
                done.append(target)
        return done

    def release(self, kind: str, targets: Sequence[str], owner: str, at: datetime,
                error: str | None, give_up_after: int) -> None:
        for target in dict.fromkeys(targets):
            task = self._tasks.get((kind, target))
            if task is None or task.claimed_by != owner or task.failed_at is not None:
                continue
            task.claimed_by = task.claimed_until = None
            if error is not None:
                task.attempts += 1
                task.error = error
                if task.attempts >= give_up_after:
                    task.failed_at = at

    def clear_leases(self) -> int:
        held = [t for t in self._tasks.values() if t.claimed_by is not None]
        for task in held:
            task.claimed_by = task.claimed_until = None
        return len(held)

    def backlog(self, now: datetime) -> dict[str, TaskBacklog]:
        counts: dict[str, list[int]] = {}
        for task in self._tasks.values():
            row = counts.setdefault(task.kind, [0, 0, 0])
            if task.failed_at is not None:
                row[2] += 1
            elif task.claimed_until is not None and task.claimed_until >= now:
                row[1] += 1
            else:
                row[0] += 1
        return {kind: TaskBacklog(*row) for kind, row in sorted(counts.items())}

    def failures(self, limit: int) -> list[TaskFailure]:
        failed = sorted((t for t in self._tasks.values() if t.failed_at is not None),
                        key=lambda t: t.seq)[:max(0, limit)]
        return [TaskFailure(t.kind, t.target, t.attempts, t.error or "", t.failed_at)
                for t in failed if t.failed_at is not None]

    def retry(self, kind: str | None) -> int:
        count = 0
        for task in self._tasks.values():
            if task.failed_at is not None and kind in (None, task.kind):
                task.failed_at = task.error = None
                task.attempts = 0
                count += 1
        return count


def backlog_of(rows: Sequence[tuple[str, int, int, int]]) -> Mapping[str, TaskBacklog]:
    """``(kind, pending, running, failed)`` rows of a store's grouped count, as reports."""
    return {kind: TaskBacklog(int(p), int(r), int(f)) for kind, p, r, f in sorted(rows)}
