"""Entries as bundle records: every field of the domain model, and back, with checks.

A bundle is untrusted input, so decoding validates what storage would otherwise trust:
types and enums by name, timestamps timezone-aware, numbers in range, content and key by
the same rules as ``store``, and the partition string against the identity and scope it
claims (a crafted partition could otherwise place an entry in another tenant's rows).
Each record carries the sha256 of its canonical JSON, so a changed byte is caught.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime
from typing import Any

import attrs

from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import BundleError, TulvingError
from tulving.domain.identity import Identity
from tulving.domain.ids import looks_like_id
from tulving.domain.types import ArchiveReason, MemoryType, ReviewStatus, Scope, SourceType
from tulving.domain.validation import check_content, check_key, check_tags

_TIMES = ("created_at", "updated_at", "valid_from", "valid_until", "expired_at",
          "last_accessed_at", "archived_at")
_REQUIRED_TIMES = ("created_at", "updated_at", "valid_from", "last_accessed_at")
_ENUMS: dict[str, Any] = {"type": MemoryType, "scope": Scope, "source_type": SourceType,
                          "review_status": ReviewStatus, "archive_reason": ArchiveReason}
_ID_LISTS = ("related_to", "source_entry_ids", "conflict_ids")
_UNIT = ("importance", "confidence", "trust")
_COUNTS = ("access_count", "success_count", "failure_count")
#: Every field of the domain model but ``masks`` (a cache of where to mask, found again
#: by the receiving side rather than trusted from a file).
FIELDS = tuple(f.name for f in attrs.fields(MemoryEntry) if f.name != "masks")
#: Record keys that are not entry fields: the digest and the row of the vector.
DIGEST, VECTOR_ROW = "digest", "vector_row"


def canonical(record: dict[str, Any]) -> bytes:
    return json.dumps(record, sort_keys=True, ensure_ascii=False,
                      separators=(",", ":")).encode("utf-8")


def digest_of(record: dict[str, Any]) -> str:
    """sha256 of a record without its own digest field."""
    body = {k: v for k, v in record.items() if k != DIGEST}
    return hashlib.sha256(canonical(body)).hexdigest()


def entry_to_record(entry: MemoryEntry) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for name in FIELDS:
        value = getattr(entry, name)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif name in _ENUMS and value is not None:
            value = value.value
        elif isinstance(value, tuple):
            value = list(value)
        elif name == "metadata":
            value = dict(value)
        record[name] = value
    return record


def _time(name: str, value: object) -> datetime | None:
    if value is None and name not in _REQUIRED_TIMES:
        return None
    if not isinstance(value, str):
        raise BundleError(f"{name} must be an ISO-8601 string")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise BundleError(f"{name} is not an ISO-8601 time: {value[:40]!r}") from exc
    if parsed.tzinfo is None:
        raise BundleError(f"{name} must be timezone-aware")
    return parsed


def _optional_text(name: str, value: object, limit: int = 2000) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise BundleError(f"{name} must be a string of at most {limit} characters")
    return value


def record_to_entry(record: object) -> MemoryEntry:
    """The entry a record describes; BundleError for anything malformed or inconsistent."""
    if not isinstance(record, dict):
        raise BundleError("an entry record must be a JSON object")
    unknown = set(record) - set(FIELDS) - {DIGEST, VECTOR_ROW}
    if unknown:
        raise BundleError(f"unknown entry field(s): {', '.join(sorted(unknown))[:200]}")
    missing = {"id", "content", "type", "agent_id", "partition", *_REQUIRED_TIMES} - set(record)
    if missing:
        raise BundleError(f"entry record lacks {', '.join(sorted(missing))}")
    try:
        return _decode(record)
    except BundleError:
        raise
    except (TulvingError, TypeError, ValueError, KeyError) as exc:
        raise BundleError(f"entry {str(record.get('id'))[:40]!r}: {exc}") from exc


def _decode(record: dict[str, Any]) -> MemoryEntry:
    fields: dict[str, Any] = {}
    entry_id = record["id"]
    if not isinstance(entry_id, str) or not looks_like_id(entry_id):
        raise BundleError(f"entry id {str(entry_id)[:40]!r} is not an id")
    for name in FIELDS:
        if name not in record:
            continue
        value = record[name]
        if name in _TIMES:
            value = _time(name, value)
        elif name in _ENUMS:
            if value is not None or name != "archive_reason":
                value = MemoryType.parse(value) if name == "type" else _ENUMS[name](value)
        elif name in _ID_LISTS:
            if not isinstance(value, list) or not all(
                    isinstance(i, str) and looks_like_id(i) for i in value):
                raise BundleError(f"{name} must be a list of ids")
            value = tuple(value)
        elif name in ("supersedes", "superseded_by"):
            if value is not None and (not isinstance(value, str) or not looks_like_id(value)):
                raise BundleError(f"{name} must be an id or null")
        elif name in _UNIT:
            if (isinstance(value, bool) or not isinstance(value, int | float)
                    or not math.isfinite(value) or not 0 <= value <= 1):
                raise BundleError(f"{name} must be a number in [0, 1]")
            value = float(value)
        elif name in _COUNTS:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise BundleError(f"{name} must be a non-negative integer")
        elif name == "pinned":
            if not isinstance(value, bool):
                raise BundleError("pinned must be true or false")
        elif name == "content":
            value = check_content(value)
        elif name == "key":
            value = check_key(value)
        elif name == "tags":
            value = check_tags(value) if value else ()
        elif name == "metadata":
            if not isinstance(value, dict):
                raise BundleError("metadata must be an object")
        elif name in ("agent_id", "partition", "content_hash"):
            if not isinstance(value, str) or len(value) > 1200:
                raise BundleError(f"{name} must be a string")
        else:  # user_id, workspace_id, source_instance, model_id, session_id, e-a-v, signature
            value = _optional_text(name, value)
        fields[name] = value
    entry = MemoryEntry(**fields)
    owner = Identity(agent_id=entry.agent_id, user_id=entry.user_id,
                     workspace_id=entry.workspace_id, model_id=entry.model_id)
    if owner.partition_for(entry.scope, entry.session_id) != entry.partition:
        raise BundleError(f"entry {entry.id}: its partition does not match its identity and "
                          "scope (tampered?)")
    if entry.archive_reason is not None and entry.archived_at is None:
        raise BundleError(f"entry {entry.id}: an archive reason without archived_at")
    return entry
