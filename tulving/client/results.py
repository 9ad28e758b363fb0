"""What the clients return: typed views of the server's JSON, shaped as the TypeScript
client's (``clients/typescript``) so code and docs read the same in both languages.

- ``Entry``: ``id``, ``content``, ``type``, ``key``, ``tags``, ``scope``, and every other
  field of the server's object (``importance``, ``pinned``, ``agent_id``, ``created_at``,
  ``valid_from``, ``supersedes``, ``superseded_by``, ``archived_at``, ``metadata``, ...)
  as an attribute too (``entry.created_at``), or whole in ``data``.
- ``Hit``: a search or recall result, flat as the TypeScript ``Hit`` (an entry with
  ``score``, ``match_type`` and, from ``recall``, ``relevance``): ``hit.content``,
  ``hit.score``; ``hit.entry`` is the ``Entry``.
- ``Curated``: ``content``, ``token_count``, ``token_budget``, ``entries``,
  ``candidates`` (with ``explain=True``), and the rest (``mode``, ``omitted``, ...) in
  ``data``.
- ``EntryPage``: ``entries`` and ``next_cursor`` (None: no more).
- The reports a ``Memory`` returns too, the same classes (``StatsReport``, ``Profile``,
  ``ConsolidationReport``: ``tulving.domain.memory_reports``), read from the server's
  JSON; and the server's own answers: ``ServerHealth``, ``SessionInfo``,
  ``Consolidation``, ``ImportSummary`` and, for sync, ``PushAnswer``, ``ListedDelta``,
  ``TenantAnswer`` (``tulving.domain.sync_answers``) and ``SyncDelta``. Each has
  ``as_dict()``; indexing one as the dict it used to be still works, with a
  ``DeprecationWarning`` (see ``tulving.domain.reports``).

A missing memory raises ``NotFoundError``, which is both a ``ServerError`` (status 404)
and Tulving's own ``NotFoundError``, as ``Memory.get`` raises it; input refused, by the
server (422) or by the client before sending (status 0: an id that cannot be a path
segment, text that is not valid Unicode), raises ``ValidationError``, both a
``ServerError`` and Tulving's own ``ValidationError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

import attrs
import cattrs

from tulving.domain.errors import NotFoundError as DomainNotFoundError
from tulving.domain.errors import TulvingError
from tulving.domain.errors import ValidationError as DomainValidationError
from tulving.domain.memory_reports import ConsolidationReport
from tulving.domain.reports import Report

R = TypeVar("R")

#: Reads the server's JSON into the typed results (fields it does not know, from a newer
#: server, are left out; times are ISO strings).
_converter = cattrs.Converter()
_converter.register_structure_hook(datetime, lambda value, _t: datetime.fromisoformat(value))
_converter.register_structure_hook_func(lambda t: t is object, lambda value, _t: value)


def read(data: object, cls: type[R]) -> R:
    """``data`` (the server's JSON) as a ``cls``."""
    return _converter.structure(data, cls)


class ServerError(TulvingError):
    """The server answered with an error: ``status``, ``kind`` (its error type)."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(f"{status} {kind}: {message}")
        self.status, self.kind, self.message = status, kind, message


class NotFoundError(ServerError, DomainNotFoundError):
    """No memory with that id or key (for the caller's tenant): HTTP 404."""


class ValidationError(ServerError, DomainValidationError):
    """Input refused: by the server (HTTP 422, ``kind`` its error type) or by the client
    before anything was sent (status 0), as ``Memory`` refuses it."""


def server_error(status: int, kind: str, message: str) -> ServerError:
    """The typed error for a response: ``NotFoundError`` for a 404, ``ValidationError``
    for a 422."""
    if status == 404:
        return NotFoundError(status, kind, message)
    if status == 422:
        return ValidationError(status, kind, message)
    return ServerError(status, kind, message)


@attrs.frozen
class Entry:
    """A memory as the server shows it (see the module doc)."""

    id: str
    content: str
    type: str
    key: str | None
    tags: tuple[str, ...]
    scope: str
    data: Mapping[str, Any] = attrs.field(repr=False)

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Entry:
        """An ``Entry`` from the server's JSON object of a memory."""
        return cls(data["id"], data["content"], data["type"], data.get("key"),
                   tuple(data.get("tags") or ()), data.get("scope", "agent"), data)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return object.__getattribute__(self, "data")[name]
        except (KeyError, AttributeError):
            raise AttributeError(f"Entry has no field {name!r}") from None


@attrs.frozen
class Hit:
    """One search or recall result (see the module doc)."""

    entry: Entry
    score: float
    match_type: str
    relevance: float | None = None
    """``recall`` only: the score weighted by recency and confidence, as it ranked."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "entry"), name)


@attrs.frozen
class Curated:
    """A curated block (see the module doc)."""

    content: str
    token_count: int
    token_budget: int
    entries: tuple[Mapping[str, Any], ...]
    candidates: tuple[Mapping[str, Any], ...] = ()
    """With ``curate(..., explain=True)``: every ranked candidate, its score broken down,
    its disclosure ("full", "truncated", "excerpt", "index", "left out") and its token
    cost."""
    data: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class EntryPage:
    """A page of ``list_entries``; pass ``next_cursor`` back for the next one."""

    entries: tuple[Entry, ...]
    next_cursor: str | None


@attrs.frozen
class ServerHealth(Report):
    """``GET /v1/health``: the server is up (``status`` "ok"), its wire format version and
    its library version (None from a server too old to say)."""

    status: str
    schema_version: int
    version: str | None = None


@attrs.frozen
class SessionInfo(Report):
    """A working session as the server shows it."""

    id: str
    goal: str | None
    started_at: datetime
    ended_at: datetime | None = None


@attrs.frozen
class Consolidation(Report):
    """``POST /v1/consolidate``: the plan or what was done (``report``), and whether it was
    applied."""

    report: ConsolidationReport
    applied: bool


@attrs.frozen
class ImportSummary(Report):
    """``POST /v1/import``: how many entries were added, updated, skipped, in conflict,
    re-embedded and kept their vectors; the ids of the added, updated and conflicting
    ones; whether it was a dry run (nothing written)."""

    added: int
    updated: int
    skipped: int
    conflicts: int
    reembedded: int
    vectors_kept: int
    dry_run: bool
    added_ids: tuple[str, ...] = ()
    updated_ids: tuple[str, ...] = ()
    conflict_ids: tuple[str, ...] = ()


def hits(rows: list[dict[str, Any]]) -> list[Hit]:
    return [Hit(Entry.of(r), float(r["score"]), r["match_type"],
                float(r["relevance"]) if r.get("relevance") is not None else None)
            for r in rows]


def curated(data: Mapping[str, Any]) -> Curated:
    return Curated(data.get("content") or "", int(data.get("token_count", 0)),
                   int(data.get("token_budget", 0)), tuple(data.get("entries") or ()),
                   tuple(data.get("candidates") or ()), dict(data))


def page(data: Mapping[str, Any]) -> EntryPage:
    return EntryPage(tuple(Entry.of(e) for e in data["entries"]), data.get("next_cursor"))
