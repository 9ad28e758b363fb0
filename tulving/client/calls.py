"""The ``/v1`` requests both clients make, built once: each operation is a ``Call`` (the
request, whether it may be retried, and how its answer is read), which the synchronous
and the asynchronous client only send. A call that changes nothing is retried; a write
only when the server makes a repeat a no-op (an idempotency key, a forget)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import attrs
import httpx

from tulving.client.results import (
    Consolidation,
    Curated,
    Entry,
    EntryPage,
    Hit,
    ImportSummary,
    ServerHealth,
    SessionInfo,
    curated,
    hits,
    page,
    read,
    server_error,
)
from tulving.client.wire import segment
from tulving.domain.errors import TulvingError
from tulving.domain.memory_reports import Profile, StatsReport
from tulving.domain.migration_reports import MigrationReport

T = TypeVar("T")


@attrs.frozen
class Call(Generic[T]):
    """One request and how its answer is read (a ``T``)."""

    method: str
    path: str
    retry: bool
    parse: Callable[[Any], T]
    kwargs: Mapping[str, Any] = attrs.field(factory=dict)


def _session(data: Mapping[str, Any]) -> SessionInfo | None:
    """The server's session object; None for ``{}`` (no session was open)."""
    return read(data, SessionInfo) if data else None


class Shape:
    """Request shapes shared by both clients (base URL, token, acting agent, retries)."""

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
                kind, message = error["type"], error["message"]
            except (ValueError, KeyError, TypeError):
                kind, message = "HTTPError", response.text[:500]
            raise server_error(response.status_code, kind, message)
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.content

    # the operations ----------------------------------------------------------------------
    def health(self) -> Call[ServerHealth]:
        return Call("GET", "/v1/health", True, lambda d: read(d, ServerHealth))

    def stats(self) -> Call[StatsReport]:
        return Call("GET", "/v1/stats", True, lambda d: read(d["stats"], StatsReport),
                    {"params": self.params()})

    def store(self, content: str, type: str, fields: Mapping[str, Any]) -> Call[Entry]:
        return Call("POST", "/v1/store", False, lambda d: Entry.of(d["stored"]),
                    {"json": self.body(content=content, type=type, **iso(fields))})

    def remember(self, text: str, subject: str | None,
                 idempotency_key: str | None, wait: bool = False) -> Call[list[Entry]]:
        return Call("POST", "/v1/remember", idempotency_key is not None,
                    lambda d: [Entry.of(e) for e in d["entries"]],
                    {"json": self.body(text=text, subject=subject,
                                       idempotency_key=idempotency_key,
                                       **({"wait": True} if wait else {}))})

    def recall(self, query: str, limit: int, filters: Mapping[str, Any]) -> Call[list[Hit]]:
        return Call("POST", "/v1/recall", True, lambda d: hits(d["results"]),
                    {"json": self.body(query=query, limit=limit, **filters)})

    def search(self, query: str, top_k: int, min_score: float | None,
               options: Mapping[str, Any]) -> Call[list[Hit]]:
        return Call("POST", "/v1/search", True, lambda d: hits(d["results"]),
                    {"json": self.body(query=query, top_k=top_k, min_score=min_score,
                                       **iso(options))})

    def curate(self, query: str | None, token_budget: int, mode: str | None,
               filters: Mapping[str, Any]) -> Call[Curated]:
        return Call("POST", "/v1/curate", True, lambda d: curated(d["curated"]),
                    {"json": self.body(query=query, token_budget=token_budget, mode=mode,
                                       **iso(filters))})

    def correct(self, memory_id: str, content: str, reason: str | None) -> Call[Entry]:
        return Call("POST", "/v1/correct", False, lambda d: Entry.of(d["corrected"]),
                    {"json": self.body(memory_id=memory_id, content=content, reason=reason)})

    def forget(self, memory_id: str, hard: bool) -> Call[Entry]:
        return Call("DELETE", f"/v1/forget/{segment(memory_id)}", True,
                    lambda d: Entry.of(d["forgotten"]),
                    {"params": self.params(hard=str(hard).lower())})

    def get(self, memory_id: str, as_of: Any, include_archived: bool) -> Call[Entry]:
        return Call("GET", f"/v1/memory/{segment(memory_id)}", True, lambda d: Entry.of(d["entry"]),
                    {"params": self.params(**iso({"as_of": as_of}), include_archived=str(
                        include_archived).lower())})

    def history(self, memory_id: str) -> Call[list[Entry]]:
        return Call("GET", f"/v1/memory/{segment(memory_id)}/history", True,
                    lambda d: [Entry.of(e) for e in d["versions"]],
                    {"params": self.params()})

    def list_keys(self, prefix: str) -> Call[list[str]]:
        return Call("GET", "/v1/keys", True, lambda d: list(d["keys"]),
                    {"params": self.params(prefix=prefix)})

    def list_entries(self, limit: int, cursor: str | None,
                     filters: Mapping[str, Any]) -> Call[EntryPage]:
        params = self.params(limit=limit, cursor=cursor, **iso(filters))
        for plural, single in (("types", "type"), ("tags", "tag")):
            if plural in params:
                params[single] = list(params.pop(plural))
        if "include_archived" in params:
            params["include_archived"] = str(bool(params["include_archived"])).lower()
        return Call("GET", "/v1/entries", True, page, {"params": params})

    def start_session(self, goal: str | None) -> Call[SessionInfo | None]:
        return Call("POST", "/v1/sessions/start", False, lambda d: _session(d["session"]),
                    {"json": self.body(goal=goal)})

    def end_session(self) -> Call[SessionInfo | None]:
        return Call("POST", "/v1/sessions/end", False, lambda d: _session(d["session"]),
                    {"json": self.body()})

    def consolidate(self, apply: bool) -> Call[Consolidation]:
        return Call("POST", "/v1/consolidate", not apply, lambda d: read(d, Consolidation),
                    {"json": self.body(apply=apply)})

    def profile(self, subject: str) -> Call[Profile]:
        return Call("GET", "/v1/profile", True, lambda d: read(d["profile"], Profile),
                    {"params": self.params(subject=subject)})

    def import_bundle(self, content: bytes, reembedding: str, on_conflict: str,
                      dry_run: bool) -> Call[ImportSummary]:
        return Call("POST", "/v1/import", False, lambda d: read(d["report"], ImportSummary),
                    {"content": content, "headers": {"Content-Type": "application/zip"},
                     "params": self.params(reembedding=reembedding, on_conflict=on_conflict,
                                           dry_run=str(dry_run).lower())})

    def import_from(self, content: bytes, fmt: str, on_conflict: str, dry_run: bool,
                    remap_identity: bool) -> Call[MigrationReport]:
        return Call("POST", f"/v1/import/{fmt}", False,
                    lambda d: read(d["report"], MigrationReport),
                    {"content": content, "headers": {"Content-Type": "application/json"},
                     "params": self.params(on_conflict=on_conflict,
                                           dry_run=str(dry_run).lower(),
                                           remap_identity=str(remap_identity).lower())})


def iso(options: Mapping[str, Any]) -> dict[str, Any]:
    """Datetimes as ISO strings for the JSON body or the query string."""
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in options.items()}
