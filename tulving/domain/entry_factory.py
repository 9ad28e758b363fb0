"""Turning the keyword arguments of ``store`` into a validated MemoryEntry.

All checks run before anything is written, so bad input raises a typed error and changes
nothing. Accepted keywords are exactly ``STORE_FIELDS``; ``store_many`` items are checked
against the same list so a typo in a batch is an error, not a silently dropped field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from tulving.domain.entry import MemoryEntry, content_hash
from tulving.domain.errors import ValidationError
from tulving.domain.identity import Identity
from tulving.domain.ids import new_id
from tulving.domain.types import MemoryType, Scope, SourceType
from tulving.domain.validation import (
    check_content,
    check_key,
    check_metadata,
    check_optional_text,
    check_tags,
    check_unit_interval,
)

STORE_FIELDS = frozenset({
    "content", "type", "key", "tags", "importance", "pinned", "metadata", "valid_from",
    "valid_until", "scope", "source_type", "source_instance", "confidence", "trust",
    "entity", "attribute", "value", "related_to", "source_entry_ids",
})


def check_time(label: str, value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise ValidationError(f"{label} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None:
        raise ValidationError(f"{label} must be timezone-aware (e.g. datetime.now(UTC))")
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:  # year 1 or 9999 pushed past the calendar by its offset
        raise ValidationError(f"{label} is outside the representable range") from exc


def check_ids(label: str, value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ValidationError(f"{label} must be a list of entry ids")
    if not all(isinstance(v, str) and v for v in value):
        raise ValidationError(f"{label} must hold non-empty strings")
    return tuple(value)


def build_entry(
    identity: Identity,
    now: datetime,
    fields: Mapping[str, Any],
    *,
    session_id: str | None = None,
    model_id: str | None = None,
) -> MemoryEntry:
    unknown = set(fields) - STORE_FIELDS
    if unknown:
        raise ValidationError(f"unknown store argument(s): {', '.join(sorted(unknown))}")
    if "content" not in fields or "type" not in fields:
        raise ValidationError("store needs content and type")
    content = check_content(fields["content"])
    memory_type = MemoryType.parse(fields["type"])
    key = check_key(fields.get("key"))
    tags = check_tags(fields.get("tags", ()))
    importance = check_unit_interval("importance", fields.get("importance", 0.5))
    confidence = check_unit_interval("confidence", fields.get("confidence", 1.0))
    pinned = fields.get("pinned", False)
    if not isinstance(pinned, bool):
        raise ValidationError("pinned must be True or False")
    metadata = check_metadata(fields.get("metadata"), json.dumps)
    valid_from = check_time("valid_from", fields.get("valid_from")) or now
    valid_until = check_time("valid_until", fields.get("valid_until"))
    if valid_until is not None and valid_until < valid_from:
        raise ValidationError("valid_until is before valid_from")
    scope = Scope.parse(fields.get("scope", Scope.AGENT))
    source = SourceType.parse(fields.get("source_type", SourceType.AGENT_RUN))
    trust_value = fields.get("trust")
    trust = source.default_trust if trust_value is None else check_unit_interval("trust", trust_value)
    entity = check_optional_text("entity", fields.get("entity"), max_chars=200)
    attribute = check_optional_text("attribute", fields.get("attribute"), max_chars=200)
    value = check_optional_text("value", fields.get("value"), max_chars=2000)
    if (entity is None) != (attribute is None):
        raise ValidationError("entity and attribute go together")
    return MemoryEntry(
        id=new_id(now),
        content=content,
        type=memory_type,
        agent_id=identity.agent_id,
        user_id=identity.user_id,
        workspace_id=identity.workspace_id,
        scope=scope,
        partition=identity.partition_for(scope, session_id),
        key=key,
        tags=tags,
        importance=importance,
        pinned=pinned,
        confidence=confidence,
        source_type=source,
        source_instance=check_optional_text("source_instance", fields.get("source_instance")),
        model_id=model_id,
        trust=trust,
        session_id=session_id,
        related_to=check_ids("related_to", fields.get("related_to")),
        source_entry_ids=check_ids("source_entry_ids", fields.get("source_entry_ids")),
        created_at=now,
        updated_at=now,
        valid_from=valid_from,
        valid_until=valid_until,
        last_accessed_at=now,
        entity=entity,
        attribute=attribute,
        value=value,
        metadata=metadata,
        content_hash=content_hash(content),
    )
