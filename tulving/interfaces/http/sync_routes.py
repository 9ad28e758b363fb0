"""``/v1/sync``: the endpoints devices sync through (see :mod:`.delta_log` for the log and
:mod:`tulving.application.portability.sync` for the device side).

- ``POST /v1/sync/deltas?device=HEX`` with the delta's bytes: appended to the tenant's log
  (the same bytes twice from one device are one delta) and acknowledged once it is on
  disk. Plain deltas are then merged into the server's own store by a background worker
  (:class:`ServerMerge`), so the ``/v1`` API sees synced memories without the device
  waiting for the merge; end-to-end encrypted ones (``X-Tulving-E2E: 1``, or any bytes
  that are encrypted) are only stored: the server has no key.
- ``GET /v1/sync/deltas?after=SEQ&limit=N``: the deltas after a watermark, oldest first.
- ``GET /v1/sync/deltas/{seq}``: one delta's bytes.

The tenant comes from the token, as everywhere.
"""

from __future__ import annotations

import logging
import threading
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.responses import Response

from tulving.application.portability.bundle_crypto import is_encrypted_bundle
from tulving.application.portability.sync import apply_delta
from tulving.domain.errors import TulvingError
from tulving.domain.sealing import is_sealed
from tulving.interfaces.http.delta_log import DeltaLog
from tulving.interfaces.http.errors import HTTPError
from tulving.interfaces.http.tenancy import Tenancy

MAX_PAGE = 1000
log_ = logging.getLogger(__name__)


def _encrypted(data: bytes) -> bool:
    return is_encrypted_bundle(data[:32]) or is_sealed(data[:16])


class ServerMerge:
    """Merges a tenant's plain deltas into the server's store, in log order, after they
    are logged. The merged watermark lives beside the log (``.merged``) and moves after
    each delta, so a server killed mid-merge resumes where it stopped on the tenant's next
    push or pull (merging a delta twice changes nothing). A delta the store refuses (a
    policy, another tenant's entries) is logged and passed over: devices still get it."""

    def __init__(self, log: DeltaLog) -> None:
        self.log = log
        self._guard = threading.Lock()
        self._dirty: set[str] = set()
        self._running: set[str] = set()

    def kick(self, tenant: str, memory: Any) -> None:
        with self._guard:
            self._dirty.add(tenant)
            if tenant in self._running:
                return
            self._running.add(tenant)
        threading.Thread(target=self._work, args=(tenant, memory), daemon=True,
                         name="tulving-sync-merge").start()

    def _work(self, tenant: str, memory: Any) -> None:
        while True:
            with self._guard:
                if tenant not in self._dirty:
                    self._running.discard(tenant)
                    return
                self._dirty.discard(tenant)
            try:
                self.catch_up(tenant, memory)
            except Exception as exc:  # the server must keep serving; retried on next kick
                log_.warning("sync merge for a tenant stopped: %s", exc)

    def catch_up(self, tenant: str, memory: Any) -> None:
        merged = self.log.mark(tenant, "merged")
        while True:
            page = self.log.after(tenant, merged, MAX_PAGE)
            if not page:
                return
            for delta in page:
                data = self.log.read(tenant, delta.seq)
                if data is not None and not _encrypted(data):
                    try:
                        apply_delta(memory, data, None)
                    except TulvingError as exc:
                        log_.warning("delta %s not merged into the server's store: %s",
                                     delta.seq, exc)
                merged = delta.seq
                self.log.set_mark(tenant, "merged", merged)


def include_sync_routes(app: FastAPI, tenancy: Tenancy, log: DeltaLog, *, timeout: float,
                        version: int) -> None:
    router = APIRouter(prefix="/v1/sync")
    merger = ServerMerge(log)
    app.state.sync_merge = merger

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
        e2e = request.headers.get("x-tulving-e2e") == "1" or _encrypted(data)
        memory = who.memory

        def store() -> dict[str, Any]:
            try:
                delta, new = log.append(memory.identity.tenant, device, data)
            except ValueError as exc:
                raise HTTPError(400, "ValidationError", str(exc)) from exc
            if not e2e:
                merger.kick(memory.identity.tenant, memory)
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
        tenant = who.memory.identity.tenant
        if await tenancy.run(log.mark, tenant, "merged") < await tenancy.run(log.last, tenant):
            merger.kick(tenant, who.memory)  # catch up after a restart
        found = await tenancy.run(log.after, tenant, after, limit)
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
