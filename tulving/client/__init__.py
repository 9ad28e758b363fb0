"""Python clients of the memory server (``tulving serve``): ``TulvingClient`` and
``AsyncTulvingClient``, on httpx (extra ``client``).

Method names match ``Memory`` where they overlap (``remember``, ``recall``, ``store``,
``search``, ``curate``, ``correct``, ``forget``, ``get``, ``history``, ``list_keys``,
``list_entries``, ``start_session``, ``end_session``, ``consolidate``, ``profile``,
``export``, ``import_bundle``, ``stats``, ``health``) and the TypeScript client's
(``clients/typescript``: ``listKeys`` is ``list_keys``, ``exportBundle`` is
``export_bundle``, ...), and results are typed and shaped as the TypeScript client's
(``Entry``, ``Hit``, ``Curated``, ``EntryPage``: see ``tulving.client.results``). Every
call has a timeout. Calls that change nothing, and ``remember`` with an
``idempotency_key``, are retried on 429, 503 and connection errors with exponential
backoff and full jitter; other writes are never repeated behind the caller's back. An
error response raises ``ServerError`` carrying the server's typed error (``kind``,
``status``); a missing memory raises ``NotFoundError`` (a ``ServerError`` and Tulving's
own ``NotFoundError``), refused input ``ValidationError`` (likewise; status 0 when the
client refused it before sending: see ``tulving.client.wire`` for how every id, key and
text is encoded so that none changes the request).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Any, TypeVar

import httpx

from tulving.client.calls import Call, Shape, iso
from tulving.client.results import (
    Consolidation,
    Curated,
    Entry,
    EntryPage,
    Hit,
    ImportSummary,
    NotFoundError,
    ServerError,
    ServerHealth,
    SessionInfo,
    ValidationError,
    read,
)
from tulving.client.wire import encoded
from tulving.domain.memory_reports import ConsolidationReport, Profile, StatsReport
from tulving.domain.migration_reports import MigrationReport
from tulving.domain.sync_answers import ListedDelta, PushAnswer, TenantAnswer
from tulving.domain.sync_records import SyncDelta

T = TypeVar("T")

RETRY_STATUS = frozenset({429, 503})
DEFAULT_TIMEOUT = 30.0


def _with_trace_context(request: httpx.Request) -> None:
    """The caller's trace on the request (W3C ``traceparent``, through OpenTelemetry's
    configured propagator) when opentelemetry-api is installed: an agent's trace then
    continues into the memory server (docs/operations/observability.md)."""
    try:
        from opentelemetry import propagate
    except ImportError:
        return
    propagate.inject(request.headers)


async def _with_trace_context_async(request: httpx.Request) -> None:
    _with_trace_context(request)


class TulvingClient:
    """Synchronous client: ``with TulvingClient(url, token) as memory: memory.recall(q)``."""

    def __init__(self, base_url: str, token: str, *, agent_id: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, retries: int = 3, backoff: float = 0.2,
                 transport: httpx.BaseTransport | None = None) -> None:
        self._shape = Shape(base_url, token, agent_id, retries, backoff)
        self._http = httpx.Client(base_url=self._shape.base_url, headers=self._shape.headers,
                                  timeout=timeout, transport=transport,
                                  event_hooks={"request": [_with_trace_context]})

    def __enter__(self) -> TulvingClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def _do(self, call: Call[T]) -> T:
        return call.parse(self._call(call.method, call.path, retry=call.retry,
                                     **call.kwargs))

    def _call(self, method: str, path: str, *, retry: bool, **kwargs: Any) -> Any:
        attempt, kwargs = 0, encoded(kwargs)
        while True:
            try:
                response = self._http.request(method, path, **kwargs)
                if response.status_code not in RETRY_STATUS or not retry \
                        or attempt >= self._shape.retries:
                    return self._shape.check(response)
            except httpx.TransportError as exc:
                if not retry or attempt >= self._shape.retries:
                    raise ServerError(0, "ConnectionError", str(exc)) from exc
            time.sleep(self._shape.delay(attempt))
            attempt += 1

    # the API -----------------------------------------------------------------------------
    def health(self) -> ServerHealth:
        """``GET /v1/health``: whether the server is up (the one call without a token)."""
        return self._do(self._shape.health())

    def stats(self) -> StatsReport:
        """``GET /v1/stats``: the memory's counts and adapters, as ``Memory.stats()``."""
        return self._do(self._shape.stats())

    def store(self, content: str, *, type: str, **fields: Any) -> Entry:
        """``POST /v1/store``: write one memory (``Memory.store``'s keywords); never retried."""
        return self._do(self._shape.store(content, type, fields))

    def remember(self, text: str, *, subject: str | None = None,
                 idempotency_key: str | None = None, wait: bool = False) -> list[Entry]:
        """``POST /v1/remember``: the turns, committed and findable by full text when it
        answers; what is read off them follows on the server (``wait=True``: answers
        once that is written too, with it). Retried only with an ``idempotency_key``,
        which makes a repeat a no-op."""
        return self._do(self._shape.remember(text, subject, idempotency_key, wait))

    def recall(self, query: str, *, limit: int = 10, **filters: Any) -> list[Hit]:
        """``POST /v1/recall``: the best ``limit`` memories for ``query`` (filters ``tags``,
        ``types``, ``scope``, ``recency_weight``, ``min_relevance``, ...)."""
        return self._do(self._shape.recall(query, limit, filters))

    def search(self, query: str, top_k: int = 10, *, min_score: float | None = None,
               **options: Any) -> list[Hit]:
        """``POST /v1/search``: ``Memory.search`` (modes, filters, ``as_of``); hits scoring
        under ``min_score`` (in [0, 1]) are left out."""
        return self._do(self._shape.search(query, top_k, min_score, options))

    def curate(self, query: str | None = None, *, token_budget: int = 2000,
               mode: str | None = None, **filters: Any) -> Curated:
        """``POST /v1/curate``: a prompt block within ``token_budget`` (no query, or
        ``mode="orient"``: the cold-start briefing; ``explain=True`` adds every candidate)."""
        return self._do(self._shape.curate(query, token_budget, mode, filters))

    def correct(self, memory_id: str, content: str, *, reason: str | None = None) -> Entry:
        """``POST /v1/correct``: supersede a memory with a correction; never retried."""
        return self._do(self._shape.correct(memory_id, content, reason))

    def forget(self, memory_id: str, *, hard: bool = False) -> Entry:
        """``DELETE /v1/forget/{id_or_key}``: archive it, or delete it for good with ``hard``."""
        return self._do(self._shape.forget(memory_id, hard))

    def get(self, memory_id: str, *, as_of: datetime | None = None,
            include_archived: bool = False) -> Entry:
        """``GET /v1/memory/{id_or_key}``: the active entry (as of a moment; an archived
        version by id with ``include_archived``); ``NotFoundError`` when there is none."""
        return self._do(self._shape.get(memory_id, as_of, include_archived))

    def history(self, memory_id: str) -> list[Entry]:
        """``GET /v1/memory/{id_or_key}/history``: every version, newest first."""
        return self._do(self._shape.history(memory_id))

    def correction_chain(self, memory_id: str) -> list[Entry]:
        """Every version of a corrected or superseded memory, newest first."""
        return self.history(memory_id)

    def scoped(self, scope: str, query: str, *, limit: int = 10) -> list[Hit]:
        """Recall within one scope (``workspace``, ``shared``, ...)."""
        return self.recall(query, limit=limit, scope=scope)

    def list_keys(self, prefix: str = "") -> list[str]:
        """``GET /v1/keys``: the keys of the active memories, starting with ``prefix``."""
        return self._do(self._shape.list_keys(prefix))

    def list_entries(self, limit: int = 100, cursor: str | None = None, *,
                     types: Sequence[str] | None = None, tags: Sequence[str] | None = None,
                     scope: str | None = None, since: datetime | None = None,
                     until: datetime | None = None,
                     include_archived: bool = False) -> EntryPage:
        """``GET /v1/entries``: every visible memory, oldest first, ``limit`` at a time;
        pass ``next_cursor`` back for the next page (None: no more)."""
        page: EntryPage = self._do(self._shape.list_entries(limit, cursor, dict(
            types=types, tags=tags, scope=scope, since=since, until=until,
            include_archived=include_archived)))
        return page

    def start_session(self, goal: str | None = None) -> SessionInfo | None:
        """``POST /v1/sessions/start``: a working session (``id``, ``goal``, ``started_at``)."""
        return self._do(self._shape.start_session(goal))

    def end_session(self) -> SessionInfo | None:
        """``POST /v1/sessions/end``: end it (summarised); ``{}`` when none was open."""
        return self._do(self._shape.end_session())

    def consolidate(self, *, apply: bool = False) -> Consolidation:
        """``POST /v1/consolidate``: ``{"report", "applied"}``; a dry run unless ``apply``."""
        return self._do(self._shape.consolidate(apply))

    def profile(self, subject: str = "user") -> Profile:
        """``GET /v1/profile``: what the memory holds about ``subject``."""
        return self._do(self._shape.profile(subject))

    def export(self, target: str | Path | IO[bytes], **filters: Any) -> int:
        """Write the server's bundle of this tenant to ``target``; returns its entry count."""
        with self._http.stream("POST", "/v1/export", json=self._shape.body(**iso(filters))) \
                as response:
            if response.status_code >= 400:
                response.read()
                self._shape.check(response)
            count = int(response.headers.get("x-tulving-entries", "0"))
            if isinstance(target, str | Path):
                with open(target, "wb") as handle:
                    for chunk in response.iter_bytes():
                        handle.write(chunk)
            else:
                for chunk in response.iter_bytes():
                    target.write(chunk)
        return count

    def export_bundle(self, target: str | Path | IO[bytes], **filters: Any) -> int:
        """``export`` by the TypeScript client's name (``exportBundle``)."""
        return self.export(target, **filters)

    def import_bundle(self, source: str | Path | IO[bytes], *, reembedding: str = "auto",
                      on_conflict: str = "newest", dry_run: bool = False) -> ImportSummary:
        """``POST /v1/import``: merge a bundle in, all or nothing; returns the
        import report (``dry_run`` counts without writing)."""
        content = Path(source).read_bytes() if isinstance(source, str | Path) else source.read()
        return self._do(self._shape.import_bundle(content, reembedding, on_conflict, dry_run))

    def import_from(self, source: str | Path | bytes | IO[bytes], *, format: str,
                    on_conflict: str = "newest", dry_run: bool = False,
                    remap_identity: bool = False) -> MigrationReport:
        """``POST /v1/import/<format>``: another memory system's export (``mem0``,
        ``zep``, ``letta``, ``otel``) merged in, all or nothing; the report says what was
        mapped to what and what was left out, and why (as ``Memory.import_from``)."""
        return self._do(self._shape.import_from(_content(source), format, on_conflict,
                                                dry_run, remap_identity))

    # sync (``Memory.sync(client)``; see tulving.application.portability.sync) ------------
    @property
    def sync_id(self) -> str:
        """Watermarks are kept per server, token and agent."""
        import hashlib

        token = self._shape.headers["Authorization"]
        digest = hashlib.sha256(token.encode()).hexdigest()[:16]
        return f"{self._shape.base_url}|{digest}|{self._shape.agent_id or ''}"

    def sync_push(self, device: str, data: bytes, e2e: bool) -> PushAnswer:
        """Append a delta; safe to retry: the same bytes from one device are one delta."""
        return read(self._call("POST", "/v1/sync/deltas", retry=True, content=data,
                               headers={"Content-Type": "application/octet-stream",
                                        "X-Tulving-E2E": "1" if e2e else "0"},
                               params=self._shape.params(device=device)), PushAnswer)

    def sync_list(self, after: int, limit: int) -> list[ListedDelta]:
        """The tenant's deltas after sequence number ``after`` (for ``Memory.sync``)."""
        data = self._call("GET", "/v1/sync/deltas", retry=True,
                          params=self._shape.params(after=after, limit=limit))
        return read(data["deltas"], list[ListedDelta])

    def sync_fetch(self, seq: int) -> bytes:
        """One delta's bytes by sequence number (for ``Memory.sync``)."""
        data = self._call("GET", f"/v1/sync/deltas/{int(seq)}", retry=True,
                          params=self._shape.params())
        return bytes(data)

    def sync_tenant(self) -> TenantAnswer | None:
        """The tenant this token acts for (None from a server older than the question)."""
        try:
            data = self._call("GET", "/v1/sync/tenant", retry=True,
                              params=self._shape.params())
        except ServerError as exc:
            if exc.status == 404:
                return None
            raise
        return TenantAnswer(data.get("user_id"), data.get("workspace_id"))

    def sync_quarantined(self, device: str | None = None,
                         after: int = 0) -> list[SyncDelta] | None:
        """The tenant's deltas the server could not merge (``seq``, ``device``,
        ``delta_id``, ``reason``, ...), of one device when given, after ``after``; None
        from a server older than the quarantine."""
        try:
            data = self._call("GET", "/v1/sync/quarantine", retry=True,
                              params=self._shape.params(device=device, after=after,
                                                        limit=1000))
        except ServerError as exc:
            if exc.status == 404:
                return None
            raise
        return read(data["deltas"], list[SyncDelta])


class AsyncTulvingClient:
    """The same API with ``async def`` methods, on ``httpx.AsyncClient``."""

    def __init__(self, base_url: str, token: str, *, agent_id: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, retries: int = 3, backoff: float = 0.2,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._shape = Shape(base_url, token, agent_id, retries, backoff)
        self._http = httpx.AsyncClient(base_url=self._shape.base_url,
                                       headers=self._shape.headers, timeout=timeout,
                                       transport=transport,
                                       event_hooks={"request": [_with_trace_context_async]})

    async def __aenter__(self) -> AsyncTulvingClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def _do(self, call: Call[T]) -> T:
        return call.parse(await self._call(call.method, call.path, retry=call.retry,
                                           **call.kwargs))

    async def _call(self, method: str, path: str, *, retry: bool, **kwargs: Any) -> Any:
        attempt, kwargs = 0, encoded(kwargs)
        while True:
            try:
                response = await self._http.request(method, path, **kwargs)
                if response.status_code not in RETRY_STATUS or not retry \
                        or attempt >= self._shape.retries:
                    return self._shape.check(response)
            except httpx.TransportError as exc:
                if not retry or attempt >= self._shape.retries:
                    raise ServerError(0, "ConnectionError", str(exc)) from exc
            await asyncio.sleep(self._shape.delay(attempt))
            attempt += 1

    # the API -----------------------------------------------------------------------------
    async def health(self) -> ServerHealth:
        """``GET /v1/health``: whether the server is up (the one call without a token)."""
        return await self._do(self._shape.health())

    async def stats(self) -> StatsReport:
        """``GET /v1/stats``: the memory's counts and adapters, as ``Memory.stats()``."""
        return await self._do(self._shape.stats())

    async def store(self, content: str, *, type: str, **fields: Any) -> Entry:
        """``POST /v1/store``: write one memory (``Memory.store``'s keywords); never retried."""
        return await self._do(self._shape.store(content, type, fields))

    async def remember(self, text: str, *, subject: str | None = None,
                 idempotency_key: str | None = None, wait: bool = False) -> list[Entry]:
        """``POST /v1/remember``: as the sync client's (``wait=True`` waits for what is
        read off the turns)."""
        return await self._do(self._shape.remember(text, subject, idempotency_key, wait))

    async def recall(self, query: str, *, limit: int = 10, **filters: Any) -> list[Hit]:
        """``POST /v1/recall``: the best ``limit`` memories for ``query`` (filters ``tags``,
        ``types``, ``scope``, ``recency_weight``, ``min_relevance``, ...)."""
        return await self._do(self._shape.recall(query, limit, filters))

    async def search(self, query: str, top_k: int = 10, *, min_score: float | None = None,
               **options: Any) -> list[Hit]:
        """``POST /v1/search``: ``Memory.search`` (modes, filters, ``as_of``); hits scoring
        under ``min_score`` (in [0, 1]) are left out."""
        return await self._do(self._shape.search(query, top_k, min_score, options))

    async def curate(self, query: str | None = None, *, token_budget: int = 2000,
               mode: str | None = None, **filters: Any) -> Curated:
        """``POST /v1/curate``: a prompt block within ``token_budget`` (no query, or
        ``mode="orient"``: the cold-start briefing; ``explain=True`` adds every candidate)."""
        return await self._do(self._shape.curate(query, token_budget, mode, filters))

    async def correct(self, memory_id: str, content: str, *, reason: str | None = None) -> Entry:
        """``POST /v1/correct``: supersede a memory with a correction; never retried."""
        return await self._do(self._shape.correct(memory_id, content, reason))

    async def forget(self, memory_id: str, *, hard: bool = False) -> Entry:
        """``DELETE /v1/forget/{id_or_key}``: archive it, or delete it for good with ``hard``."""
        return await self._do(self._shape.forget(memory_id, hard))

    async def get(self, memory_id: str, *, as_of: datetime | None = None,
            include_archived: bool = False) -> Entry:
        """``GET /v1/memory/{id_or_key}``: the active entry (as of a moment; an archived
        version by id with ``include_archived``); ``NotFoundError`` when there is none."""
        return await self._do(self._shape.get(memory_id, as_of, include_archived))

    async def history(self, memory_id: str) -> list[Entry]:
        """``GET /v1/memory/{id_or_key}/history``: every version, newest first."""
        return await self._do(self._shape.history(memory_id))

    async def correction_chain(self, memory_id: str) -> list[Entry]:
        """Every version of a corrected or superseded memory, newest first."""
        return await self.history(memory_id)

    async def scoped(self, scope: str, query: str, *, limit: int = 10) -> list[Hit]:
        """Recall within one scope (``workspace``, ``shared``, ...)."""
        return await self.recall(query, limit=limit, scope=scope)

    async def list_keys(self, prefix: str = "") -> list[str]:
        """``GET /v1/keys``: the keys of the active memories, starting with ``prefix``."""
        return await self._do(self._shape.list_keys(prefix))

    async def list_entries(self, limit: int = 100, cursor: str | None = None, *,
                     types: Sequence[str] | None = None, tags: Sequence[str] | None = None,
                     scope: str | None = None, since: datetime | None = None,
                     until: datetime | None = None,
                     include_archived: bool = False) -> EntryPage:
        """``GET /v1/entries``: every visible memory, oldest first, ``limit`` at a time;
        pass ``next_cursor`` back for the next page (None: no more)."""
        page: EntryPage = await self._do(self._shape.list_entries(limit, cursor, dict(
            types=types, tags=tags, scope=scope, since=since, until=until,
            include_archived=include_archived)))
        return page

    async def start_session(self, goal: str | None = None) -> SessionInfo | None:
        """``POST /v1/sessions/start``: a working session (``id``, ``goal``, ``started_at``)."""
        return await self._do(self._shape.start_session(goal))

    async def end_session(self) -> SessionInfo | None:
        """``POST /v1/sessions/end``: end it (summarised); ``{}`` when none was open."""
        return await self._do(self._shape.end_session())

    async def consolidate(self, *, apply: bool = False) -> Consolidation:
        """``POST /v1/consolidate``: ``{"report", "applied"}``; a dry run unless ``apply``."""
        return await self._do(self._shape.consolidate(apply))

    async def profile(self, subject: str = "user") -> Profile:
        """``GET /v1/profile``: what the memory holds about ``subject``."""
        return await self._do(self._shape.profile(subject))

    async def export(self, target: str | Path | IO[bytes], **filters: Any) -> int:
        """Write the server's bundle of this tenant to ``target``; returns its entry count."""
        async with self._http.stream("POST", "/v1/export",
                                     json=self._shape.body(**iso(filters))) as response:
            if response.status_code >= 400:
                await response.aread()
                self._shape.check(response)
            count = int(response.headers.get("x-tulving-entries", "0"))
            if isinstance(target, str | Path):
                with open(target, "wb") as handle:
                    async for chunk in response.aiter_bytes():
                        handle.write(chunk)
            else:
                async for chunk in response.aiter_bytes():
                    target.write(chunk)
        return count

    async def export_bundle(self, target: str | Path | IO[bytes], **filters: Any) -> int:
        """``export`` by the TypeScript client's name (``exportBundle``)."""
        return await self.export(target, **filters)

    async def import_bundle(self, source: str | Path | IO[bytes], *,
                            reembedding: str = "auto", on_conflict: str = "newest",
                            dry_run: bool = False) -> ImportSummary:
        """``POST /v1/import``: merge a bundle in, all or nothing; returns the
        import report (``dry_run`` counts without writing)."""
        content = Path(source).read_bytes() if isinstance(source, str | Path) else source.read()
        return await self._do(self._shape.import_bundle(content, reembedding, on_conflict,
                                                        dry_run))

    async def import_from(self, source: str | Path | bytes | IO[bytes], *, format: str,
                          on_conflict: str = "newest", dry_run: bool = False,
                          remap_identity: bool = False) -> MigrationReport:
        """``POST /v1/import/<format>`` (see ``TulvingClient.import_from``)."""
        return await self._do(self._shape.import_from(_content(source), format, on_conflict,
                                                      dry_run, remap_identity))


def _content(source: str | Path | bytes | IO[bytes]) -> bytes:
    """A file's bytes: read from its path, given as bytes, or read from a binary file."""
    if isinstance(source, bytes):
        return source
    return Path(source).read_bytes() if isinstance(source, str | Path) else source.read()


__all__ = ["AsyncTulvingClient", "Consolidation", "ConsolidationReport", "Curated", "Entry",
           "EntryPage", "Hit", "ImportSummary", "ListedDelta", "MigrationReport", "NotFoundError", "Profile",
           "PushAnswer", "ServerError", "ServerHealth", "SessionInfo", "StatsReport",
           "SyncDelta", "TenantAnswer", "TulvingClient", "ValidationError"]
