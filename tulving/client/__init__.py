"""Python clients of the memory server (``tulving serve``): ``TulvingClient`` and
``AsyncTulvingClient``, on httpx (extra ``client``).

Method names match ``Memory`` where they overlap (``remember``, ``recall``, ``store``,
``search``, ``curate``, ``correct``, ``forget``, ``get``, ``history``, ``export``,
``import_bundle``, ``stats``, ``health``) and results are typed (``Entry``, ``Hit``,
``Curated``). Every call has a timeout. Calls that change nothing, and ``remember`` with an
``idempotency_key``, are retried on 429, 503 and connection errors with exponential
backoff and full jitter; other writes are never repeated behind the caller's back. An
error response raises ``ServerError`` carrying the server's typed error (``kind``,
``status``).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import attrs
import httpx

from tulving.domain.errors import TulvingError

RETRY_STATUS = frozenset({429, 503})
DEFAULT_TIMEOUT = 30.0


class ServerError(TulvingError):
    """The server answered with an error: ``status``, ``kind`` (its error type)."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(f"{status} {kind}: {message}")
        self.status, self.kind, self.message = status, kind, message


@attrs.frozen
class Entry:
    """A memory as the server shows it: the common fields, and ``data``, the whole JSON
    object (timestamps, importance, provenance, links)."""

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


@attrs.frozen
class Hit:
    """One search or recall result: the entry, its score in [0, 1] (higher is better) and
    how it matched (``hybrid``, ``semantic``, ``lexical`` or ``key``)."""

    entry: Entry
    score: float
    match_type: str


@attrs.frozen
class Curated:
    """A curated block: ``content`` (never over ``token_budget`` tokens), what it cost, and
    the entries it shows, each with its disclosure."""

    content: str
    token_count: int
    token_budget: int
    entries: tuple[Mapping[str, Any], ...]
    candidates: tuple[Mapping[str, Any], ...] = ()
    """With ``curate(..., explain=True)``: every ranked candidate, its score broken down,
    its disclosure ("full", "truncated", "excerpt", "index", "left out") and its token
    cost."""


def _hits(rows: list[dict[str, Any]]) -> list[Hit]:
    return [Hit(Entry.of(r), float(r.get("relevance", r["score"])), r["match_type"])
            for r in rows]


def _curated(data: Mapping[str, Any]) -> Curated:
    return Curated(data.get("content") or "", int(data.get("token_count", 0)),
                   int(data.get("token_budget", 0)), tuple(data.get("entries") or ()),
                   tuple(data.get("candidates") or ()))


class _Shape:
    """Request shapes and result parsing shared by both clients."""

    def __init__(self, base_url: str, token: str, agent_id: str | None, retries: int,
                 backoff: float) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise TulvingError(f"base_url must be an http(s) URL, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"}
        self.agent_id, self.retries, self.backoff = agent_id, retries, backoff

    def body(self, **fields: Any) -> dict[str, Any]:
        out = {k: v for k, v in fields.items() if v is not None}
        if self.agent_id is not None:
            out.setdefault("agent_id", self.agent_id)
        return out

    def params(self, **fields: Any) -> dict[str, Any]:
        return self.body(**fields)

    def delay(self, attempt: int) -> float:
        return random.uniform(0, self.backoff * (2 ** attempt))  # full jitter

    @staticmethod
    def check(response: httpx.Response) -> Any:
        if response.status_code >= 400:
            try:
                error = response.json()["error"]
                raise ServerError(response.status_code, error["type"], error["message"])
            except (ValueError, KeyError, TypeError):
                raise ServerError(response.status_code, "HTTPError", response.text[:500]) from None
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.content


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
        self._shape = _Shape(base_url, token, agent_id, retries, backoff)
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

    def _call(self, method: str, path: str, *, retry: bool, **kwargs: Any) -> Any:
        attempt = 0
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
    def health(self) -> dict[str, Any]:
        """``GET /v1/health``: whether the server is up (the one call without a token)."""
        return dict(self._call("GET", "/v1/health", retry=True))

    def stats(self) -> dict[str, Any]:
        """``GET /v1/stats``: the memory's counts and adapters, as ``Memory.stats()``."""
        return dict(self._call("GET", "/v1/stats", retry=True,
                               params=self._shape.params())["stats"])

    def store(self, content: str, *, type: str, **fields: Any) -> Entry:
        """``POST /v1/store``: write one memory (``Memory.store``'s keywords); never retried."""
        data = self._call("POST", "/v1/store", retry=False,
                          json=self._shape.body(content=content, type=type, **fields))
        return Entry.of(data["stored"])

    def remember(self, text: str, *, subject: str | None = None,
                 idempotency_key: str | None = None) -> list[Entry]:
        """``POST /v1/remember``: turns in, typed memories out; retried only with an
        ``idempotency_key``, which makes a repeat a no-op."""
        data = self._call("POST", "/v1/remember", retry=idempotency_key is not None,
                          json=self._shape.body(text=text, subject=subject,
                                                idempotency_key=idempotency_key))
        return [Entry.of(e) for e in data["entries"]]

    def recall(self, query: str, *, limit: int = 10, **filters: Any) -> list[Hit]:
        """``POST /v1/recall``: the best ``limit`` memories for ``query`` (filters ``tags``,
        ``types``, ``scope``, ``recency_weight``, ``min_relevance``, ...)."""
        data = self._call("POST", "/v1/recall", retry=True,
                          json=self._shape.body(query=query, limit=limit, **filters))
        return _hits(data["results"])

    def search(self, query: str, top_k: int = 10, **options: Any) -> list[Hit]:
        """``POST /v1/search``: ``Memory.search`` (modes, filters, ``as_of``)."""
        data = self._call("POST", "/v1/search", retry=True,
                          json=self._shape.body(query=query, top_k=top_k, **_iso(options)))
        return _hits(data["results"])

    def curate(self, query: str | None = None, *, token_budget: int = 2000,
               mode: str = "query", **filters: Any) -> Curated:
        """``POST /v1/curate``: a prompt block within ``token_budget`` (``mode="orient"``
        needs no query; ``explain=True`` adds every candidate)."""
        data = self._call("POST", "/v1/curate", retry=True,
                          json=self._shape.body(query=query, token_budget=token_budget,
                                                mode=mode, **_iso(filters)))
        return _curated(data["curated"])

    def correct(self, memory_id: str, content: str, *, reason: str | None = None) -> Entry:
        """``POST /v1/correct``: supersede a memory with a correction; never retried."""
        data = self._call("POST", "/v1/correct", retry=False,
                          json=self._shape.body(memory_id=memory_id, content=content,
                                                reason=reason))
        return Entry.of(data["corrected"])

    def forget(self, memory_id: str, *, hard: bool = False) -> Entry:
        """``DELETE /v1/forget/{id_or_key}``: archive it, or delete it for good with ``hard``."""
        data = self._call("DELETE", f"/v1/forget/{memory_id}", retry=True,
                          params=self._shape.params(hard=str(hard).lower()))
        return Entry.of(data["forgotten"])

    def get(self, memory_id: str) -> Entry:
        """``GET /v1/memory/{id_or_key}``: the active entry."""
        data = self._call("GET", f"/v1/memory/{memory_id}", retry=True,
                          params=self._shape.params())
        return Entry.of(data["entry"])

    def history(self, memory_id: str) -> list[Entry]:
        """``GET /v1/memory/{id_or_key}/history``: every version, newest first."""
        data = self._call("GET", f"/v1/memory/{memory_id}/history", retry=True,
                          params=self._shape.params())
        return [Entry.of(e) for e in data["versions"]]

    def correction_chain(self, memory_id: str) -> list[Entry]:
        """Every version of a corrected or superseded memory, newest first."""
        return self.history(memory_id)

    def scoped(self, scope: str, query: str, *, limit: int = 10) -> list[Hit]:
        """Recall within one scope (``workspace``, ``shared``, ...)."""
        return self.recall(query, limit=limit, scope=scope)

    def export(self, target: str | Path | IO[bytes], **filters: Any) -> int:
        """Write the server's bundle of this tenant to ``target``; returns its entry count."""
        with self._http.stream("POST", "/v1/export", json=self._shape.body(**_iso(filters))) \
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

    def import_bundle(self, source: str | Path | IO[bytes], *, reembedding: str = "auto",
                      on_conflict: str = "newest", dry_run: bool = False) -> dict[str, Any]:
        """``POST /v1/import``: merge a bundle in, all or nothing; returns the
        import report (``dry_run`` counts without writing)."""
        content = Path(source).read_bytes() if isinstance(source, str | Path) else source.read()
        data = self._call("POST", "/v1/import", retry=False, content=content,
                          headers={"Content-Type": "application/zip"},
                          params=self._shape.params(reembedding=reembedding,
                                                    on_conflict=on_conflict,
                                                    dry_run=str(dry_run).lower()))
        return dict(data["report"])

    # sync (``Memory.sync(client)``; see tulving.application.portability.sync) ------------
    @property
    def sync_id(self) -> str:
        """Watermarks are kept per server, token and agent."""
        import hashlib

        token = self._shape.headers["Authorization"]
        digest = hashlib.sha256(token.encode()).hexdigest()[:16]
        return f"{self._shape.base_url}|{digest}|{self._shape.agent_id or ''}"

    def sync_push(self, device: str, data: bytes, e2e: bool) -> dict[str, Any]:
        """Append a delta; safe to retry: the same bytes from one device are one delta."""
        return dict(self._call("POST", "/v1/sync/deltas", retry=True, content=data,
                               headers={"Content-Type": "application/octet-stream",
                                        "X-Tulving-E2E": "1" if e2e else "0"},
                               params=self._shape.params(device=device)))

    def sync_list(self, after: int, limit: int) -> list[dict[str, Any]]:
        """The tenant's deltas after sequence number ``after`` (for ``Memory.sync``)."""
        data = self._call("GET", "/v1/sync/deltas", retry=True,
                          params=self._shape.params(after=after, limit=limit))
        return list(data["deltas"])

    def sync_fetch(self, seq: int) -> bytes:
        """One delta's bytes by sequence number (for ``Memory.sync``)."""
        data = self._call("GET", f"/v1/sync/deltas/{int(seq)}", retry=True,
                          params=self._shape.params())
        return bytes(data)

    def sync_tenant(self) -> dict[str, Any] | None:
        """The tenant this token acts for, ``{"user_id", "workspace_id"}`` (None from a
        server older than the question)."""
        try:
            data = self._call("GET", "/v1/sync/tenant", retry=True,
                              params=self._shape.params())
        except ServerError as exc:
            if exc.status == 404:
                return None
            raise
        return {"user_id": data.get("user_id"), "workspace_id": data.get("workspace_id")}

    def sync_quarantined(self, device: str | None = None,
                         after: int = 0) -> list[dict[str, Any]] | None:
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
        return list(data["deltas"])


class AsyncTulvingClient:
    """The same API with ``async def`` methods, on ``httpx.AsyncClient``."""

    def __init__(self, base_url: str, token: str, *, agent_id: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, retries: int = 3, backoff: float = 0.2,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._shape = _Shape(base_url, token, agent_id, retries, backoff)
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

    async def _call(self, method: str, path: str, *, retry: bool, **kwargs: Any) -> Any:
        attempt = 0
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

    async def health(self) -> dict[str, Any]:
        """``GET /v1/health``: whether the server is up (the one call without a token)."""
        return dict(await self._call("GET", "/v1/health", retry=True))

    async def stats(self) -> dict[str, Any]:
        """``GET /v1/stats``: the memory's counts and adapters, as ``Memory.stats()``."""
        data = await self._call("GET", "/v1/stats", retry=True, params=self._shape.params())
        return dict(data["stats"])

    async def store(self, content: str, *, type: str, **fields: Any) -> Entry:
        """``POST /v1/store``: write one memory (``Memory.store``'s keywords); never retried."""
        data = await self._call("POST", "/v1/store", retry=False,
                                json=self._shape.body(content=content, type=type, **fields))
        return Entry.of(data["stored"])

    async def remember(self, text: str, *, subject: str | None = None,
                       idempotency_key: str | None = None) -> list[Entry]:
        """``POST /v1/remember``: turns in, typed memories out; retried only with an
        ``idempotency_key``, which makes a repeat a no-op."""
        data = await self._call("POST", "/v1/remember", retry=idempotency_key is not None,
                                json=self._shape.body(text=text, subject=subject,
                                                      idempotency_key=idempotency_key))
        return [Entry.of(e) for e in data["entries"]]

    async def recall(self, query: str, *, limit: int = 10, **filters: Any) -> list[Hit]:
        """``POST /v1/recall``: the best ``limit`` memories for ``query`` (filters ``tags``,
        ``types``, ``scope``, ``recency_weight``, ``min_relevance``, ...)."""
        data = await self._call("POST", "/v1/recall", retry=True,
                                json=self._shape.body(query=query, limit=limit, **filters))
        return _hits(data["results"])

    async def search(self, query: str, top_k: int = 10, **options: Any) -> list[Hit]:
        """``POST /v1/search``: ``Memory.search`` (modes, filters, ``as_of``)."""
        data = await self._call("POST", "/v1/search", retry=True,
                                json=self._shape.body(query=query, top_k=top_k,
                                                      **_iso(options)))
        return _hits(data["results"])

    async def curate(self, query: str | None = None, *, token_budget: int = 2000,
                     mode: str = "query", **filters: Any) -> Curated:
        """``POST /v1/curate``: a prompt block within ``token_budget`` (``mode="orient"``
        needs no query; ``explain=True`` adds every candidate)."""
        data = await self._call("POST", "/v1/curate", retry=True,
                                json=self._shape.body(query=query, token_budget=token_budget,
                                                      mode=mode, **_iso(filters)))
        return _curated(data["curated"])

    async def correct(self, memory_id: str, content: str, *,
                      reason: str | None = None) -> Entry:
        """``POST /v1/correct``: supersede a memory with a correction; never retried."""
        data = await self._call("POST", "/v1/correct", retry=False,
                                json=self._shape.body(memory_id=memory_id, content=content,
                                                      reason=reason))
        return Entry.of(data["corrected"])

    async def forget(self, memory_id: str, *, hard: bool = False) -> Entry:
        """``DELETE /v1/forget/{id_or_key}``: archive it, or delete it for good with ``hard``."""
        data = await self._call("DELETE", f"/v1/forget/{memory_id}", retry=True,
                                params=self._shape.params(hard=str(hard).lower()))
        return Entry.of(data["forgotten"])

    async def get(self, memory_id: str) -> Entry:
        """``GET /v1/memory/{id_or_key}``: the active entry."""
        data = await self._call("GET", f"/v1/memory/{memory_id}", retry=True,
                                params=self._shape.params())
        return Entry.of(data["entry"])

    async def history(self, memory_id: str) -> list[Entry]:
        """``GET /v1/memory/{id_or_key}/history``: every version, newest first."""
        data = await self._call("GET", f"/v1/memory/{memory_id}/history", retry=True,
                                params=self._shape.params())
        return [Entry.of(e) for e in data["versions"]]


def _iso(options: Mapping[str, Any]) -> dict[str, Any]:
    """Datetimes as ISO strings for the JSON body."""
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in options.items()}


__all__ = ["AsyncTulvingClient", "Curated", "Entry", "Hit", "ServerError", "TulvingClient"]
