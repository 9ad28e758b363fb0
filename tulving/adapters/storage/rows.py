"""Conversion between MemoryEntry and flat rows, shared by the SQL adapters.

Written by hand rather than with cattrs: entries cross this boundary on every read of
every search, and a flat explicit mapping is several times faster than a generic
structure/unstructure pass while keeping the column list in one place.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from tulving.domain.entry import MemoryEntry
from tulving.domain.lexical import searchable_text
from tulving.domain.masks import Masks, pack_metadata, unpack_metadata
from tulving.domain.types import ArchiveReason, MemoryType, ReviewStatus, Scope, SourceType

COLUMNS = (
    "id", "content", "type", "agent_id", "partition", "scope", "user_id", "workspace_id",
    "key", "importance", "pinned", "confidence", "source_type", "source_instance",
    "model_id", "trust", "session_id", "supersedes", "superseded_by", "related_to",
    "source_entry_ids", "conflict_ids", "review_status", "created_at", "updated_at",
    "valid_from", "valid_until", "expired_at", "last_accessed_at", "access_count",
    "archived_at", "archive_reason", "entity", "attribute", "value", "success_count",
    "failure_count", "metadata", "content_hash", "signature", "search_text",
)
_JSON_TUPLES = ("related_to", "source_entry_ids", "conflict_ids")
_TIMES = ("created_at", "updated_at", "valid_from", "valid_until", "expired_at",
          "last_accessed_at", "archived_at")


def ts(value: datetime | None) -> str | None:
    """Fixed-width UTC ISO text: lexicographic order equals time order in SQL."""
    if value is None:
        return None
    # isoformat, not strftime: "%Y" is not zero-padded below year 1000 on glibc, which
    # broke both the fixed width (ordering) and parsing back (found by the HTTP fuzz run)
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def parse_ts(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo is UTC else value.astimezone(UTC)
    return datetime.fromisoformat(value)


def entry_to_row(entry: MemoryEntry, *, text_times: bool = True) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": entry.id, "content": entry.content, "type": entry.type.value,
        "agent_id": entry.agent_id, "partition": entry.partition, "scope": entry.scope.value,
        "user_id": entry.user_id, "workspace_id": entry.workspace_id, "key": entry.key,
        "importance": entry.importance, "pinned": bool(entry.pinned),
        "confidence": entry.confidence, "source_type": entry.source_type.value,
        "source_instance": entry.source_instance, "model_id": entry.model_id,
        "trust": entry.trust, "session_id": entry.session_id, "supersedes": entry.supersedes,
        "superseded_by": entry.superseded_by,
        "review_status": entry.review_status.value,
        "access_count": entry.access_count,
        "archive_reason": entry.archive_reason.value if entry.archive_reason else None,
        "entity": entry.entity, "attribute": entry.attribute, "value": entry.value,
        "success_count": entry.success_count, "failure_count": entry.failure_count,
        "metadata": pack_metadata(entry.metadata, entry.masks),
        "content_hash": entry.content_hash, "signature": entry.signature,
        "search_text": searchable_text(
            entry.content, entry.key, entry.tags, entry.entity, entry.attribute, entry.value
        ),
    }
    for name in _JSON_TUPLES:
        row[name] = json.dumps(list(getattr(entry, name)))
    for name in _TIMES:
        value = getattr(entry, name)
        row[name] = ts(value) if text_times else value
    return row


_TYPES = {t.value: t for t in MemoryType}
_SCOPES = {s.value: s for s in Scope}
_SOURCES = {s.value: s for s in SourceType}
_REVIEWS = {r.value: r for r in ReviewStatus}
_REASONS = {r.value: r for r in ArchiveReason}


def row_to_entry(row: Mapping[str, Any], tags: tuple[str, ...]) -> MemoryEntry:
    """Hot path of every read: enum lookups by dict, JSON parsed only when non-empty."""
    reason = row["archive_reason"]
    meta, masks = _metadata(row["metadata"])
    return MemoryEntry(
        id=row["id"], content=row["content"], type=_TYPES[row["type"]],
        agent_id=row["agent_id"], partition=row["partition"], scope=_SCOPES[row["scope"]],
        user_id=row["user_id"], workspace_id=row["workspace_id"], key=row["key"],
        tags=tags, importance=float(row["importance"]), pinned=bool(row["pinned"]),
        confidence=float(row["confidence"]), source_type=_SOURCES[row["source_type"]],
        source_instance=row["source_instance"], model_id=row["model_id"],
        trust=float(row["trust"]), session_id=row["session_id"],
        supersedes=row["supersedes"], superseded_by=row["superseded_by"],
        related_to=json_tuple(row["related_to"]), source_entry_ids=json_tuple(row["source_entry_ids"]),
        conflict_ids=json_tuple(row["conflict_ids"]),
        review_status=_REVIEWS[row["review_status"]],
        created_at=_req(row["created_at"]), updated_at=_req(row["updated_at"]),
        valid_from=_req(row["valid_from"]), valid_until=parse_ts(row["valid_until"]),
        expired_at=parse_ts(row["expired_at"]),
        last_accessed_at=_req(row["last_accessed_at"]),
        access_count=int(row["access_count"]), archived_at=parse_ts(row["archived_at"]),
        archive_reason=_REASONS[reason] if reason else None,
        entity=row["entity"], attribute=row["attribute"], value=row["value"],
        success_count=int(row["success_count"]), failure_count=int(row["failure_count"]),
        metadata=meta, masks=masks,
        content_hash=row["content_hash"], signature=row["signature"],
    )


#: Columns a read needs: everything but the derived full-text source.
READ_COLUMNS = tuple(c for c in COLUMNS if c != "search_text")
_AT = {name: i for i, name in enumerate(READ_COLUMNS)}


def values_to_entry(v: Any, tags: tuple[str, ...]) -> MemoryEntry:
    """``row_to_entry`` for rows in ``READ_COLUMNS`` order, read by position.

    Lookup by name on an SQLite row scans the column names each time; on the hot path
    (every search loads tens of entries) positions are markedly cheaper.
    """
    reason = v[31]
    meta, masks = _metadata(v[37])
    return MemoryEntry(
        id=v[0], content=v[1], type=_TYPES[v[2]], agent_id=v[3], partition=v[4],
        scope=_SCOPES[v[5]], user_id=v[6], workspace_id=v[7], key=v[8], tags=tags,
        importance=float(v[9]), pinned=bool(v[10]), confidence=float(v[11]),
        source_type=_SOURCES[v[12]], source_instance=v[13], model_id=v[14],
        trust=float(v[15]), session_id=v[16], supersedes=v[17], superseded_by=v[18],
        related_to=json_tuple(v[19]), source_entry_ids=json_tuple(v[20]), conflict_ids=json_tuple(v[21]),
        review_status=_REVIEWS[v[22]],
        created_at=_req(v[23]), updated_at=_req(v[24]), valid_from=_req(v[25]),
        valid_until=parse_ts(v[26]), expired_at=parse_ts(v[27]),
        last_accessed_at=_req(v[28]), access_count=int(v[29]), archived_at=parse_ts(v[30]),
        archive_reason=_REASONS[reason] if reason else None,
        entity=v[32], attribute=v[33], value=v[34],
        success_count=int(v[35]), failure_count=int(v[36]), metadata=meta, masks=masks,
        content_hash=v[38], signature=v[39],
    )


# The positions above are spelled out for speed; this keeps them honest.
assert [_AT[n] for n in ("id", "review_status", "archive_reason", "metadata", "signature")] \
    == [0, 22, 31, 37, 39], "READ_COLUMNS changed: update values_to_entry"


def _metadata(meta: Any) -> tuple[dict[str, Any], Masks | None]:
    """The metadata column as the entry's metadata and the masks kept in its slot."""
    if isinstance(meta, str):
        return ({}, None) if meta == "{}" else unpack_metadata(dict(json.loads(meta)))
    return unpack_metadata(dict(meta or {}))


def json_tuple(value: Any) -> tuple[str, ...]:
    """A JSON list column (or a driver-decoded list) as a tuple of strings."""
    if value is None or value == "[]":
        return ()
    if isinstance(value, str):
        return tuple(json.loads(value))
    return tuple(value)


def _req(value: Any) -> datetime:
    parsed = parse_ts(value)
    assert parsed is not None
    return parsed
