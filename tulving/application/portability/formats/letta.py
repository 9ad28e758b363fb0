"""Letta agent files (``.af``) and archival passages into entries.

What is read: the agent file Letta exports (``agents``, each naming its memory blocks by
``block_ids``, and ``blocks`` with ``label``, ``value``, ``limit``, ``description``,
``read_only``, ``metadata``), the older single-agent form (``core_memory`` blocks inline),
and archival passages (``text``, ``tags``, ``created_at``, ``metadata``) where a file carries
them: under ``passages`` at the top or in an agent, or a whole file that is Letta's list of
passages (the agent file itself has none: Letta exports them apart).

Why this mapping: a memory block is always in the agent's context, which is what a pinned
entry is in Tulving's curation. ``human`` is what the agent knows about its user: a pinned
FACT about ``user`` (it shows in ``profile()``), shared by every agent of the user;
``persona`` and the other blocks are the agent's own pinned FACTs, keyed
``letta/<agent>/<label>`` so a second import of an edited file updates them. A passage is a
long-term memory, searched not shown: a FACT. Messages, tools, the system prompt and model
settings are an agent's configuration and conversation, not its memory: they are counted
and left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tulving.application.portability.formats.translation import (
    Notes,
    Placement,
    Translation,
    foreign_text,
    foreign_time,
    records,
    restored,
    source_id,
    strings,
)
from tulving.domain.errors import ForeignFormatError
from tulving.domain.types import MemoryType, Scope

#: Block fields kept in ``metadata["letta"]`` (so an export writes the block back).
_BLOCK_FIELDS = ("label", "limit", "description", "read_only", "template_name",
                 "is_template", "preserve_on_migration", "metadata")
_CONFIGURATION = {
    "messages": "conversation history, not memory (import turns with remember() if wanted)",
    "tools": "tool definitions (code and schemas) are configuration, not memory",
    "tool_rules": "tool rules are configuration, not memory",
    "system": "the system prompt is configuration, not memory",
}
_FILE_PARTS = ("groups", "files", "sources", "tools", "mcp_servers")


def read_letta(document: object, place: Placement) -> Translation:
    notes = Notes("letta")
    if isinstance(document, list):
        _passages(place, notes, document, "", None)
        return notes.finish()
    if not isinstance(document, Mapping):
        raise ForeignFormatError("letta: not a Letta agent file: expected a JSON object")
    if "agents" in document:
        _agent_file(place, notes, document)
    elif "core_memory" in document:
        _legacy_agent(place, notes, document)
    elif "passages" in document:
        pass
    else:
        raise ForeignFormatError(
            "letta: not a Letta agent file: expected agents and blocks (or core_memory, "
            "or passages)")
    if "passages" in document:
        _passages(place, notes, document["passages"], "passages", None)
    return notes.finish()


def _agent_file(place: Placement, notes: Notes, document: Mapping[str, Any]) -> None:
    blocks = {str(b.get("id")): b for b in records(document, "blocks", "", notes)}
    used: set[str] = set()
    for i, agent in enumerate(records(document, "agents", "", notes)):
        at = f"agents[{i}]"
        name = _agent_name(agent)
        ids = agent.get("block_ids") or []
        if not isinstance(ids, list):
            notes.problem(f"{at}.block_ids", "must be a list")
            continue
        for block_id in ids:
            block = blocks.get(str(block_id))
            if block is None:
                notes.problem(f"{at}.block_ids", f"names a block the file lacks: "
                              f"{str(block_id)[:40]!r}")
                continue
            used.add(str(block_id))
            _block(place, notes, block, f"blocks[{str(block_id)[:40]}]", name)
        for j, inline in enumerate(records(agent, "memory_blocks", f"{at}.", notes)):
            _block(place, notes, inline, f"{at}.memory_blocks[{j}]", name)
        _configuration(notes, agent)
        if "passages" in agent:
            _passages(place, notes, agent["passages"], f"{at}.passages", name)
    for block_id, block in blocks.items():
        if block_id not in used:
            _block(place, notes, block, f"blocks[{block_id[:40]}]", None)
    for part in _FILE_PARTS:
        value = document.get(part)
        if isinstance(value, list) and value:
            notes.drop(part.replace("_", " "), "agent configuration, not memory", len(value))


def _legacy_agent(place: Placement, notes: Notes, agent: Mapping[str, Any]) -> None:
    name = _agent_name(agent)
    for i, block in enumerate(records(agent, "core_memory", "", notes)):
        _block(place, notes, block, f"core_memory[{i}]", name)
    _configuration(notes, agent)


def _agent_name(agent: Mapping[str, Any]) -> str:
    name = agent.get("name")
    return name if isinstance(name, str) and name.strip() else "agent"


def _configuration(notes: Notes, agent: Mapping[str, Any]) -> None:
    for part, why in _CONFIGURATION.items():
        value = agent.get(part)
        if value:
            notes.drop(f"letta {part.replace('_', ' ')}", why,
                       len(value) if isinstance(value, list) else 1)


def _slug(text: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._:-]+", "-", text.strip()).strip("-._:")
    return cleaned[:80] or "x"


def _block(place: Placement, notes: Notes, block: Mapping[str, Any], at: str,
           agent: str | None) -> None:
    label = block.get("label")
    if not isinstance(label, str) or not label.strip():
        notes.problem(f"{at}.label", "a block needs a label")
        return
    text = foreign_text(block.get("value"), f"{at}.value", notes)
    if text is None:
        notes.drop("letta block", "empty (no text to keep)")
        return
    label = label.strip()
    human = label.casefold() == "human"
    letta = {name: block[name] for name in _BLOCK_FIELDS if block.get(name) not in (None, {})}
    if agent is not None:
        letta["agent"] = agent
    user_meta = block.get("metadata")
    saved = user_meta.get("tulving.entry") if isinstance(user_meta, Mapping) else None
    kind = ("letta human block" if human else
            "letta persona block" if label == "persona" else "letta block")
    if isinstance(saved, Mapping):  # written by Tulving's exporter: the entry as it was
        kept = saved.get("metadata")
        entry = restored(saved, text, kept if isinstance(kept, Mapping) else {}, place,
                         f"{at}.metadata.tulving.entry", notes)
        if entry is not None:
            notes.add(kind, "the pinned entries they were exported from", entry)
        return
    scope = Scope.PERSONAL if human else Scope.AGENT
    key = f"letta/{_slug(label)}" if human or agent is None else \
        f"letta/{_slug(agent)}/{_slug(label)}"
    entry = place.entry(
        f"block\x1f{key}", text, MemoryType.FACT, at, notes, scope=scope,
        created=foreign_time(block.get("created_at"), f"{at}.created_at", notes),
        updated=foreign_time(block.get("updated_at"), f"{at}.updated_at", notes),
        key=key, pinned=True, metadata={"letta": letta},
        entity="user" if human else (agent or "agent")[:200], attribute=label[:200])
    if entry is not None:
        into = ("pinned FACT about the user (personal scope; profile())" if human
                else "pinned FACT entries of the agent, key letta/<agent>/<label>")
        notes.add(kind, into, entry, timed=block.get("created_at") is not None)


def _passages(place: Placement, notes: Notes, value: object, at: str,
              agent: str | None) -> None:
    items = records({"p": value}, "p", at, notes)
    for i, passage in enumerate(items):
        here = f"{at}[{i}]"
        pid = source_id(passage.get("id"), f"{here}.id", notes)
        text = foreign_text(passage.get("text", passage.get("content")), f"{here}.text",
                            notes)
        created = foreign_time(passage.get("created_at"), f"{here}.created_at", notes)
        updated = foreign_time(passage.get("updated_at"), f"{here}.updated_at", notes)
        tags = strings(passage.get("tags"), f"{here}.tags", notes)
        if pid is None or tags is None:
            continue
        if text is None:
            notes.drop("letta passage", "no text")
            continue
        meta = passage.get("metadata") or {}
        if not isinstance(meta, Mapping):
            notes.problem(f"{here}.metadata", "must be an object")
            continue
        letta = {"id": pid, **({"agent": agent} if agent else {}),
                 **{k: passage[k] for k in ("archive_id", "source_id", "file_name")
                    if passage.get(k)}}
        entry = place.entry(f"passage\x1f{pid}", text, MemoryType.FACT, here, notes,
                            created=created, updated=updated, tags=tuple(tags),
                            metadata={**dict(meta), "letta": letta})
        if entry is not None:
            notes.add("letta passage", "FACT entries (archival memory, searched)", entry,
                      timed=created is not None)
