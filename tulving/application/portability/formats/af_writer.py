"""Entries as a Letta agent file (``.af``): the pinned ones as memory blocks.

Why only the pinned ones: a Letta memory block is in the agent's context at every step,
as a pinned entry is in every briefing; what is searched rather than shown has no place in
an agent file (Letta keeps archival passages outside it). Each block keeps the entry's other
fields in its ``metadata["tulving.entry"]``, so an import of the file gives the entries
back as they were; Letta itself reads the label, value, limit and description.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from tulving.application.portability.entry_codec import entry_to_record
from tulving.domain.entry import MemoryEntry

#: Letta's default character limit of a block; a longer value raises it to fit.
DEFAULT_LIMIT = 5000


def blocks_of(entries: Iterable[MemoryEntry]) -> list[MemoryEntry]:
    """The entries an agent file holds: active and pinned."""
    return [e for e in entries if e.pinned and e.archived_at is None]


def _label(entry: MemoryEntry, taken: set[str]) -> str:
    letta = entry.metadata.get("letta")
    label = letta.get("label") if isinstance(letta, Mapping) else None
    if not isinstance(label, str) or not label:
        tail = (entry.key or "").rsplit("/", 1)[-1]
        label = re.sub(r"[^A-Za-z0-9_]+", "_", tail).strip("_") or entry.type.value.lower()
    name, n = label, 2
    while name in taken:
        name, n = f"{label}_{n}", n + 1
    taken.add(name)
    return name


def write_af(entries: Iterable[MemoryEntry], agent_name: str, created_at: datetime
             ) -> dict[str, Any]:
    """An agent file (Letta's ``AgentFileSchema``) of one agent whose blocks are
    ``entries``."""
    blocks: list[dict[str, Any]] = []
    taken: set[str] = set()
    for n, entry in enumerate(entries):
        record = entry_to_record(entry)
        value = record.pop("content")
        letta = dict(entry.metadata.get("letta") or {}) \
            if isinstance(entry.metadata.get("letta"), Mapping) else {}
        limit = letta.get("limit")
        limit = max(limit if isinstance(limit, int) and not isinstance(limit, bool)
                    else DEFAULT_LIMIT, len(value))
        blocks.append({
            "id": f"block-{n}", "label": _label(entry, taken), "value": value,
            "limit": limit,
            "description": letta.get("description") or f"{entry.type.value.lower()} kept "
                           f"by Tulving{' under ' + entry.key if entry.key else ''}",
            "read_only": bool(letta.get("read_only", False)),
            "is_template": False, "template_name": None, "preserve_on_migration": False,
            "metadata": {"tulving.entry": record}})
    agent = {
        "id": "agent-0", "name": agent_name, "agent_type": "letta_v1_agent",
        "description": "Exported from Tulving: its pinned memories as memory blocks.",
        "system": "", "block_ids": [b["id"] for b in blocks], "memory_blocks": [],
        "tool_ids": [], "tools": [], "source_ids": [], "tool_rules": [], "tags": [],
        "messages": [], "in_context_message_ids": [], "files_agents": [], "group_ids": [],
        "metadata": None, "include_base_tools": False, "include_base_tool_rules": False,
    }
    return {"agents": [agent], "groups": [], "blocks": blocks, "files": [], "sources": [],
            "tools": [], "mcp_servers": [], "metadata": {"exported_by": "tulving"},
            "created_at": created_at.isoformat()}
