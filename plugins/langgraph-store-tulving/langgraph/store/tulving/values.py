"""Item values as the store keeps them: whatever LangGraph's ``InMemoryStore`` keeps.

A value that is plain JSON and fits is kept as it is in the entry's metadata (``value``),
readable by any door and in exports. Any other value (a ``datetime``, ``bytes``, a
``set``, a NUL byte, or over Tulving's 64 kB metadata limit) is serialized with
LangGraph's own ``JsonPlusSerializer`` (the checkpointers' msgpack encoding, which
brings those types back as they were), base64-encoded, and cut into chunks: the first
in the item's entry (``value_typed``), the rest in part entries of their own, written in
the same transaction, tagged ``lgpart:<value id>`` and carrying the next slice of the
value's text as content (so a fact deep in a big value is found by search too).
"""

from __future__ import annotations

import base64
import json
import math
import uuid
from collections.abc import Mapping
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

#: Largest item (as stored, JSON, UTF-8 bytes) in one entry's metadata; Tulving's limit is
#: 64 kB for all of it.
METADATA_ROOM = 60_000
#: The most characters of the value's text a part entry carries as content.
PART_TEXT = 50_000
#: The metadata field of a part entry.
PART = "langgraph_part"
_SERDE = JsonPlusSerializer()


def json_size(data: Any) -> int | None:
    """``data``'s size in metadata, or None when it is not plain JSON that comes back
    equal (other types), holds a NUL (refused by PostgreSQL's JSONB) or a lone
    surrogate."""
    try:
        raw = json.dumps(data, ensure_ascii=False, sort_keys=True, allow_nan=False)
        if "\\u0000" in raw or json.loads(raw) != data:
            return None
        return len(raw.encode("utf-8"))
    except (TypeError, ValueError, UnicodeEncodeError):
        return None


def text_of(value: Any) -> str:
    """A value as readable text (JSON, other types by ``str``), without NUL bytes."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text.replace("\\u0000", "\\0").encode("utf-8", "replace").decode("utf-8")


def part_tag(value_id: str) -> str:
    return f"lgpart:{value_id}"


def typed(value: Mapping[str, Any], room: int) -> tuple[dict[str, Any], list[str]]:
    """``value`` serialized: the fields the item's own metadata keeps (the first chunk in
    at most ``room`` bytes) and the chunks its part entries keep."""
    kind, data = _SERDE.dumps_typed(dict(value))
    encoded = base64.b64encode(data).decode("ascii")
    first = max(1, min(len(encoded), room))
    rest = encoded[first:]
    chunks = [rest[i:i + METADATA_ROOM] for i in range(0, len(rest), METADATA_ROOM)]
    fields = {"value_typed": encoded[:first], "value_kind": kind,
              "value_parts": len(chunks), "value_id": uuid.uuid4().hex}
    return fields, chunks


def part_entries(fields: Mapping[str, Any], chunks: list[str], value: Any,
                 common: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``store_many`` fields of a value's part entries."""
    text = text_of(value)
    step = min(PART_TEXT, math.ceil(len(text) / len(chunks))) if chunks else 0
    return [{**common,
             "content": text[i * step:(i + 1) * step].strip() or f"[part {i + 1}]",
             "tags": [part_tag(str(fields["value_id"]))],
             "metadata": {PART: {"value_id": fields["value_id"], "part": i, "chunk": c}}}
            for i, c in enumerate(chunks)]


def decode(item: Mapping[str, Any], parts: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The value an item's metadata (and its parts' metadata, any order) keeps."""
    if "value_typed" not in item:
        return dict(item["value"])
    chunks = sorted(parts, key=lambda p: int(p["part"]))
    if [int(p["part"]) for p in chunks] != list(range(int(item.get("value_parts", 0)))):
        raise LookupError(f"a part of the value {item.get('value_id')} is missing")
    encoded = str(item["value_typed"]) + "".join(str(p["chunk"]) for p in chunks)
    value = _SERDE.loads_typed((str(item["value_kind"]), base64.b64decode(encoded)))
    return dict(value)
