"""``/v1/sync``: the endpoints devices sync through (the rules are in
:mod:`tulving.application.portability.sync_service`; the device side is
:mod:`tulving.application.portability.sync`).

- ``POST /v1/sync/deltas?device=HEX`` with the delta's bytes: refused before anything is
  logged when the device name, the delta or its tenant is wrong; else logged (the same
  bytes twice from one device are one delta) and, when plain, merged into the server's
  store on a thread of its own (:class:`BackgroundMerge`). The answer waits up to
  ``PUSH_WAIT`` seconds for that merge and says what became of the delta: ``state``
  ``merged``, ``stored`` (end to end encrypted: the server has no key), ``quarantined``
  (with the ``reason``; handed to no device from then on) or, for a delta still being
  merged, ``pending`` (a quarantine then shows in the device's next sync).
- ``GET /v1/sync/deltas?after=SEQ&limit=N``: the deltas after a watermark, oldest first,
  quarantined ones left out (pending ones in: a pull runs beside the merge).
- ``GET /v1/sync/deltas/{seq}``: one delta's bytes.
- ``GET /v1/sync/tenant``: the tenant the token acts for (a device compares its own).
- ``GET /v1/sync/quarantine?device=HEX&after=SEQ``: the tenant's quarantined deltas with
  the reason each was not merged.

The tenant comes from the token, as everywhere; the log is in the store.
"""

from __future__ import annotations

import threading
import time
from typing import Annotated, Any

import anyio
import attrs
from fastapi import APIRouter, Depends, FastAPI, Path, Query, Request
from fastapi.responses import Response

from tulving.application.portability.sync_service import (
    MAX_PAGE,
    MAX_SEQ,
    SyncService,
    delta_dict,
)
from tulving.domain.log_masking import masked_logger
from tulving.domain.sync_records import DELTA_PENDING, DEVICE_PATTERN
from tulving.interfaces.http import documented as D
from tulving.interfaces.http.auth_gate import authenticated
from tulving.interfaces.http.errors import HTTPError
from tulving.interfaces.http.grammars import IDENTITY, IDENTITY_MAX
from tulving.interfaces.http.limits import bounded
from tulving.interfaces.http.tenancy import Caller, Tenancy

#: A device's name (``tulving.domain.sync_records.DEVICE_PATTERN``, anchored).
DEVICE = rf"^{DEVICE_PATTERN}$"
IdQ = Annotated[str | None, Query(min_length=1, max_length=IDENTITY_MAX, pattern=IDENTITY)]
#: How long a push waits for the merge of its delta before answering ``pending``.
PUSH_WAIT = 2.0
log_ = masked_logger("tulving.http")


class BackgroundMerge:
    """Settles a tenant's pending deltas on a thread (one per tenant at a time in this
    process; across replicas the store's merge claim takes turns), through a view of its
    own, so a push is answered soon and a pull runs beside the merge. A merge stopped by
    a storage fault or a shutdown resumes on the tenant's next push or pull."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self._guard = threading.Lock()
        self._dirty: set[tuple[str | None, str | None]] = set()
        self._running: set[tuple[str | None, str | None]] = set()

    def kick(self, user_id: str | None, workspace_id: str | None) -> None:
        tenant = (user_id, workspace_id)
        with self._guard:
            self._dirty.add(tenant)
            if tenant in self._running:
                return
            self._running.add(tenant)
        threading.Thread(target=self._work, args=(tenant,), daemon=True,
                         name="tulving-sync-merge").start()

    def _work(self, tenant: tuple[str | None, str | None]) -> None:
        while True:
            with self._guard:
                if tenant not in self._dirty:
                    self._running.discard(tenant)
                    return
                self._dirty.discard(tenant)
            try:
                view = self.root.view(agent_id="sync-merge", user_id=tenant[0],
                                      workspace_id=tenant[1])
                try:
                    view.operator.sync_service().catch_up()
                finally:
                    view.close()
            except Exception as exc:  # the server keeps serving; retried on the next kick
                log_.warning("a tenant's sync merge stopped (%s); it resumes on its next "
                             "push or pull", type(exc).__name__)


def include_sync_routes(app: FastAPI, tenancy: Tenancy, *, timeout: float,
                        version: int) -> None:
    router = APIRouter(prefix="/v1/sync",
                       dependencies=[Depends(authenticated(tenancy, lookup=True))])
    merges = BackgroundMerge(tenancy.root)
    app.state.sync_merge = merges

    async def service(request: Request, user_id: str | None, workspace_id: str | None,
                      agent_id: str | None) -> tuple[Caller, SyncService]:
        # a tenant named in the query is the token's, or refused (403, audited), as at
        # every other route: the tenant comes from the token
        token = request.state.tulving_token
        named = {"user_id": user_id, "workspace_id": workspace_id, "agent_id": agent_id}
        who = await tenancy.run(tenancy.caller, token, named)
        return who, await tenancy.run(who.memory.operator.sync_service)

    async def run(fn: Any, *args: Any) -> Any:
        return await bounded(fn, *args, timeout=timeout, limiter=tenancy.limiter)

    @router.post("/deltas", responses=D.answers(*D.WRITE),
                 openapi_extra=D.upload("application/octet-stream", "a delta"))
    async def push(request: Request, device: Annotated[str, Query(pattern=DEVICE)],
                   user_id: IdQ = None, workspace_id: IdQ = None,
                   agent_id: IdQ = None) -> dict[str, Any]:
        who, sync = await service(request, user_id, workspace_id, agent_id)
        who.check_writable()
        data = await request.body()
        declared = request.headers.get("x-tulving-e2e") == "1"
        outcome = await run(lambda: sync.receive(device, data, declared_e2e=declared))
        if outcome.delta.state == DELTA_PENDING:
            me = who.memory.identity
            merges.kick(me.user_id, me.workspace_id)
            deadline = time.monotonic() + PUSH_WAIT
            while True:
                delta = await tenancy.run(sync.state_of, outcome.delta)
                if delta.state != DELTA_PENDING or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.02)
            outcome = attrs.evolve(outcome, delta=delta)
        return {"schema_version": version, **outcome.answer().as_dict()}

    @router.get("/deltas", responses=D.answers(*D.READ))
    async def listing(request: Request, after: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
                      limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
                      user_id: IdQ = None, workspace_id: IdQ = None,
                      agent_id: IdQ = None) -> dict[str, Any]:
        who, sync = await service(request, user_id, workspace_id, agent_id)
        found = await run(sync.listing, after, limit)
        if await tenancy.run(sync.pending):  # e.g. left by a restart: merge it now
            me = who.memory.identity
            merges.kick(me.user_id, me.workspace_id)
        return {"schema_version": version,
                "deltas": [{"seq": d.seq, "device": d.device, "delta_id": d.delta_id,
                            "size": d.size} for d in found]}

    @router.get("/deltas/{seq}", response_class=Response, responses={
        **D.answers(*D.BY_ID), 200: D.content("application/octet-stream", "the delta")})
    async def fetch(request: Request, seq: Annotated[int, Path(ge=1, le=MAX_SEQ)],
                    user_id: IdQ = None,
                    workspace_id: IdQ = None, agent_id: IdQ = None) -> Response:
        _who, sync = await service(request, user_id, workspace_id, agent_id)
        data = await run(sync.fetch, seq)
        if data is None:
            raise HTTPError(404, "NotFoundError", f"no delta {seq}")
        return Response(data, media_type="application/octet-stream")

    @router.get("/tenant", responses=D.answers(*D.READ))
    async def tenant(request: Request, user_id: IdQ = None, workspace_id: IdQ = None,
                     agent_id: IdQ = None) -> dict[str, Any]:
        _who, sync = await service(request, user_id, workspace_id, agent_id)
        return {"schema_version": version, **sync.tenant_info().as_dict()}

    @router.get("/quarantine", responses=D.answers(*D.READ))
    async def quarantine(request: Request,
                         device: Annotated[str | None, Query(pattern=DEVICE)] = None,
                         after: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
                         limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
                         user_id: IdQ = None, workspace_id: IdQ = None,
                      agent_id: IdQ = None) -> dict[str, Any]:
        _who, sync = await service(request, user_id, workspace_id, agent_id)
        found = await run(lambda: sync.quarantined(device=device, after=after, limit=limit))
        return {"schema_version": version, "deltas": [delta_dict(d) for d in found]}

    app.include_router(router)
