"""Who is calling, and which memory they get: bearer tokens bound to tenants.

Each token (``tulving serve token create``) names a tenant (user and workspace), optionally
one agent, and whether it may write. The tenant always comes from the token: a request
that names another one (``user_id``/``workspace_id`` in its body or query) is refused with
403 and the refusal is audited in the token's own tenant. Each (tenant, agent) gets a
``Memory.view`` of the one store the server owns (a cache of opened services: what the
view's agent is doing, its session included, lives in the store, so server replicas over
one PostgreSQL store agree on it), so a SQLite store has exactly one writer process: the
server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, TypeVar, TypeVarTuple

import anyio
import anyio.to_thread
import attrs

from tulving.application.agent_memory.sessions import known_sessions, sessions_read_once
from tulving.application.plumbing import telemetry
from tulving.domain.errors import SecurityError
from tulving.domain.identity import Identity
from tulving.interfaces.auth.bearer_tokens import TokenRecord, TokenRegistry
from tulving.interfaces.http.errors import HTTPError
from tulving.interfaces.http.limits import FairShare

if TYPE_CHECKING:
    from tulving.application.memory import Memory

#: Agent id for calls whose token and request name none.
DEFAULT_AGENT = "default"
#: Views kept at most (tenants x agents); the least recently used one is flushed beyond.
MAX_VIEWS = 256

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


@attrs.frozen
class Caller:
    token: TokenRecord
    memory: Memory

    def check_writable(self) -> None:
        if self.token.read_only:
            raise HTTPError(403, "ReadOnlyToken", "this token may only read")


class Tenancy:
    def __init__(self, memory: Memory, registry: TokenRegistry, *, limiter: int = 8) -> None:
        self.root = memory
        self.registry = registry
        self.limiter = anyio.CapacityLimiter(limiter)
        self.share = FairShare()  # the limiter's slots, shared fairly between tenants
        self._views: dict[tuple[str | None, str | None, str], Memory] = {}
        self._lock = threading.Lock()

    async def run(self, fn: Callable[[*Ts], T], *args: *Ts) -> T:
        """A blocking library call off the event loop (``limiter`` of them at once)."""
        return await anyio.to_thread.run_sync(lambda: fn(*args), limiter=self.limiter)

    def serve(self, authorization: str | None, named: Mapping[str, Any],
              fn: Callable[[Memory], Any], write: bool) -> Any:
        """One request on this worker thread: the token checked, the caller's memory, then
        ``fn(memory)``, in one read scope of the store (``request_scope``)."""
        with self.request_scope():
            token = self.verify(authorization, named)
            caller = self.caller(token, named)
            if write:
                caller.check_writable()
            return fn(caller.memory)

    @contextmanager
    def request_scope(self) -> Iterator[None]:
        """What one request reads, read together: in one read transaction of a store that
        has them (PostgreSQL: a recall is one transaction, a store two), and each agent's
        open sessions read once (with the token, where the store reads them together).
        The token is read at every request, so a revocation applies at the next one."""
        with sessions_read_once(), self.root.operator.read_scope():
            yield

    def verify(self, authorization: str | None,
               named: Mapping[str, Any] | None = None) -> TokenRecord:
        if not authorization or not authorization.lower().startswith("bearer "):
            raise HTTPError(401, "Unauthorized", "a bearer token is required")
        agent = str((named or {}).get("agent_id") or DEFAULT_AGENT)
        try:
            token, sessions = self.registry.verify_with_sessions(authorization[7:].strip(),
                                                                 agent)
        except SecurityError as exc:
            raise HTTPError(401, "Unauthorized", str(exc)) from exc
        with suppress(ValueError):  # the access log's tenant: on a 403's line, a 422's
            telemetry.note_request("tenant", telemetry.tenant_hash(
                Identity(DEFAULT_AGENT, token.user_id, token.workspace_id).tenant))
        if sessions is not None:
            acting = token.agent_id or agent
            try:
                tenant = Identity(acting, token.user_id, token.workspace_id).tenant
            except ValueError:  # a bad agent id is refused by ``caller``, as before
                return token
            known_sessions(acting, tenant, sessions)
        return token

    def caller(self, token: TokenRecord, named: Mapping[str, Any]) -> Caller:
        """The caller's memory; 403 (audited) when the request names another tenant or,
        for an agent-bound token, another agent."""
        agent = token.agent_id or str(named.get("agent_id") or DEFAULT_AGENT)
        view = self._view(token.user_id, token.workspace_id, agent)
        for field, allowed in (("user_id", token.user_id), ("workspace_id", token.workspace_id),
                               ("agent_id", token.agent_id)):
            asked = named.get(field)
            if asked is not None and allowed is not None and asked != allowed:
                self._refuse(view, token, field)
            if asked is not None and allowed is None and field != "agent_id":
                self._refuse(view, token, field)
        return Caller(token, view)

    def _refuse(self, view: Memory, token: TokenRecord, field: str) -> None:
        # the refusal belongs in the caller's own audit chain
        view.operator.audit_refusal({"token": token.id, "field": field},
                           {"token": token.id, "named_other": field})
        raise HTTPError(403, "ScopeError", f"this token may not act for another {field}")

    def _view(self, user_id: str | None, workspace_id: str | None, agent_id: str) -> Memory:
        key = (user_id, workspace_id, agent_id)
        with self._lock:
            view = self._views.pop(key, None)
            if view is None:
                view = self.root.view(agent_id=agent_id, user_id=user_id,
                                      workspace_id=workspace_id)
            self._views[key] = view  # most recently used last
            while len(self._views) > MAX_VIEWS:
                _, old = next(iter(self._views.items()))
                self._views.pop(next(iter(self._views)))
                old.close()
            return view

    def close(self) -> None:
        """Flush every view, then the store. Sessions end with reason ``shutdown`` when
        this process is the store's only server; on a store that other processes serve
        too (PostgreSQL replicas) they stay open, since an agent's session is the same
        on every replica and a rolling restart of one must not end it under the others
        (an abandoned one is ended by the next replica to start, see ``sessions``)."""
        with self._lock:
            views, self._views = list(self._views.values()), {}
        shared = self.root.operator.capabilities.multi_process_writers
        for view in views:
            try:
                if not shared:
                    view.shutdown_session()
            finally:
                view.close()
        self.root.close()
