"""Conversation items (the SDK's Responses-format input items) as Tulving episodes.

An item is kept verbatim beside a readable text that search and curation see: ``user:
...`` for a message, ``tool call name(arguments)`` for a function call, ``tool output:
...`` for its result, the summary of a reasoning item. Whatever a tool or a user produced
is kept, because the SDK adds a run's items at its very end and a refusal there would
lose the answer after the model and the tools ran:

- an item that fits Tulving's 64 kB metadata limit, and holds no NUL and no lone
  surrogate, is kept as it is in the entry's metadata (``item``);
- any other item is kept as its JSON text with every non-ASCII character escaped
  (``item_json``: bytes-safe, so NUL and lone surrogates survive SQLite, PostgreSQL's
  JSONB and exports), cut into parts of at most ``METADATA_ROOM`` bytes when it is
  longer; each part is an entry of its own, written in the same transaction, whose
  content carries the next slice of the item's readable text (so a fact deep in a long
  tool output is found by search too).

The readable text never holds a NUL (Tulving refuses one in content): it shows ``\\0``.

Tool calls and tool outputs (``function_call``, ``function_call_output`` and the SDK's
other ``*_call`` / ``*_output`` items) also carry Tulving's tool-item tag: the session
replays them, but ``search``, ``curate`` and the briefing leave them out unless asked
(``tags=["tool-item"]``), so a JSON tool output does not crowd out what the user said.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tulving import TOOL_ITEM_TAG, ContentError, MemoryEntry

META = "openai_agents"
#: Largest item JSON (UTF-8 bytes, as stored) in one entry's metadata; Tulving's limit
#: is 64 kB for all of it.
METADATA_ROOM = 60_000
#: How much of an item's readable text the first entry's content keeps.
TEXT_ROOM = 4_000


def is_tool_item(item: Mapping[str, Any]) -> bool:
    """A tool call or a tool's output (any of the SDK's hosted and local tool items)."""
    kind = item.get("type")
    return isinstance(kind, str) and (kind.endswith("_call") or kind.endswith("_output")
                                      or kind.startswith("mcp_"))


def render(item: Mapping[str, Any]) -> str:
    """The readable text of one item (never empty, never with a NUL)."""
    kind = item.get("type")
    role = item.get("role")
    if role is not None and kind in (None, "message"):
        text = _text(item.get("content"))
        shown = f"{role}: {text}" if text else f"{role}: [no text]"
    elif kind == "function_call":
        shown = f"tool call {item.get('name', '?')}({item.get('arguments', '')})"
    elif kind == "function_call_output":
        shown = f"tool output: {_text(item.get('output')) or '[empty]'}"
    elif kind == "reasoning":
        shown = (f"reasoning: {_text(item.get('summary'))}" if item.get("summary")
                 else "[reasoning]")
    else:
        shown = f"[{kind or 'item'}]"
    return _printable(shown)


def _printable(text: str) -> str:
    """Text Tulving accepts as content: NUL shown as ``\\0``, lone surrogates replaced."""
    return text.replace("\x00", "\\0").encode("utf-8", "replace").decode("utf-8")


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
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


def _verbatim(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """The item as metadata can hold it as it is, or None (too big, NUL, bad Unicode)."""
    raw = json.dumps(item, ensure_ascii=False, sort_keys=True)
    if "\\u0000" in raw:
        return None
    try:
        size = len(raw.encode("utf-8"))
    except UnicodeEncodeError:           # a lone surrogate
        return None
    return dict(json.loads(raw)) if size <= METADATA_ROOM else None


def _chunks(text: str) -> list[str]:
    """``text`` (ASCII JSON) cut so that each piece, itself JSON-encoded in metadata
    (where ``\\`` and ``"`` double), takes at most ``METADATA_ROOM`` bytes."""
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + METADATA_ROOM - 2)
        while True:
            piece = text[start:end]
            size = len(piece) + piece.count("\\") + piece.count('"') + 2
            if size <= METADATA_ROOM:
                break
            end -= max(1, (size - METADATA_ROOM + 1) // 2)
        pieces.append(piece)
        start = end
    return pieces or [""]


def entries_for(item: Mapping[str, Any], session_id: str, tag: str) -> list[dict[str, Any]]:
    """The ``store_many`` fields that keep ``item``: one entry, or a head and its parts."""
    if not isinstance(item, Mapping):
        raise ContentError(f"a session item must be a mapping, got {type(item).__name__}")
    try:
        kept = _verbatim(item)
        text_form = None if kept is not None else json.dumps(item, ensure_ascii=True,
                                                             sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ContentError(f"a session item must be JSON data: {exc}") from exc
    full = render(item)
    head = full if len(full) <= TEXT_ROOM else full[:TEXT_ROOM] + " …"
    tags = [tag, TOOL_ITEM_TAG] if is_tool_item(item) else [tag]
    common = {"type": "EPISODE", "tags": tags, "source_type": "conversation",
              "dedup": False}
    if text_form is None:
        return [{**common, "content": head,
                 "metadata": {META: {"session_id": session_id, "item": kept}}}]
    pieces = _chunks(text_form)
    item_id = uuid.uuid4().hex
    rest = full[TEXT_ROOM:]               # the parts carry the text the head cannot show
    step = math.ceil(len(rest) / (len(pieces) - 1)) if len(pieces) > 1 else 0
    out = []
    for i, piece in enumerate(pieces):
        meta = {"session_id": session_id, "item_json": piece, "item_id": item_id,
                "part": i, "parts": len(pieces)}
        content = head if i == 0 else (rest[(i - 1) * step:i * step].strip()
                                       or f"[part {i + 1} of {len(pieces)}]")
        out.append({**common, "content": content, "metadata": {META: meta}})
    return out


@dataclass(frozen=True)
class KeptItem:
    """One session item and the entries that hold it (its head first); ``item`` is None
    for entries that hold nothing readable (parts missing, bad JSON), which
    ``get_items`` skips and ``pop_item`` removes on its way, as ``SQLiteSession`` does
    with a corrupt row."""

    entries: tuple[MemoryEntry, ...]
    item: dict[str, Any] | None


def _meta(entry: MemoryEntry) -> Mapping[str, Any] | None:
    meta = (entry.metadata or {}).get(META)
    return meta if isinstance(meta, Mapping) else None


def session_of(entry: MemoryEntry) -> str | None:
    """The session id an entry of this package belongs to (None for any other entry)."""
    meta = _meta(entry)
    sid = meta.get("session_id") if meta is not None else None
    return sid if isinstance(sid, str) else None


def _decoded(text: str) -> dict[str, Any] | None:
    try:
        item = json.loads(text)
    except ValueError:
        return None
    return dict(item) if isinstance(item, Mapping) else None


def assemble(entries: Iterable[MemoryEntry]) -> list[KeptItem]:
    """What ``entries`` (one session's, oldest first) keep: one ``KeptItem`` per item,
    in order."""
    slots: list[KeptItem | str] = []
    parts: dict[str, dict[int, tuple[MemoryEntry, Mapping[str, Any]]]] = {}
    for entry in entries:
        meta = _meta(entry)
        if meta is None:
            continue
        if isinstance(meta.get("item"), Mapping):
            slots.append(KeptItem((entry,), dict(meta["item"])))
        elif meta.get("item_in_content"):                 # as version 0.1.0 wrote it
            slots.append(KeptItem((entry,), _decoded(entry.content)))
        elif isinstance(meta.get("item_json"), str) and isinstance(meta.get("item_id"), str):
            if meta["item_id"] not in parts:
                parts[meta["item_id"]] = {}
                slots.append(meta["item_id"])
            parts[meta["item_id"]][int(meta.get("part", 0))] = (entry, meta)
        else:
            slots.append(KeptItem((entry,), None))
    out: list[KeptItem] = []
    for slot in slots:
        if isinstance(slot, KeptItem):
            out.append(slot)
            continue
        group = parts[slot]
        holders = tuple(group[i][0] for i in sorted(group))
        total = next(iter(group.values()))[1].get("parts", 1)
        whole = isinstance(total, int) and sorted(group) == list(range(total))
        text = "".join(str(group[i][1]["item_json"]) for i in sorted(group))
        out.append(KeptItem(holders, _decoded(text) if whole else None))
    return out
