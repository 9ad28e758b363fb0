"""Mem0 (mem0ai 2.x) exports into entries.

What is read: the answer of ``Memory.get_all`` (``{"results": [...]}``; a bare list of
memories too), each memory ``id``, ``memory`` (the text), ``hash``, ``metadata``,
``created_at``/``updated_at`` and the promoted ``user_id``, ``agent_id``, ``run_id``,
``actor_id``, ``role``; and, where present, the events of ``Memory.history`` (``id``,
``memory_id``, ``old_memory``, ``new_memory``, ``event`` ADD/UPDATE/DELETE, times), under
``history`` at the top or in each memory.

Why this mapping: a Mem0 memory is a fact about a user (or, with ``agent_id``, something an
agent keeps); its history is a supersede chain. So each memory becomes a FACT (PROCEDURE for
Mem0's procedural memories) keyed ``mem0/<id>``, in the personal scope (every agent of the
user) or, when an agent wrote it, the importing agent's own scope; each UPDATE leaves the
previous text as an archived, linked version (``history("mem0/<id>")`` shows them), and a
DELETE archives the memory as forgotten. The Mem0 ids, hash and the run, actor and role
go into ``metadata["mem0"]``. Mem0's user becomes this memory's user: records of another
user need ``remap_identity``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from tulving.application.portability.formats.translation import (
    Notes,
    Placement,
    Translation,
    archived,
    foreign_text,
    foreign_time,
    records,
    source_id,
)
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ForeignFormatError
from tulving.domain.types import ArchiveReason, MemoryType, Scope

_PROMOTED = ("user_id", "agent_id", "run_id", "actor_id", "role", "attributed_to",
             "expiration_date")
_EVENTS = ("ADD", "UPDATE", "DELETE", "NONE")


def read_mem0(document: object, place: Placement) -> Translation:
    notes = Notes("mem0")
    memories, where = _memories(document, notes)
    history = records(document, "history", "", notes) if isinstance(document, Mapping) else []
    events: dict[str, list[Mapping[str, Any]]] = {}
    for item in history:
        events.setdefault(str(item.get("memory_id")), []).append(item)
    if isinstance(document, Mapping) and document.get("relations"):
        count = len(document["relations"]) if isinstance(document["relations"], list) else 1
        notes.drop("mem0 graph relation", "graph relations (entity, relationship, entity) are "
                   "not memories in Tulving; the memories they came from are imported", count)
    seen: set[str] = set()
    for i, memory in enumerate(memories):
        at = f"{where}[{i}]"
        mid = source_id(memory.get("id"), f"{at}.id", notes)
        if mid is None:
            continue
        seen.add(mid)
        own = records(memory, "history", f"{at}.", notes)
        _memory(place, notes, mid, memory, [*events.get(mid, []), *own], at)
    for mid, chain in events.items():
        if mid not in seen:  # deleted (or past get_all's limit): rebuilt from its history
            _memory(place, notes, mid, None, chain, f"history of memory {mid[:40]}")
    if isinstance(document, Mapping):
        for name in sorted(set(document) - {"results", "memories", "history", "relations"}):
            notes.drop(f"top-level {name!r}", "not part of Mem0's export of memories")
    return notes.finish()


def _memories(document: object, notes: Notes) -> tuple[list[Mapping[str, Any]], str]:
    if isinstance(document, list):
        wrapped = {"results": document}
        return records(wrapped, "results", "", notes), ""
    if isinstance(document, Mapping) and ("results" in document or "memories" in document):
        name = "results" if "results" in document else "memories"
        return records(document, name, "", notes), name
    raise ForeignFormatError(
        "mem0: not a Mem0 export: expected the answer of get_all ({\"results\": [...]}) or a "
        "list of memories")


def _memory(place: Placement, notes: Notes, mid: str, memory: Mapping[str, Any] | None,
            chain: list[Mapping[str, Any]], at: str) -> None:
    fields = dict(memory or {})
    user = fields.get("user_id")
    place.check_user(user, f"memory {mid[:40]}")
    ordered = sorted(chain, key=lambda e: (str(e.get("updated_at") or e.get("created_at")),
                                           _EVENTS.index(e["event"]) if e.get("event")
                                           in _EVENTS else 9))
    versions: list[tuple[str, datetime | None, str]] = []  # (text, since, event id)
    deleted: datetime | None = None
    for j, event in enumerate(ordered):
        here = f"{at} history[{j}]"
        kind = event.get("event")
        if kind not in _EVENTS:
            notes.problem(here, f"unknown event {str(kind)[:20]!r}")
            continue
        when = foreign_time(event.get("updated_at") or event.get("created_at"), here, notes)
        if kind == "DELETE":
            deleted = when or place.now
            continue
        text = foreign_text(event.get("new_memory"), f"{here}.new_memory", notes)
        if text is not None and (not versions or versions[-1][0] != text):
            versions.append((text, when, str(event.get("id") or j)))
    text = foreign_text(fields.get("memory"), f"{at}.memory", notes)
    created = foreign_time(fields.get("created_at"), f"{at}.created_at", notes)
    updated = foreign_time(fields.get("updated_at"), f"{at}.updated_at", notes)
    if text is not None and (not versions or versions[-1][0] != text):
        versions.append((text, updated or created, "current"))
    if not versions:
        notes.drop("mem0 memory", "no text" if memory is not None else
                   "a history without any text")
        return
    agent = fields.get("agent_id")
    scope = Scope.AGENT if agent else Scope.PERSONAL
    kind = (MemoryType.PROCEDURE if (fields.get("metadata") or {}).get("memory_type")
            == "procedural_memory" else MemoryType.FACT) if isinstance(
                fields.get("metadata") or {}, Mapping) else MemoryType.FACT
    into = f"{kind.value} entries ({scope.value} scope), key mem0/<id>"
    extra = {name: fields[name] for name in _PROMOTED if fields.get(name) is not None}
    mem0 = {"id": mid, **({"hash": fields["hash"]} if fields.get("hash") else {}), **extra}
    user_meta = fields.get("metadata")
    if user_meta is not None and not isinstance(user_meta, Mapping):
        notes.problem(f"{at}.metadata", "must be an object or null")
        return
    metadata: dict[str, Any] = {**dict(user_meta or {}), "mem0": mem0}
    first = created or versions[0][1] or place.now
    previous: MemoryEntry | None = None
    built: list[MemoryEntry] = []
    for n, (version_text, since, event_id) in enumerate(versions):
        last = n == len(versions) - 1
        start = first if n == 0 else (since or first)
        entry = place.entry(
            mid if last else f"{mid}\x1f{event_id}", version_text, kind, at, notes,
            scope=scope, created=start, updated=(updated if last and updated else start),
            key=f"mem0/{_key_part(mid)}", metadata=metadata)
        if entry is None:
            return
        if previous is not None:
            built[-1] = attrs.evolve(
                archived(previous, entry.created_at, ArchiveReason.SUPERSEDED),
                superseded_by=entry.id, valid_until=entry.valid_from)
            entry = attrs.evolve(entry, supersedes=previous.id)
        built.append(entry)
        previous = entry
    if deleted is not None:
        built[-1] = archived(built[-1], deleted, ArchiveReason.FORGOTTEN)
    timed = created is not None or versions[0][1] is not None
    for entry in built[:-1]:
        notes.add("mem0 history version", "archived versions (superseded), linked", entry,
                  timed=timed)
    if deleted is not None:
        notes.add("mem0 deleted memory", "archived (forgotten) entries: a DELETE archives, "
                  "never erases", built[-1], timed=timed)
    else:
        notes.add("mem0 memory", into, built[-1], timed=timed)


def _key_part(mid: str) -> str:
    """A Mem0 id (a UUID) as a key segment; anything else reduced to the key grammar."""
    cleaned = "".join(c if c.isalnum() or c in "._:-" else "-" for c in mid)
    return (cleaned.lstrip("._:-") or "memory")[:180]
