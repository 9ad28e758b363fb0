"""Corrections and time travel: fixing what a memory says without rewriting history.

A correction is a new entry (source ``correction``) that takes over the original's key
and scope; the original is archived with reason ``corrected`` in the same transaction
and both are linked (``supersedes`` / ``superseded_by``). From then on the original is
only reachable through ``history`` or an ``as_of`` read from before the correction:
transaction time (``created_at``/``expired_at``) answers "what did we believe then".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.write_order import writing
from tulving.domain.entry import MemoryEntry
from tulving.domain.entry_factory import STORE_FIELDS
from tulving.domain.errors import NotFoundError, ValidationError
from tulving.domain.types import ArchiveReason, SourceType
from tulving.ports.storage import Archival, WriteOutcome

Write = Callable[[list[dict[str, Any]], str], list[WriteOutcome]]

#: Fields a correction inherits from the original unless the caller overrides them.
_INHERITED = (
    "type",
    "tags",
    "importance",
    "pinned",
    "metadata",
    "scope",
    "entity",
    "attribute",
    "valid_from",
    "valid_until",
)


def correct(
    ctx: MemoryContext,
    original: MemoryEntry,
    new_content: str,
    fields: Mapping[str, Any],
    write: Write,
) -> tuple[MemoryEntry, MemoryEntry]:
    """Write the correction of ``original``; returns (correction, archived original)."""
    forbidden = {"key", "content", "source_type"} & set(fields)
    if forbidden:
        raise ValidationError(
            f"a correction keeps the original's key and is of source 'correction'; "
            f"do not pass {', '.join(sorted(forbidden))}"
        )
    unknown = set(fields) - STORE_FIELDS
    if unknown:
        raise ValidationError(f"unknown correction argument(s): {', '.join(sorted(unknown))}")
    item: dict[str, Any] = {name: getattr(original, name) for name in _INHERITED}
    item["type"] = original.type.value
    item["scope"] = original.scope.value
    item["tags"] = list(original.tags)
    item["metadata"] = {k: v for k, v in original.metadata.items() if k != "governance"}
    if original.attribute is not None:
        item["value"] = original.value
    item.update(fields)
    item.update(
        content=new_content,
        key=original.key,
        source_type=SourceType.CORRECTION.value,
        related_to=sorted({*fields.get("related_to", ()), original.id}),
    )
    storage = ctx.storage
    now = ctx.clock.now()
    with writing(ctx):
        if storage.archive([Archival(original.id, ArchiveReason.CORRECTED, now)]) != 1:
            raise NotFoundError(f"entry {original.id} is no longer active: nothing to correct")
        outcome = write([item], "correct")[0]
        fixed = attrs.evolve(outcome.entry, supersedes=original.id)
        storage.replace(fixed)
        archived = storage.get(original.id)
        assert archived is not None
        archived = attrs.evolve(archived, superseded_by=fixed.id)
        storage.replace(archived)
    if ctx.vectors is not None:
        ctx.vectors.remove([original.id])
    return fixed, archived


def correction_notice(entry: MemoryEntry) -> str | None:
    """The message a read of a corrected original gets (it must never surface as current)."""
    if entry.archive_reason is ArchiveReason.CORRECTED:
        by = entry.superseded_by or "a later entry"
        return (
            f"entry {entry.id} was corrected by {by}; read the correction, or "
            "history()/as_of for the original"
        )
    return None
