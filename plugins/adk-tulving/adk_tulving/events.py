"""ADK events and memories as Tulving entries, and back.

An event with text becomes one EPISODE (several, for a text past Tulving's content
limit: parts of one event, read back whole). Its content is the event's text made
searchable the way ADK's own memory services match words: NFC-normalised, and with a
space where a Latin run meets another script (``私はPythonを使う`` is found by
``Python``); the text exactly as the event had it is kept in the metadata when that
differs, so what a search returns is the event's own text. Parts that are not text
(function calls, inline data) are not kept: memory answers with text.
"""

from __future__ import annotations

import itertools
import json
import math
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry as AdkMemory
from google.genai import types

from tulving import MemoryEntry, ValidationError

#: Metadata field of every entry this package writes.
META = "adk"
#: The most characters of text one entry carries (Tulving keeps at most 100,000).
PART = 40_000


def text_of(content: types.Content | None) -> str:
    """The text parts of ``content``, joined by a space (as ADK's services join them)."""
    if content is None or not content.parts:
        return ""
    return " ".join(p.text for p in content.parts if p.text)


def searchable(text: str) -> str:
    """``text`` as Tulving indexes it: NFC, Latin runs apart from other scripts, no NUL."""
    text = unicodedata.normalize("NFC", text).replace("\x00", " ")
    joined = ""
    previous = 2
    for script, group in itertools.groupby(text, _script):
        if {previous, script} == {0, 1}:          # a Latin run meets another script
            joined += " "
        joined += "".join(group)
        previous = script
    return joined.encode("utf-8", "replace").decode("utf-8")


def _script(ch: str) -> int:
    """0 for a Latin letter or digit, 1 for another letter, 2 for the rest."""
    if ch.isascii():
        return 0 if ch.isalnum() or ch == "_" else 2
    if not ch.isalnum():
        return 2
    return 0 if unicodedata.name(ch, "").startswith("LATIN") else 1


def event_entries(event: Event, key: str, session_id: str | None,
                  custom_metadata: Mapping[str, object] | None,
                  common: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``store_many`` fields of an event's entries (none for an event without text)."""
    text = text_of(event.content)
    if not text.strip():
        return []
    info: dict[str, Any] = {
        "kind": "event", "session_id": session_id, "event_id": event.id,
        "author": event.author, "role": event.content.role if event.content else None,
        "timestamp": event.timestamp, "invocation_id": event.invocation_id or None}
    if custom_metadata:
        info["custom_metadata"] = _json(custom_metadata)
    return _entries(text, key, info, common)


def memory_entries(memory: AdkMemory, key: str | None,
                   custom_metadata: Mapping[str, object] | None,
                   common: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``store_many`` fields of an explicit memory (``add_memory``)."""
    text = text_of(memory.content)
    if not text.strip():
        raise ValidationError("a memory needs text in its content parts")
    info: dict[str, Any] = {
        "kind": "memory", "memory_id": memory.id, "author": memory.author,
        "role": memory.content.role, "timestamp": memory.timestamp,
        "custom_metadata": _json({**memory.custom_metadata, **(custom_metadata or {})})}
    return _entries(text, key, info, common)


def _entries(text: str, key: str | None, info: dict[str, Any],
             common: Mapping[str, Any]) -> list[dict[str, Any]]:
    count = max(1, math.ceil(len(text) / PART))
    entries = []
    for i in range(count):
        chunk = text[i * PART:(i + 1) * PART]
        content = searchable(chunk).strip() or f"[part {i + 1}]"
        meta = {**info, "part": i, "parts": count}
        if content != chunk:           # a lone surrogate is not text: it cannot be kept
            meta["text"] = chunk.encode("utf-8", "replace").decode("utf-8")
        part_key = key if key is None or i == 0 else f"{key}/{i}"
        entries.append({**common, "content": content, "key": part_key,
                        "metadata": {META: meta}})
    return entries


def original_text(entry: MemoryEntry) -> str:
    """The text the entry was written from (the event's own, not the indexed form)."""
    meta = (entry.metadata or {}).get(META) or {}
    return str(meta.get("text", entry.content))


def to_adk(entry: MemoryEntry, parts: Sequence[MemoryEntry], key: str) -> AdkMemory:
    """An ADK ``MemoryEntry`` for a Tulving entry (an event's head entry with its other
    parts, in order), or for any other memory of the user."""
    meta = (entry.metadata or {}).get(META) or {}
    text = "".join(original_text(e) for e in [entry, *parts])
    role = meta.get("role") or ("model" if meta.get("author") not in (None, "user")
                                else "user")
    stamp = meta.get("timestamp")
    when = (datetime.fromtimestamp(float(stamp), UTC).isoformat()
            if isinstance(stamp, int | float) else stamp if isinstance(stamp, str)
            else entry.created_at.isoformat())
    custom = meta.get("custom_metadata")
    return AdkMemory(
        id=key, author=meta.get("author") or (None if meta else entry.agent_id),
        timestamp=when, custom_metadata=dict(custom) if isinstance(custom, Mapping) else {},
        content=types.Content(role=role, parts=[types.Part(text=text)]))


def _json(data: Mapping[str, object]) -> dict[str, Any]:
    """``custom_metadata`` as the entry keeps it: plain JSON, or a typed error."""
    try:
        raw = json.dumps(dict(data), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"custom_metadata must be plain JSON: {exc}") from None
    loaded: dict[str, Any] = json.loads(raw)
    return loaded

