"""``/v1/sync``: the endpoints devices sync through (the rules are in
:mod:`tulving.application.portability.sync_service`; the device side is
:mod:`tulving.application.portability.sync`).

- ``POST /v1/sync/deltas?device=HEX`` with the delta's bytes: refused before anything is
  logged when the device name, the delta or its tenant is wrong; else logged (the same
  bytes twice from one device are one delta) and, when plain, merged into the server's
  store before the answer, which says what became of it: ``state`` ``merged``,
  ``stored`` (end to end encrypted: the server has no key) or ``quarantined`` (with the
  ``reason``; never handed to other devices).
- ``GET /v1/sync/deltas?after=SEQ&limit=N``: the settled deltas after a watermark, oldest
  first, quarantined ones left out.
- ``GET /v1/sync/deltas/{seq}``: one delta's bytes.
- ``GET /v1/sync/tenant``: the tenant the token acts for (a device compares its own).
- ``GET /v1/sync/quarantine?device=HEX&after=SEQ``: the tenant's quarantined deltas with
  the reason each was not merged.

The tenant comes from the token, as everywhere; the log is in the store.
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.responses import Response

from tulving.application.portability.sync_service import MAX_PAGE, MAX_SEQ, delta_dict
from tulving.interfaces.http.errors import HTTPError
from tulving.interfaces.http.tenancy import Tenancy

AgentQ = Annotated[str | None, Query(max_length=256)]


def include_sync_routes(app: FastAPI, tenancy: Tenancy, *, timeout: float,
                        version: int) -> None:
    router = APIRouter(prefix="/v1/sync")

    async def service(request: Request, agent_id: str | None) -> tuple[Any, Any]:
        token = tenancy.verify(request.headers.get("authorization"))
        who = await tenancy.run(tenancy.caller, token, {"agent_id": agent_id})
        return who, await tenancy.run(who.memory.sync_service)

    async def run(fn: Any, *args: Any) -> Any:
        try:
            with anyio.fail_after(timeout):
                return await tenancy.run(fn, *args)
        except TimeoutError as exc:
            raise HTTPError(503, "Timeout", f"the call took over {timeout} s") from exc

    @router.post("/deltas")
    async def push(request: Request, device: Annotated[str, Query(max_length=64)],
                   agent_id: AgentQ = None) -> dict[str, Any]:
        who, sync = await service(request, agent_id)
        who.check_writable()
        data = await request.body()
        declared = request.headers.get("x-tulving-e2e") == "1"
        outcome = await run(lambda: sync.push(device, data, declared_e2e=declared))
        return {"schema_version": version, **outcome.as_dict()}

    @router.get("/deltas")
    async def listing(request: Request, after: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
                      limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
                      agent_id: AgentQ = None) -> dict[str, Any]:
        _who, sync = await service(request, agent_id)
        found = await run(sync.listing, after, limit)
        return {"schema_version": version,
                "deltas": [{"seq": d.seq, "device": d.device, "delta_id": d.delta_id,
                            "size": d.size} for d in found]}

    @router.get("/deltas/{seq}")
    async def fetch(request: Request, seq: int, agent_id: AgentQ = None) -> Response:
        _who, sync = await service(request, agent_id)
        data = await run(sync.fetch, seq)
        if data is None:
            raise HTTPError(404, "NotFoundError", f"no delta {seq}")
        return Response(data, media_type="application/octet-stream")

    @router.get("/tenant")
    async def tenant(request: Request, agent_id: AgentQ = None) -> dict[str, Any]:
        _who, sync = await service(request, agent_id)
        return {"schema_version": version, **sync.tenant_info()}

    @router.get("/quarantine")
    async def quarantine(request: Request,
                         device: Annotated[str | None, Query(max_length=64)] = None,
                         after: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
                         limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
                         agent_id: AgentQ = None) -> dict[str, Any]:
        _who, sync = await service(request, agent_id)
        found = await run(lambda: sync.quarantined(device=device, after=after, limit=limit))
        return {"schema_version": version, "deltas": [delta_dict(d) for d in found]}

    app.include_router(router)
