"""``/v1/sync``: the endpoints devices sync through (see :mod:`.delta_log` for the log and
:mod:`tulving.application.portability.sync` for the device side).

- ``POST /v1/sync/deltas?device=HEX`` with the delta's bytes: appended to the tenant's log
  (the same bytes twice from one device are one delta). A plain delta (a bundle) is also
  merged into the server's own store, so the ``/v1`` API sees synced memories; an
  end-to-end encrypted one (``X-Tulving-E2E: 1``, or any bundle that is encrypted) is
  only stored: the server has no key.
- ``GET /v1/sync/deltas?after=SEQ&limit=N``: the deltas after a watermark, oldest first.
- ``GET /v1/sync/deltas/{seq}``: one delta's bytes.

The tenant comes from the token, as everywhere.
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.responses import Response

from tulving.application.portability.bundle_crypto import is_encrypted_bundle
from tulving.application.portability.sync import apply_delta
from tulving.domain.sealing import is_sealed
from tulving.interfaces.http.delta_log import DeltaLog
from tulving.interfaces.http.errors import HTTPError
from tulving.interfaces.http.tenancy import Tenancy

MAX_PAGE = 1000


def include_sync_routes(app: FastAPI, tenancy: Tenancy, log: DeltaLog, *, timeout: float,
                        version: int) -> None:
    router = APIRouter(prefix="/v1/sync")

    async def caller(request: Request, agent_id: str | None) -> Any:
        token = tenancy.verify(request.headers.get("authorization"))
        return await tenancy.run(tenancy.caller, token, {"agent_id": agent_id})

    @router.post("/deltas")
    async def push(request: Request, device: Annotated[str, Query(max_length=64)],
                   agent_id: Annotated[str | None, Query(max_length=256)] = None,
                   ) -> dict[str, Any]:
        who = await caller(request, agent_id)
        who.check_writable()
        data = await request.body()
        if not data:
            raise HTTPError(400, "ValidationError", "an empty delta")
        e2e = (request.headers.get("x-tulving-e2e") == "1" or is_encrypted_bundle(data[:32])
               or is_sealed(data[:16]))
        memory = who.memory

        def store() -> dict[str, Any]:
            if not e2e:  # merge first: a push retried after a failure merges nothing twice
                apply_delta(memory, data, None)
            try:
                delta, new = log.append(memory.identity.tenant, device, data)
            except ValueError as exc:
                raise HTTPError(400, "ValidationError", str(exc)) from exc
            return {"seq": delta.seq, "delta_id": delta.delta_id, "new": new}

        try:
            with anyio.fail_after(timeout):
                result = await tenancy.run(store)
        except TimeoutError as exc:
            raise HTTPError(503, "Timeout", f"the call took over {timeout} s") from exc
        return {"schema_version": version, **result}

    @router.get("/deltas")
    async def listing(request: Request, after: Annotated[int, Query(ge=0)] = 0,
                      limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
                      agent_id: Annotated[str | None, Query(max_length=256)] = None,
                      ) -> dict[str, Any]:
        who = await caller(request, agent_id)
        found = await tenancy.run(log.after, who.memory.identity.tenant, after, limit)
        return {"schema_version": version,
                "deltas": [{"seq": d.seq, "device": d.device, "delta_id": d.delta_id,
                            "size": d.size} for d in found]}

    @router.get("/deltas/{seq}")
    async def fetch(request: Request, seq: int,
                    agent_id: Annotated[str | None, Query(max_length=256)] = None) -> Response:
        who = await caller(request, agent_id)
        data = await tenancy.run(log.read, who.memory.identity.tenant, seq)
        if data is None:
            raise HTTPError(404, "NotFoundError", f"no delta {seq}")
        return Response(data, media_type="application/octet-stream")

    app.include_router(router)
