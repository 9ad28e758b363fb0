"""The ``extract`` enrichment: what ``remember()``'s turns say, read off them after the
call returned (docs/architecture.md, "Enrichment: write now, enrich later").

``remember(text)`` commits the turns (EPISODEs, findable by full text at once, their
vectors deferred) and queues one ``extract`` task per turn in the same transaction. This
kind runs them in batches: ``prepare`` (outside every lock; the LLM or the no-LLM rules,
the slow part) reads each remember call's turns of the batch together, as the inline path
did; ``commit`` (inside the transaction that finishes the tasks) gives the turns that are
themselves a decision, plan or procedure that type and writes what was read off them,
each naming its turns in ``source_entry_ids`` (restatements reinforce, contradictions
supersede: the one write path), their vectors deferred in turn. A turn deleted or archived
before its task ran is skipped; a kill before the commit leaves the tasks queued, after it
leaves them done: nothing read twice, nothing lost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs

from tulving.application.agent_memory.extraction import (
    PROMOTED_IMPORTANCE,
    SOURCE_TURNS,
    read_off,
)
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.llm_gateway import LLMGateway
from tulving.domain.entry import MemoryEntry
from tulving.domain.extraction_rules import Turn
from tulving.domain.types import MemoryType, SourceType

if TYPE_CHECKING:
    from tulving.application.agent_memory.session_writes import SessionWrites

KIND = "extract"
#: Turns one claim takes (a remember call of 500 turns is eight batches).
BATCH = 64
#: The metadata naming the remember call a turn came from (its turns are read together).
CALL = "remember_call"
#: The metadata naming the subject a remember call was about, when it named one.
SUBJECT = "subject"


#: Whose turns a remember call wrote: (agent_id, user_id, workspace_id). What is read off
#: them is written as theirs, not as the identity of the Memory whose worker runs the task
#: (a view's turns are read off by its root's enricher).
Owner = tuple[str, str | None, str | None]


def owner_of(entry: MemoryEntry) -> Owner:
    return (entry.agent_id, entry.user_id, entry.workspace_id)


@attrs.frozen
class ReadOff:
    """What ``prepare`` read: turns to retype (id -> type), and per session the fields of
    what was read off the turns (``source_entry_ids`` set)."""

    retype: Mapping[str, MemoryType]
    derived: Sequence[tuple[Owner, str | None, dict[str, Any]]]


def turn_of(entry: MemoryEntry) -> Turn:
    """The ``Turn`` a remembered EPISODE holds (its speaker in metadata, its text after
    the ``speaker:`` label)."""
    speaker = entry.metadata.get("speaker")
    if isinstance(speaker, str) and entry.content.startswith(f"{speaker}: "):
        return Turn(speaker, entry.content[len(speaker) + 2:])
    return Turn(None, entry.content)


class ReadOffTurns:
    kind = KIND
    batch = BATCH

    def __init__(self, ctx: MemoryContext, llm: LLMGateway,
                 writes: Callable[[Owner], SessionWrites]) -> None:
        """``writes``: the write path of the identity that owns the turns, asked for when
        a task runs (composed on first use, so a Memory that never remembers does not
        build it at start)."""
        self._ctx = ctx
        self._llm = llm
        self._writes = writes

    def prepare(self, targets: list[str]) -> ReadOff:
        turns = [e for e in self._ctx.storage.get_many(targets)
                 if e.is_active and e.type is MemoryType.EPISODE]
        calls: dict[tuple[Owner, str | None, str], list[MemoryEntry]] = {}
        for entry in sorted(turns, key=lambda e: (e.metadata.get("turn", 0), e.id)):
            call = str(entry.metadata.get(CALL, entry.id))
            calls.setdefault((owner_of(entry), entry.session_id, call), []).append(entry)
        retype: dict[str, MemoryType] = {}
        derived: list[tuple[Owner, str | None, dict[str, Any]]] = []
        for (owner, session_id, _call), entries in calls.items():
            first = entries[0]
            subject = first.metadata.get(SUBJECT)
            promoted, fields = read_off(
                self._llm, [turn_of(e) for e in entries],
                subject=subject if isinstance(subject, str) and subject else (
                    owner[1] or "user"),
                source_type=SourceType.parse(first.source_type.value),
                valid_from=_when(first))
            retype.update({entries[i].id: kind for i, kind in promoted.items()})
            for item in fields:
                item["source_entry_ids"] = [entries[i].id for i in item.pop(SOURCE_TURNS)]
                derived.append((owner, session_id, item))
        return ReadOff(retype, derived)

    def commit(self, targets: list[str], prepared: ReadOff) -> None:
        done = set(targets)
        retype = {i: (k, PROMOTED_IMPORTANCE) for i, k in prepared.retype.items() if i in done}
        if retype:
            root = self._ctx.identity
            self._writes((root.agent_id, root.user_id, root.workspace_id)).writer.retype(
                retype, "remember")
        by_session: dict[tuple[Owner, str | None], list[dict[str, Any]]] = {}
        for owner, session_id, item in prepared.derived:
            if set(item["source_entry_ids"]) <= done:
                by_session.setdefault((owner, session_id), []).append(dict(item))
        for (owner, session_id), batch in by_session.items():
            self._writes(owner).write(batch, "remember", session_id=session_id,
                                      defer_vectors=True)

    def after_commit(self, targets: list[str]) -> None:
        return None


def _when(entry: MemoryEntry) -> datetime | None:
    """The event time a remember call gave (the turns carry it as ``valid_from``)."""
    return entry.valid_from
