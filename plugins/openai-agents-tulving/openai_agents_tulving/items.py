"""Conversation items (the SDK's Responses-format input items) as Tulving episodes.

An item is kept verbatim (as JSON) beside a readable text that search and curation see:
``user: ...`` for a message, ``tool call name(arguments)`` for a function call,
``tool output: ...`` for its result, the summary of a reasoning item. The verbatim copy
goes in the entry's metadata while it fits Tulving's 64 kB metadata limit; a larger item
(a long tool output) is kept as the entry's content itself, up to Tulving's 100,000
characters; beyond that the item cannot be kept and ``add_items`` refuses it (nothing of
the call is written).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tulving import ContentError, MemoryEntry

META = "openai_agents"
#: Largest item JSON (UTF-8 bytes) kept in metadata; Tulving's limit is 64 kB for all of it.
METADATA_ROOM = 60_000
#: Tulving's content limit, in characters.
MAX_CONTENT = 100_000
#: How much of a long item the readable text keeps.
TEXT_ROOM = 4_000


def render(item: Mapping[str, Any]) -> str:
    """The readable text of one item (never empty)."""
    kind = item.get("type")
    role = item.get("role")
    if role is not None and kind in (None, "message"):
        text = _text(item.get("content"))
        return f"{role}: {text}" if text else f"{role}: [no text]"
    if kind == "function_call":
        return f"tool call {item.get('name', '?')}({item.get('arguments', '')})"
    if kind == "function_call_output":
        return f"tool output: {_text(item.get('output')) or '[empty]'}"
    if kind == "reasoning":
        return f"reasoning: {_text(item.get('summary'))}" if item.get("summary") \
            else "[reasoning]"
    return f"[{kind or 'item'}]"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping):
                piece = part.get("text") or part.get("refusal")
                if isinstance(piece, str):
                    parts.append(piece)
                elif part.get("type"):
                    parts.append(f"[{part['type']}]")
            elif isinstance(part, str):
                parts.append(part)
        return " ".join(parts)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def entry_fields(item: Mapping[str, Any], session_id: str, tag: str) -> dict[str, Any]:
    """The ``store_many`` fields that keep ``item``."""
    if not isinstance(item, Mapping):
        raise ContentError(f"a session item must be a mapping, got {type(item).__name__}")
    raw = json.dumps(item, ensure_ascii=False, sort_keys=True)
    text = render(item)
    if len(text) > TEXT_ROOM:
        text = text[:TEXT_ROOM] + " …"
    meta: dict[str, Any] = {"session_id": session_id}
    if len(raw.encode("utf-8")) <= METADATA_ROOM:
        meta["item"] = json.loads(raw)
        content = text
    elif len(raw) <= MAX_CONTENT:
        meta["item_in_content"] = True
        content = raw
    else:
        raise ContentError(
            f"a session item of {len(raw):,} characters as JSON is over Tulving's "
            f"{MAX_CONTENT:,}-character limit for one memory")
    return {"content": content, "type": "EPISODE", "tags": [tag], "metadata": {META: meta},
            "source_type": "conversation", "dedup": False}


def item_of(entry: MemoryEntry) -> dict[str, Any] | None:
    """The item an entry keeps (None for an entry this session did not write)."""
    meta = (entry.metadata or {}).get(META)
    if not isinstance(meta, Mapping):
        return None
    if meta.get("item_in_content"):
        return dict(json.loads(entry.content))
    item = meta.get("item")
    return dict(item) if isinstance(item, Mapping) else None
