"""OpenTelemetry memory records (``gen_ai.memory.records``), both ways.

The shape (semantic conventions for GenAI memory, ``MemoryRecords``): a JSON array of
records, each ``content`` (required, any JSON value), ``id``, ``score`` and ``metadata``
(provider-specific, any object). Read from a bare array, from an object holding the
attribute (``{"gen_ai.memory.records": [...]}`` or its JSON string, as a span carries it),
or from an OTLP/JSON trace export (``resourceSpans``): the records of every span that wrote
memory, the later span winning for one id; a search's records are results, not writes.

Why Tulving's own fields go in ``metadata["tulving.entry"]``: the format holds only text,
an id and free metadata, so an export keeps each entry's every other field there and an
import reads them back, which is what lets an export and an import round-trip with nothing
lost. A record without them is another system's: its text becomes a FACT, its metadata is
kept, its score (a search's relevance, not a property of the memory) is left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from tulving.application.portability.entry_codec import entry_to_record
from tulving.application.portability.formats.translation import (
    Notes,
    Placement,
    Translation,
    foreign_text,
    foreign_time,
    restored,
    source_id,
)
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ForeignFormatError
from tulving.domain.types import MemoryType

ATTRIBUTE = "gen_ai.memory.records"
#: Where an exported record keeps the entry's other fields.
ENTRY = "tulving.entry"
_SEARCHES = {"search_memory", "retrieve", "retrieve_memory", "get_memory"}


def write_otel(entries: Iterable[MemoryEntry]) -> list[dict[str, Any]]:
    """The records of ``entries``: ``id``, ``content`` and ``metadata`` (the entry's own
    metadata beside ``tulving.entry``, its other fields)."""
    out: list[dict[str, Any]] = []
    for entry in entries:
        record = entry_to_record(entry)
        content = record.pop("content")
        metadata = record.pop("metadata")
        out.append({"id": entry.id, "content": content,
                    "metadata": {**metadata, ENTRY: record}})
    return out


def read_otel(document: object, place: Placement) -> Translation:
    notes = Notes("otel")
    for at, record in _records(document, notes):
        _record(place, notes, record, at)
    return notes.finish()


def _records(document: object, notes: Notes) -> list[tuple[str, Mapping[str, Any]]]:
    if isinstance(document, Mapping) and "resourceSpans" in document:
        return _from_spans(document, notes)
    value: object = document
    if isinstance(document, Mapping):
        if ATTRIBUTE not in document:
            raise ForeignFormatError(
                "otel: not OpenTelemetry memory records: expected a JSON array of records, "
                f"an object with {ATTRIBUTE!r}, or an OTLP/JSON trace export")
        value = _attribute_value(document[ATTRIBUTE], ATTRIBUTE)
    if not isinstance(value, list):
        raise ForeignFormatError("otel: memory records must be a JSON array")
    out: list[tuple[str, Mapping[str, Any]]] = []
    for i, item in enumerate(value):
        if isinstance(item, Mapping):
            out.append((f"records[{i}]", item))
        else:
            notes.problem(f"records[{i}]", "must be an object")
    return out


def _attribute_value(value: object, where: str) -> object:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError) as exc:
            raise ForeignFormatError(f"otel: {where} is not JSON") from exc
    return value


def _from_spans(document: Mapping[str, Any], notes: Notes
                ) -> list[tuple[str, Mapping[str, Any]]]:
    """Records of the spans that wrote memory, in span end order, the last per id."""
    found: list[tuple[int, str, Mapping[str, Any]]] = []
    searches = 0
    for r, resource in enumerate(_list(document.get("resourceSpans"))):
        for s, scope in enumerate(_list(_get(resource, "scopeSpans"))):
            for k, span in enumerate(_list(_get(scope, "spans"))):
                attributes = {a.get("key"): _any_value(a.get("value"))
                              for a in _list(_get(span, "attributes")) if isinstance(a, Mapping)}
                if ATTRIBUTE not in attributes:
                    continue
                if attributes.get("gen_ai.operation.name") in _SEARCHES:
                    searches += 1
                    continue
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{k}]"
                value = _attribute_value(attributes[ATTRIBUTE], where)
                end = _get(span, "endTimeUnixNano")
                order = int(end) if isinstance(end, str | int) and str(end).isdigit() else 0
                for i, item in enumerate(_list(value)):
                    if isinstance(item, Mapping):
                        found.append((order, f"{where} record {i}", item))
                    else:
                        notes.problem(f"{where} record {i}", "must be an object")
    notes.drop("otel search span", "a search's records are results, not memories written",
               searches)
    found.sort(key=lambda item: item[0])
    latest: dict[object, tuple[str, Mapping[str, Any]]] = {}
    for n, (_order, where, item) in enumerate(found):
        latest[item.get("id") if item.get("id") is not None else ("anonymous", n)] = (where,
                                                                                        item)
    notes.drop("otel record (older span)", "a later span wrote the same id",
               len(found) - len(latest))
    return list(latest.values())


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _get(value: object, name: str) -> object:
    return value.get(name) if isinstance(value, Mapping) else None


def _any_value(value: object) -> object:
    """An OTLP AnyValue as plain JSON (strings, numbers, booleans; arrays of them)."""
    if not isinstance(value, Mapping):
        return None
    for name in ("stringValue", "boolValue", "doubleValue"):
        if name in value:
            return value[name]
    if "intValue" in value:
        return int(value["intValue"]) if str(value["intValue"]).lstrip("-").isdigit() else None
    if "arrayValue" in value:
        return [_any_value(v) for v in _list(_get(value["arrayValue"], "values"))]
    return None


def _record(place: Placement, notes: Notes, record: Mapping[str, Any], at: str) -> None:
    if "content" not in record:
        notes.problem(at, "a memory record needs content")
        return
    metadata = record.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        notes.problem(f"{at}.metadata", "must be an object")
        return
    metadata = dict(metadata or {})
    if record.get("score") is not None:
        notes.drop("otel record score", "a search's relevance, not a property of the memory")
    saved = metadata.pop(ENTRY, None)
    content = record["content"]
    if content is not None and not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False, sort_keys=True)
        notes.drop("otel record content structure", "structured content kept as its JSON text")
    text = foreign_text(content, f"{at}.content", notes)
    if text is None:
        notes.drop("otel record", "no content (null or empty)")
        return
    if isinstance(saved, Mapping):
        entry = restored(saved, text, metadata, place, f"{at}.metadata.{ENTRY}", notes)
        if entry is not None:
            notes.add("otel record (from Tulving)", "entries with every field they had", entry)
        return
    rid = source_id(record.get("id"), f"{at}.id", notes) if record.get("id") is not None \
        else None
    created = foreign_time(metadata.get("created_at"), f"{at}.metadata.created_at", notes) \
        if isinstance(metadata.get("created_at"), str) else None
    entry_or_none = place.entry(f"record\x1f{rid or text}", text, MemoryType.FACT, at, notes,
                                created=created, metadata=metadata)
    if entry_or_none is not None:
        notes.add("otel record", "FACT entries, metadata kept", entry_or_none,
                  timed=created is not None)

