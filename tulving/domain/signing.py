"""HMAC-SHA256 signatures over what an entry *says*: tamper evidence for stored memories.

The signature covers the fields a writer asserts (content, type, key, tags, metadata,
provenance, event time), not the ones the store legitimately changes afterwards
(archival, supersede links, access statistics, review status). So a signed entry stays
valid through its normal life, and a byte edited behind the library's back is caught by
``Memory.verify()``. The key is bytes handed in by the caller: reading it from the
environment is the application's job (the domain reads no environment).
"""

from __future__ import annotations

import hashlib
import hmac
import json

from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ConfigError

SIGNATURE_PREFIX = "hmac-sha256:"
MIN_KEY_BYTES = 16


def canonical_bytes(entry: MemoryEntry) -> bytes:
    body = {
        "id": entry.id,
        "content": entry.content,
        "type": entry.type.value,
        "agent_id": entry.agent_id,
        "partition": entry.partition,
        "scope": entry.scope.value,
        "key": entry.key,
        "tags": sorted(entry.tags),
        "confidence": entry.confidence,
        "source_type": entry.source_type.value,
        "source_instance": entry.source_instance,
        "model_id": entry.model_id,
        "trust": entry.trust,
        "created_at": entry.created_at.isoformat(),
        "valid_from": entry.valid_from.isoformat(),
        "valid_until": entry.valid_until.isoformat() if entry.valid_until else None,
        "entity": entry.entity,
        "attribute": entry.attribute,
        "value": entry.value,
        "metadata": entry.metadata,
        "content_hash": entry.content_hash,
    }
    return json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    ).encode("utf-8")


def check_key(key: bytes) -> bytes:
    if not isinstance(key, bytes) or len(key) < MIN_KEY_BYTES:
        raise ConfigError(f"a signing key must be at least {MIN_KEY_BYTES} bytes")
    return key


def sign(entry: MemoryEntry, key: bytes) -> str:
    digest = hmac.new(check_key(key), canonical_bytes(entry), hashlib.sha256).hexdigest()
    return SIGNATURE_PREFIX + digest


def signature_valid(entry: MemoryEntry, key: bytes) -> bool:
    if not entry.signature:
        return False
    return hmac.compare_digest(entry.signature, sign(entry, key))
