"""What every reader of another memory system's file shares: where its records land, the
ids they get, checked times and texts, and the notes of what went where and what did not.

Why one place: an import from Mem0, Zep, Letta or OpenTelemetry must behave like every
other import (all or nothing, idempotent, in the importer's tenant, through the write
policy), so each reader only translates records into entries and says what it mapped and
dropped; the bundle importer's write path does the rest. An entry's id is derived from the
format, the record's own id and where it lands (the importing tenant; the agent too for
an agent's own memory), so a second run finds the entries of the first (and skips them)
while two tenants, or two agents, importing the same file never meet.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from tulving.application.portability.entry_codec import record_to_entry
from tulving.domain.entry import MemoryEntry, content_hash
from tulving.domain.errors import BundleError, ForeignFormatError, ScopeError, TulvingError
from tulving.domain.identity import Identity
from tulving.domain.migration_reports import Dropped, Mapped
from tulving.domain.types import ArchiveReason, MemoryType, Scope, SourceType
from tulving.domain.validation import MAX_CONTENT_CHARS, check_key, check_metadata, check_tags

#: A foreign file larger than this is refused unread (``max_bytes`` overrides it).
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
#: Problems named one by one in the refusal; the rest are counted.
DESCRIBED = 20
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
#: The time in the id of a record that has none of its own: ids must be the same at each
#: run, and the import's clock is not.
_UNTIMED = datetime(2000, 1, 1, tzinfo=UTC)


@attrs.frozen
class Draft:
    """One entry to import. ``timed``: the source gave its times; an untimed draft whose
    text an earlier import already holds takes that version's times (so a re-run is the
    same version, not a newer one)."""

    entry: MemoryEntry
    timed: bool = True


@attrs.frozen
class Translation:
    """A foreign file read: the entries to import and the notes for the report."""

    drafts: tuple[Draft, ...]
    mapped: tuple[Mapped, ...]
    dropped: tuple[Dropped, ...]


class Notes:
    """What a reader mapped, dropped and found wrong, collected while it reads."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self._mapped: dict[tuple[str, str], int] = {}
        self._dropped: dict[tuple[str, str], int] = {}
        self.problems: list[str] = []
        self.drafts: list[Draft] = []

    def add(self, kind: str, into: str, entry: MemoryEntry, *, timed: bool = True) -> None:
        self._mapped[(kind, into)] = self._mapped.get((kind, into), 0) + 1
        self.drafts.append(Draft(entry, timed))

    def drop(self, kind: str, why: str, count: int = 1) -> None:
        if count:
            self._dropped[(kind, why)] = self._dropped.get((kind, why), 0) + count

    def problem(self, where: str, why: str) -> None:
        self.problems.append(f"{where}: {why}")

    def finish(self) -> Translation:
        """The translation, or ForeignFormatError naming every problem (nothing is
        written when any record is malformed: a half import is worse than none)."""
        if self.problems:
            shown = "; ".join(self.problems[:DESCRIBED])
            more = (f"; and {len(self.problems) - DESCRIBED} more"
                    if len(self.problems) > DESCRIBED else "")
            raise ForeignFormatError(
                f"{self.fmt}: {len(self.problems)} problem(s), nothing imported: {shown}{more}")
        return Translation(
            tuple(self.drafts),
            tuple(Mapped(k, n, into) for (k, into), n in self._mapped.items()),
            tuple(Dropped(k, n, why) for (k, why), n in self._dropped.items()))


def load_json(data: bytes, fmt: str) -> object:
    """The JSON document in ``data``; ForeignFormatError for anything else (not UTF-8,
    broken or truncated, NaN or Infinity, nested past the parser's depth)."""

    def refuse_constant(name: str) -> object:
        raise ValueError(f"{name} is not JSON")

    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ForeignFormatError(f"{fmt}: the file is not UTF-8 text ({exc.reason} at byte "
                                 f"{exc.start})") from exc
    if not text.strip():
        raise ForeignFormatError(f"{fmt}: the file is empty")
    try:
        return json.loads(text, parse_constant=refuse_constant)
    except RecursionError as exc:
        raise ForeignFormatError(f"{fmt}: the JSON nests too deeply") from exc
    except ValueError as exc:
        raise ForeignFormatError(f"{fmt}: not JSON ({str(exc)[:120]})") from exc


def foreign_time(value: object, where: str, notes: Notes) -> datetime | None:
    """An ISO-8601 time as the other system wrote it (a ``Z`` or a space before the time
    accepted; a time without a zone is taken as UTC), or None when absent."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > 64:
        notes.problem(where, "a time must be an ISO-8601 string")
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        notes.problem(where, f"not an ISO-8601 time: {value[:40]!r}")
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        notes.problem(where, "the time is outside the representable range")
        return None


def foreign_text(value: object, where: str, notes: Notes) -> str | None:
    """A record's text, stripped; None when it is empty (the caller drops the record)
    or malformed (a problem is noted)."""
    if value is None:
        return None
    if not isinstance(value, str):
        notes.problem(where, f"text must be a string, got {type(value).__name__}")
        return None
    if len(value) > MAX_CONTENT_CHARS:
        notes.problem(where, f"text is over {MAX_CONTENT_CHARS} characters")
        return None
    return value.strip() or None


def records(document: object, name: str, where: str, notes: Notes) -> list[Mapping[str, Any]]:
    """``document[name]`` as a list of JSON objects (absent: empty)."""
    value = document.get(name) if isinstance(document, Mapping) else None
    if value is None:
        return []
    if not isinstance(value, list):
        notes.problem(f"{where}{name}", "must be a list")
        return []
    items: list[Mapping[str, Any]] = []
    for i, item in enumerate(value):
        if isinstance(item, Mapping):
            items.append(item)
        else:
            notes.problem(f"{where}{name}[{i}]", "must be an object")
    return items


def strings(value: object, where: str, notes: Notes) -> list[str] | None:
    """A list of strings (absent: empty), or None with the problem noted."""
    items = value or []
    if isinstance(items, list) and all(isinstance(i, str) for i in items):
        return items
    notes.problem(where, "must be a list of strings")
    return None


def source_id(value: object, where: str, notes: Notes) -> str | None:
    if isinstance(value, str) and 0 < len(value) <= 200:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    notes.problem(where, "needs an id (a string of at most 200 characters)")
    return None


@attrs.frozen
class Placement:
    """Where a foreign file's records land: in the importing identity's tenant, owned by
    its agent, with times from the records or, where they have none, the import's clock."""

    fmt: str
    identity: Identity
    now: datetime
    remap_identity: bool = False

    def id_for(self, source: str, at: datetime, scope: Scope = Scope.PERSONAL) -> str:
        """A time-sortable id from ``at`` and a hash of the format, the record's own id
        and the partition it lands in (this tenant, and the agent for an agent's own
        memory): stable across runs, distinct across tenants and agents."""
        where = self.identity.partition_for(scope)
        digest = hashlib.sha256(f"{self.fmt}\x1f{where}\x1f{source}".encode()).digest()
        millis = max(0, int(at.timestamp() * 1000)) & ((1 << 48) - 1)
        value = (millis << 80) | int.from_bytes(digest[:10], "big")
        return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(26)))

    def check_user(self, user_id: object, where: str) -> None:
        """Records of another user go in only with ``remap_identity`` (as for bundles):
        tenancy is the importer's, decided once, never the file's."""
        if user_id is None or user_id == self.identity.user_id or self.remap_identity:
            return
        raise ScopeError(
            f"{self.fmt}: {where} belongs to user {str(user_id)[:80]!r}, not to this memory's "
            f"user ({self.identity.user_id!r}); open the memory with that user_id, or import "
            "with remap_identity=True (--remap-identity) to move it into this one")

    def entry(self, source: str, content: str, type: MemoryType, where: str, notes: Notes,
              *, scope: Scope = Scope.AGENT, created: datetime | None = None,
              updated: datetime | None = None, valid_from: datetime | None = None,
              **fields: Any) -> MemoryEntry | None:
        """A validated entry for one record, or None with the problem noted; a record
        without times gets the import's clock (and an id that does not depend on it)."""
        entry_id = self.id_for(source, created or _UNTIMED, scope)
        created = created or self.now
        updated = max(updated or created, created)
        metadata = fields.pop("metadata", None) or {}
        try:
            key = check_key(fields.pop("key", None))
            tags = check_tags(fields.pop("tags", ()))
            metadata = check_metadata(metadata, json.dumps)
            valid = valid_from or created
            until = fields.pop("valid_until", None)
            if until is not None and until < valid:
                until = valid
            return MemoryEntry(
                id=entry_id, content=content, type=type,
                agent_id=self.identity.agent_id, user_id=self.identity.user_id,
                workspace_id=self.identity.workspace_id, scope=scope,
                partition=self.identity.partition_for(scope),
                model_id=self.identity.model_id, source_type=SourceType.IMPORT,
                source_instance=self.fmt, trust=SourceType.IMPORT.default_trust,
                key=key, tags=tags, metadata=metadata, created_at=created,
                updated_at=updated, valid_from=valid, valid_until=until,
                last_accessed_at=updated, content_hash=content_hash(content), **fields)
        except (TulvingError, TypeError, ValueError) as exc:
            notes.problem(where, str(exc))
            return None


def archived(entry: MemoryEntry, at: datetime, reason: ArchiveReason) -> MemoryEntry:
    """``entry`` as a version that left the active set at ``at``."""
    at = max(at, entry.created_at)
    return attrs.evolve(entry, archived_at=at, archive_reason=reason,
                        expired_at=entry.expired_at or at, updated_at=max(at, entry.updated_at))


def restored(saved: Mapping[str, Any], text: str, metadata: Mapping[str, Any],
             place: Placement, where: str, notes: Notes) -> MemoryEntry | None:
    """The entry Tulving's own exporter described in ``saved`` (every field but its text
    and metadata), its tenancy as it was (the importer places it, as for bundles). A
    text edited in the other system since is a newer version: it gets the import's time."""
    try:
        entry = record_to_entry({**saved, "content": text, "metadata": dict(metadata)})
    except BundleError as exc:
        notes.problem(where, str(exc))
        return None
    if saved.get("content_hash") != content_hash(text):
        entry = attrs.evolve(entry, content_hash=content_hash(text),
                             updated_at=max(place.now, entry.updated_at))
    return entry
