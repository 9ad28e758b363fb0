"""One place that watches every request: its id, its server span, its metrics, its log line.

``Observability`` is an ASGI middleware, outside every other, so a refused body (413)
or an error is seen like any answer. Per request it:
- takes the caller's ``X-Request-ID`` (when it is a short token) or makes one, and
  returns it in the response;
- continues the caller's trace (W3C ``traceparent``/``tracestate``, through
  OpenTelemetry's configured propagator) in a ``SERVER`` span named by the route's
  template; the memory operations the request runs are its children (the library's
  spans, ``plumbing.telemetry``), their engines theirs;
- counts and times it by method, route template and status (``metrics``);
- writes one JSON line to the ``tulving.access`` logger: request id, method, route,
  status, duration, the tenant's hash, the operation, the trace and span ids, and for
  an error its type (never a message, a body or a query: they may quote a memory).

One timing serves all three, so a trace, a metric and a log line of one request agree.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import attrs
from fastapi import FastAPI, Request, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tulving.application.plumbing import telemetry
from tulving.domain.errors import ConfigError

if TYPE_CHECKING:
    from tulving.interfaces.http.tenancy import Tenancy

ACCESS_LOGGER = "tulving.access"
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}")
#: Routes whose successful answers are not logged line by line (probes and scrapes
#: every few seconds); they are still counted.
QUIET_ROUTES = frozenset({"/v1/health", "/metrics"})
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT",
                      "TRACE"})


@attrs.frozen
class ObservabilityOptions:
    """What ``create_app(observability=...)`` installs (``tulving serve``'s flags)."""

    metrics: bool = True
    """Serve ``/metrics`` (needs ``prometheus_client``: the ``metrics`` extra)."""
    metrics_token: str | None = None
    """The bearer token ``/metrics`` asks for; without one, only this machine may scrape."""
    tenant_labels: bool = False
    """Per-tenant series, labelled by the tenant's hash (bounded only by your tenants)."""
    census_interval: float = 60.0
    """Seconds between two reads of the store's figures (entries, deltas, jobs)."""
    access_log: str = "errors"
    """JSON lines on the ``tulving.access`` logger: ``"all"`` (one per request),
    ``"errors"`` (answers of status 500 and above; the default: a server whose stderr
    nobody reads never fills the pipe) or ``"off"``."""

    def __attrs_post_init__(self) -> None:
        if self.access_log not in ("all", "errors", "off"):
            raise ConfigError(f"access_log is all, errors or off, not {self.access_log!r}")


class Observability:
    """The middleware (see the module's docstring)."""

    def __init__(self, app: ASGIApp, *, metrics: Any = None, access_log: str = "errors") -> None:
        self.app, self.metrics, self.log = app, metrics, access_log
        self.logger = logging.getLogger(ACCESS_LOGGER)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers") or []}
        request_id = headers.get("x-request-id", "")
        if not _REQUEST_ID.fullmatch(request_id):
            request_id = uuid.uuid4().hex
        method = str(scope.get("method", "GET")).upper()
        if method not in _METHODS:  # a label of bounded values (OpenTelemetry's rule)
            method = "_OTHER"
        notes: dict[str, Any] = {}
        status = [500]

        async def observed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"x-request-id", request_id.encode())]}
            await send(message)

        notes_token = telemetry.request_notes.set(notes)
        if self.metrics is not None:
            self.metrics.in_flight.inc()
        began = time.perf_counter()
        error: str | None = None
        ids: dict[str, str] = {}
        try:
            async with _server_span(method, headers, scope, status, ids):
                try:
                    await self.app(scope, receive, observed_send)
                except BaseException as exc:
                    error = type(exc).__name__
                    raise
        finally:
            seconds = time.perf_counter() - began
            telemetry.request_notes.reset(notes_token)
            route = _route(scope)
            if self.metrics is not None:
                self.metrics.in_flight.dec()
                self.metrics.request(method, route, status[0], seconds)
            if self._logged(route, status[0]):
                # the route's own name (OpenAPI's operation), whatever library calls ran
                # and whether or not they are traced: the same on a 403's or a 422's line
                name = getattr(scope.get("route"), "name", None)
                if isinstance(name, str):
                    notes["operation"] = name
                self._log(request_id, method, route, status[0], seconds, notes,
                          error or notes.get("error"), ids.get("trace_id") or
                          _parent_trace(headers), ids.get("span_id"))

    def _logged(self, route: str, status: int) -> bool:
        if self.log == "all":
            return not (route in QUIET_ROUTES and status < 400)
        return self.log == "errors" and status >= 500

    def _log(self, request_id: str, method: str, route: str, status: int, seconds: float,
             notes: dict[str, Any], error: str | None, trace_id: str | None,
             span_id: str | None) -> None:
        line: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "level": _level(status),
            "event": "request", "request_id": request_id, "method": method,
            "route": route, "status": status, "duration_ms": round(seconds * 1000, 3),
            "tenant": notes.get("tenant"), "operation": notes.get("operation"),
            "trace_id": trace_id, "span_id": span_id}
        if error is not None:
            line["error"] = error
        self.logger.log(LEVELS[line["level"]],
                        json.dumps({k: v for k, v in line.items() if v is not None}))


#: The access log's levels: a server fault (5xx) ``error``, a refused request (4xx)
#: ``warning``, an answer ``info``.
LEVELS = {"error": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO}


def _level(status: int) -> str:
    return "error" if status >= 500 else "warning" if status >= 400 else "info"


def _route(scope: Scope) -> str:
    """The matched route's template as the OpenAPI document names it
    (``/v1/memory/{memory_id}``): a bounded label, never the path as asked."""
    route = scope.get("route")
    path = getattr(route, "path_format", None) or getattr(route, "path", None)
    return path if isinstance(path, str) else "unmatched"


def _parent_trace(headers: dict[str, str]) -> str | None:
    """The caller's trace id, read from ``traceparent`` when no span was made here."""
    found = _TRACEPARENT.fullmatch(headers.get("traceparent", "").strip())
    return found.group(1) if found and found.group(1) != "0" * 32 else None


@asynccontextmanager
async def _server_span(method: str, headers: dict[str, str], scope: Scope,
                       status: list[int], ids: dict[str, str]) -> AsyncIterator[None]:
    """The request's SERVER span, the caller's trace continued (no-op without
    OpenTelemetry); notes in ``ids`` the trace and span ids the log line carries."""
    tracer = telemetry.tracer()
    if tracer is None:
        yield
        return
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind, Status, StatusCode

    parent = propagate.extract(headers)
    client = scope.get("client") or ("", 0)
    server = scope.get("server") or ("", 0)
    with tracer.start_as_current_span(
            method, context=parent, kind=SpanKind.SERVER, record_exception=False,
            set_status_on_exception=False,
            attributes={"http.request.method": method,  # no url.path: it may hold a key
                        "url.scheme": scope.get("scheme", "http"),
                        "server.address": str(server[0]), "server.port": int(server[1] or 0),
                        "network.peer.address": str(client[0])}) as span:
        context = span.get_span_context()
        if context.is_valid:
            ids["trace_id"] = format(context.trace_id, "032x")
            if span.is_recording():
                ids["span_id"] = format(context.span_id, "016x")
        try:
            yield
        except BaseException as exc:
            status[0] = 500
            if span.is_recording():
                span.set_attribute("error.type", type(exc).__name__)
            raise
        finally:
            if span.is_recording():
                route = _route(scope)
                span.update_name(f"{method} {route}")
                span.set_attribute("http.route", route)
                span.set_attribute("http.response.status_code", status[0])
                if status[0] >= 500:
                    span.set_status(Status(StatusCode.ERROR))


def fastapi_telemetry_off() -> dict[str, Any]:
    """``FastAPI(**fastapi_telemetry_off())``: FastAPI's own OpenTelemetry (0.16x) off.
    Its server span records ``url.path`` and ``url.query`` (a memory's key, the user id
    a request names) and its logs the messages of exceptions; ``Observability`` makes the
    one server span instead, by route template. Empty for a FastAPI without it."""
    import inspect

    from fastapi import FastAPI

    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    return {"telemetry": {"tracing": False, "metrics": False, "logs": False,
                          "operation_spans": False, "auto_configure": False}}


def install(app: FastAPI, tenancy: Tenancy, options: ObservabilityOptions) -> Any:
    """The middleware on ``app`` (outermost: added last), ``/metrics`` when asked and
    ``prometheus_client`` is there; returns the metrics (or None)."""
    metrics = None
    if options.metrics:
        try:
            from tulving.interfaces.http.metrics import ServerMetrics
        except ImportError:
            metrics = None
        else:
            metrics = ServerMetrics(tenancy, tenant_labels=options.tenant_labels,
                                    census_interval=options.census_interval)
            _include_metrics_route(app, metrics, options.metrics_token)
            _listen_while_serving(app, metrics)
    app.add_middleware(Observability, metrics=metrics, access_log=options.access_log)
    app.state.metrics = metrics
    return metrics


def _listen_while_serving(app: Any, metrics: Any) -> None:
    """The metrics hear the library's operations while the app runs (its lifespan)."""
    inner: Callable[[Any], Any] = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(the_app: Any) -> AsyncIterator[Any]:
        telemetry.add_listener(metrics)
        try:
            async with inner(the_app) as state:
                yield state
        finally:
            telemetry.remove_listener(metrics)

    app.router.lifespan_context = lifespan


def _include_metrics_route(app: FastAPI, metrics: Any, token: str | None) -> None:
    import hmac
    import ipaddress

    import anyio.to_thread
    from prometheus_client import CONTENT_TYPE_LATEST

    from tulving.interfaces.http.errors import HTTPError

    def local_peer(request: Request) -> bool:
        if any(h in request.headers for h in ("forwarded", "x-forwarded-for", "x-real-ip")):
            return False  # relayed by a proxy: the peer address says nothing of the caller
        host = request.client.host if request.client else ""
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    @app.get("/metrics", include_in_schema=False)
    async def scrape(request: Request) -> Response:
        if token is not None:
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                raise HTTPError(401, "Unauthorized", "/metrics needs its bearer token "
                                "(TULVING_METRICS_TOKEN)")
        elif not local_peer(request):
            raise HTTPError(403, "Forbidden", "/metrics answers this machine only; set "
                            "TULVING_METRICS_TOKEN to scrape it from elsewhere")
        body = await anyio.to_thread.run_sync(metrics.render)
        return Response(body, media_type=CONTENT_TYPE_LATEST)
