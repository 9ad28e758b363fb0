"""The ``/v1`` endpoints: seed 001's set (remember, recall, correct, forget, memory, stats,
health, export, import) and Tulving's own (store, search, curate, history, keys, entries,
sessions, consolidate, profile, audit, as-of reads). Each is thin: authenticate, pick the
caller's memory, run one library call off the event loop, render it redacted."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import PlainTextResponse, Response, StreamingResponse

from tulving.application.plumbing.sealed_spool import sealed_spool
from tulving.application.portability.bundle_format import declared_entries
from tulving.domain.records import SessionRecord
from tulving.interfaces import render
from tulving.interfaces.http import documented as D
from tulving.interfaces.http import schemas as S
from tulving.interfaces.http.auth_gate import authenticated
from tulving.interfaces.http.errors import HTTPError
from tulving.interfaces.http.grammars import FILLED, IDENTITY, IDENTITY_MAX
from tulving.interfaces.http.limits import Limits, bounded
from tulving.interfaces.http.tenancy import Tenancy

ForeignFormat = Literal["mem0", "zep", "letta", "otel"]
ExportFormat = Literal["letta", "otel"]

if TYPE_CHECKING:
    from tulving.application.memory import Memory

Named = dict[str, Any]
UserQ = Annotated[str | None, Query(min_length=1, max_length=IDENTITY_MAX, pattern=IDENTITY)]


def include_routes(app: FastAPI, tenancy: Tenancy, *, limits: Limits | None = None,
                   timeout: float | None = None, version: int) -> None:
    """Mount the ``/v1`` router on ``app`` (a separate function so other doors, such as an
    inspector UI, can be mounted beside it on the same app)."""
    if limits is None:
        limits = Limits() if timeout is None else Limits(timeout=timeout)
    router = APIRouter(prefix="/v1", dependencies=[Depends(authenticated(tenancy))])

    async def act(request: Request, named: Named, fn: Callable[[Memory], dict[str, Any]], *,
                  write: bool = False) -> dict[str, Any]:
        # the token, the caller's view and the call: one worker thread, one read scope
        # of the store (Tenancy.serve), under the call's time limit
        authorization = request.state.tulving_authorization
        result = await bounded(tenancy.serve, authorization, named, fn, write,
                               timeout=limits.timeout, limiter=tenancy.limiter,
                               share=tenancy.share, tenant=authorization or "")
        return {"schema_version": version, **result}

    def named(body: S.Body) -> Named:
        return body.model_dump(include={"user_id", "workspace_id", "agent_id"})

    def query_named(user_id: str | None, workspace_id: str | None,
                    agent_id: str | None) -> Named:
        return {"user_id": user_id, "workspace_id": workspace_id, "agent_id": agent_id}

    @router.get("/health")
    async def health() -> dict[str, Any]:
        from tulving.version import __version__

        return {"schema_version": version, "status": "ok", "version": __version__}

    @router.get("/stats", responses=D.answers(*D.READ))
    async def stats(request: Request, user_id: UserQ = None, workspace_id: UserQ = None,
                    agent_id: UserQ = None) -> dict[str, Any]:
        return await act(request, query_named(user_id, workspace_id, agent_id),
                         lambda m: {"stats": render.scrub(m.stats())})

    @router.post("/remember", responses=D.answers(*D.WRITE))
    async def remember(request: Request, body: S.Remember) -> dict[str, Any]:
        refused = limits.remember_refusal(body.text)
        if refused:
            raise HTTPError(413, "PayloadTooLarge", refused)

        def do(m: Memory) -> dict[str, Any]:
            entries = m.remember(body.text, subject=body.subject, source_type=body.source_type,
                                 valid_from=body.valid_from,
                                 idempotency_key=body.idempotency_key,
                                 wait=True if body.wait else None)
            return {"entries": [render.entry_dict(e) for e in entries]}
        return await act(request, named(body), do, write=True)

    @router.post("/store", responses=D.answers(*D.WRITE))
    async def store(request: Request, body: S.Store) -> dict[str, Any]:
        # what the request did not send stays unnamed: storing a key again keeps the
        # earlier version's tags, importance, pinned flag and metadata
        fields = body.model_dump(exclude={"user_id", "workspace_id", "agent_id"},
                                 exclude_none=True, exclude_unset=True)
        def stored(m: Memory) -> dict[str, Any]:
            done = m.store(**fields, report=True)
            return {"stored": render.entry_dict(done.entry), **done.as_dict()}

        return await act(request, named(body), stored, write=True)

    @router.post("/recall", responses=D.answers(*D.BODY))
    async def recall(request: Request, body: S.Recall) -> dict[str, Any]:
        return await act(request, named(body), lambda m: {"results": _recall(m, body)})

    @router.post("/search", responses=D.answers(*D.BODY))
    async def search(request: Request, body: S.Search) -> dict[str, Any]:
        def do(m: Memory) -> dict[str, Any]:
            results = m.search(body.query, body.top_k, mode=body.mode, types=body.types,
                               tags=body.tags, since=body.since, until=body.until,
                               min_score=body.min_score, as_of=body.as_of)
            return {"results": render.search_dicts(results)}
        return await act(request, named(body), do)

    @router.post("/curate", responses=D.answers(*D.BODY))
    async def curate(request: Request, body: S.Curate) -> dict[str, Any]:
        def do(m: Memory) -> dict[str, Any]:
            curated = m.curate(body.query, token_budget=body.token_budget, mode=body.mode,
                               types=body.types, tags=body.tags, since=body.since,
                               until=body.until, explain=body.explain)
            return {"curated": render.curated_dict(curated)}
        return await act(request, named(body), do)

    @router.post("/correct", responses=D.answers(*D.WRITE, 404))
    async def correct(request: Request, body: S.Correct) -> dict[str, Any]:
        def do(m: Memory) -> dict[str, Any]:
            fields: dict[str, Any] = {}
            if body.pinned is not None:
                fields["pinned"] = body.pinned
            if body.reason:
                current = m.get(body.memory_id)
                fields["metadata"] = {**dict(current.metadata), "correction_reason": body.reason}
            return {"corrected": render.entry_dict(m.correct(body.memory_id, body.content,
                                                              **fields))}
        return await act(request, named(body), do, write=True)

    @router.delete("/forget/{memory_id:memory_id}", responses=D.answers(*D.BY_ID, 409))
    async def forget(request: Request, memory_id: S.MemoryId, hard: bool = False,
                     user_id: UserQ = None, workspace_id: UserQ = None,
                     agent_id: UserQ = None) -> dict[str, Any]:
        return await act(request, query_named(user_id, workspace_id, agent_id),
                         lambda m: {"forgotten": render.entry_dict(m.forget(memory_id,
                                                                             hard=hard))},
                         write=True)

    @router.get("/memory/{memory_id:memory_id}/history", responses=D.answers(*D.BY_ID))
    async def history(request: Request, memory_id: S.MemoryId, user_id: UserQ = None,
                      workspace_id: UserQ = None, agent_id: UserQ = None) -> dict[str, Any]:
        def do(m: Memory) -> dict[str, Any]:
            entry = m.get(memory_id)
            versions = m.history(entry.key) if entry.key else [entry]
            return {"versions": [render.entry_dict(e) for e in versions]}
        return await act(request, query_named(user_id, workspace_id, agent_id), do)

    @router.get("/memory/{memory_id:memory_id}/audit", responses=D.answers(*D.BY_ID))
    async def entry_audit(request: Request, memory_id: S.MemoryId,
                          limit: Annotated[int, Query(ge=1, le=1000)] = 200,
                          user_id: UserQ = None, workspace_id: UserQ = None,
                          agent_id: UserQ = None) -> dict[str, Any]:
        def do(m: Memory) -> dict[str, Any]:
            records = m.audit_log(memory_id)
            return {"records": [render.scrub({"seq": r.seq, "at": r.at, "actor": r.actor,
                                              "action": r.action, "entry_id": r.entry_id,
                                              "details": dict(r.details)})
                                for r in records[-limit:]],
                    "total": len(records)}
        return await act(request, query_named(user_id, workspace_id, agent_id), do)

    @router.get("/memory/{memory_id:memory_id}", responses=D.answers(*D.BY_ID))
    async def get(request: Request, memory_id: S.MemoryId, as_of: S.Time | None = None,
                  include_archived: bool = False, user_id: UserQ = None,
                  workspace_id: UserQ = None, agent_id: UserQ = None) -> dict[str, Any]:
        return await act(request, query_named(user_id, workspace_id, agent_id),
                         lambda m: {"entry": render.entry_dict(
                             m.get(memory_id, as_of=as_of, include_archived=include_archived))})

    @router.get("/keys", responses=D.answers(*D.READ))
    async def keys(request: Request, prefix: Annotated[str, Query(max_length=200)] = "",
                   user_id: UserQ = None, workspace_id: UserQ = None,
                   agent_id: UserQ = None) -> dict[str, Any]:
        return await act(request, query_named(user_id, workspace_id, agent_id),
                         lambda m: {"keys": render.scrub(m.list_keys(prefix))})

    @router.get("/entries", responses=D.answers(*D.READ))
    async def entries(request: Request, limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                      cursor: Annotated[str | None, Query(pattern=S.CURSOR)] = None,
                      type: Annotated[list[S.MemoryTypeName] | None, Query()] = None,
                      tag: Annotated[list[S.Tag] | None, Query()] = None,
                      scope: S.ScopeName | None = None, since: S.Time | None = None,
                      until: S.Time | None = None, include_archived: bool = False,
                      user_id: UserQ = None, workspace_id: UserQ = None,
                      agent_id: UserQ = None) -> dict[str, Any]:
        def do(m: Memory) -> dict[str, Any]:
            page = m.list_entries(limit, cursor, types=type, tags=tag, since=since,
                                  until=until, include_archived=include_archived,
                                  scope=scope)
            return {"entries": [render.entry_dict(e) for e in page.entries],
                    "next_cursor": page.next_cursor}
        return await act(request, query_named(user_id, workspace_id, agent_id), do)

    @router.post("/sessions/start", responses=D.answers(*D.WRITE))
    async def session_start(request: Request, body: S.SessionStart) -> dict[str, Any]:
        return await act(request, named(body),
                         lambda m: {"session": render.scrub(_session(m.start_session(body.goal)))},
                         write=True)

    @router.post("/sessions/end", responses=D.answers(*D.WRITE))
    async def session_end(request: Request, body: S.Body) -> dict[str, Any]:
        return await act(request, named(body),
                         lambda m: {"session": render.scrub(_session(m.end_session()))},
                         write=True)

    @router.post("/consolidate", responses=D.answers(*D.WRITE))
    async def consolidate(request: Request, body: S.Consolidate) -> dict[str, Any]:
        return await act(request, named(body),
                         lambda m: {"report": render.scrub(m.consolidate(dry_run=not body.apply)),
                                    "applied": body.apply}, write=body.apply)

    @router.get("/profile", responses=D.answers(*D.READ))
    async def profile(request: Request, subject: Annotated[str, Query(
                          min_length=1, max_length=200, pattern=FILLED)] = "user",
                      user_id: UserQ = None, workspace_id: UserQ = None,
                      agent_id: UserQ = None) -> dict[str, Any]:
        return await act(request, query_named(user_id, workspace_id, agent_id),
                         lambda m: {"profile": render.scrub(m.profile(subject))})

    @router.get("/audit", response_class=Response, responses={
        **D.answers(*D.READ), 200: D.content("application/x-ndjson", "one audit record a line",
                                         text=True)})
    async def audit(request: Request, user_id: UserQ = None, workspace_id: UserQ = None,
                    agent_id: UserQ = None) -> PlainTextResponse:
        def do(m: Memory) -> dict[str, Any]:
            out = io.StringIO()
            m.export_audit(out)
            return {"ndjson": out.getvalue()}
        result = await act(request, query_named(user_id, workspace_id, agent_id), do)
        return PlainTextResponse(result["ndjson"], media_type="application/x-ndjson")

    @router.post("/export", response_class=StreamingResponse, responses={
        **D.answers(*D.BODY), 200: D.content("application/zip", "the bundle")})
    async def export(request: Request, body: S.Export) -> StreamingResponse:
        # sealed, not a named file in clear in the system's temp folder (an encrypted
        # server's export would otherwise sit there readable until it is streamed)
        spool = sealed_spool(16 * 1024 * 1024)

        def do(m: Memory) -> dict[str, Any]:
            report = m.export(spool, tags=body.tags, types=body.types, scope=body.scope,
                              since=body.since, until=body.until,
                              include_archived=body.include_archived,
                              include_embeddings=body.include_embeddings, redact=body.redact)
            return {"entries": report.entries}
        try:
            result = await act(request, named(body), do)
        except BaseException:
            spool.close()
            raise
        return StreamingResponse(_stream_spool(spool), media_type="application/zip",
                                 headers={"X-Tulving-Entries": str(result["entries"]),
                                          "Content-Disposition":
                                          'attachment; filename="memory.tulving"'})

    @router.post("/import", responses=D.answers(*D.WRITE),
                 openapi_extra=D.upload("application/zip", "a bundle (tulving export)"))
    async def import_bundle(request: Request,
                            reembedding: Literal["auto", "keep", "drop"] = "auto",
                            on_conflict: Literal["newest", "keep_existing",
                                                 "overwrite"] = "newest",
                            dry_run: bool = False,
                            user_id: UserQ = None, workspace_id: UserQ = None,
                            agent_id: UserQ = None) -> dict[str, Any]:
        spool = sealed_spool(16 * 1024 * 1024)
        try:
            async for chunk in request.stream():
                spool.write(chunk)
            spool.seek(0)
            declared = await tenancy.run(declared_entries, spool)
            refused = limits.import_refusal(declared) if declared is not None else None
            if refused:
                raise HTTPError(413, "PayloadTooLarge", refused)

            def do(m: Memory) -> dict[str, Any]:
                # ids of the tenant's own: another tenant's ids answer as unknown ones
                report = m.import_bundle(spool, reembedding=reembedding,
                                         on_conflict=on_conflict, dry_run=dry_run,
                                         new_ids="derive")
                return {"report": {**report.counts(), "dry_run": report.dry_run,
                                   "added_ids": report.added, "updated_ids": report.updated,
                                   "conflict_ids": report.conflicts}}
            return await act(request, query_named(user_id, workspace_id, agent_id), do,
                             write=True)
        finally:
            spool.close()

    @router.post("/import/{source_format}", responses=D.answers(*D.WRITE),
                 openapi_extra=D.upload("application/json",
                                        "a file of another system, in the named format: "
                                        "one JSON document, an object or a list",
                                        {"type": ["object", "array"]}))
    async def import_from(request: Request, source_format: ForeignFormat,
                          on_conflict: Literal["newest", "keep_existing",
                                               "overwrite"] = "newest",
                          dry_run: bool = False,
                          remap_identity: bool = False, user_id: UserQ = None,
                          workspace_id: UserQ = None, agent_id: UserQ = None) -> dict[str, Any]:
        # read whole (the file is parsed as one JSON document): the body limit for
        # /v1/import/<format> is a sync delta's, far below a streamed bundle's
        content = b"".join([chunk async for chunk in request.stream()])

        def do(m: Memory) -> dict[str, Any]:
            report = m.import_from(content, format=source_format, dry_run=dry_run,
                                   remap_identity=remap_identity, on_conflict=on_conflict,
                                   max_bytes=limits.max_delta_bytes)
            return {"report": report.as_dict()}
        return await act(request, query_named(user_id, workspace_id, agent_id), do,
                         write=True)

    @router.post("/export/{target_format}", responses=D.answers(*D.BODY))
    async def export_to(request: Request, target_format: ExportFormat,
                        body: S.Export) -> dict[str, Any]:
        def do(m: Memory) -> dict[str, Any]:
            out = io.BytesIO()
            report = m.export_to(out, format=target_format, tags=body.tags, types=body.types,
                                 since=body.since, until=body.until,
                                 include_archived=body.include_archived, redact=body.redact)
            return {"report": report.as_dict(), "document": json.loads(out.getvalue())}
        return await act(request, named(body), do)

    app.include_router(router)


def _stream_spool(spool: IO[bytes]) -> Iterator[bytes]:
    try:
        spool.seek(0)
        while chunk := spool.read(1 << 20):
            yield chunk
    finally:
        spool.close()


def _session(record: SessionRecord | None) -> dict[str, Any]:
    if record is None:
        return {}
    return {"id": record.id, "goal": record.goal, "started_at": record.started_at,
            "ended_at": record.ended_at}


def _recall(m: Memory, body: S.Recall) -> list[dict[str, Any]]:
    """Seed 001 recall: search (corrected originals never surface), then the filters the
    search has no index for, then optional recency and confidence weighting."""
    extra = any((body.scope, body.model_id, body.source_instance))
    results = m.search(body.query, min(100, body.limit * (4 if extra else 1)),
                       types=body.types, tags=body.tags, min_score=body.min_relevance)
    kept = [r for r in results
            if (body.scope is None or r.entry.scope.value == body.scope)
            and (body.model_id is None or r.entry.model_id == body.model_id)
            and (body.source_instance is None or r.entry.source_instance == body.source_instance)]
    now = m.operator.now()
    relevance_weight = max(0.0, 1.0 - body.recency_weight - body.confidence_weight)
    scored = []
    for r in kept:
        age_days = max(0.0, (now - r.entry.valid_from).total_seconds() / 86400)
        score = (relevance_weight * r.score + body.recency_weight * math.exp(-age_days / 30)
                 + body.confidence_weight * r.entry.confidence)
        scored.append((score, r))
    scored.sort(key=lambda pair: -pair[0])
    out = []
    for score, r in scored[: body.limit]:
        item = render.search_dicts([r])[0]
        item["relevance"] = round(score, 6)
        out.append(item)
    return out
