"""What an operator sees of the library's work: OpenTelemetry spans and timings.

OpenTelemetry is optional (the ``otel`` extra installs ``opentelemetry-api`` alone): the
API is imported lazily here and nowhere else in the library, so without it every call
below is a cheap no-op. With the API but no SDK configured, the facade's spans go to
OpenTelemetry's no-op tracer (what that costs is measured in
``benchmarks/telemetry_overhead.py``) and the engines are not wrapped at all.

Two audiences:
- **Traces.** ``traced_operation`` wraps a facade method in a span that follows the
  GenAI memory conventions (``gen_ai.operation.name`` ``search_memory``,
  ``update_memory``, ...; ``gen_ai.memory.store.id`` is the tenant's hash, the same value
  the server's access log calls ``tenant``). Curation is a search with a budget: its
  extra figures are in the ``tulving.curate.*`` namespace. The text of a query and of
  the memories goes on a span only when the user opts in (``configure(capture_content=
  True)`` or ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``), and then
  redacted as every door redacts it and with contact details masked too (a tracing
  backend is another audience than the memory's callers).
- **Measurements.** Listeners (``add_listener``: the server's Prometheus metrics) are told
  of each outermost facade operation (its duration, outcome, tokens against budget) and
  of each write transaction's wait for and hold of the tenant's write lock.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

import attrs

from tulving.domain.redaction import redact_all, redact_stored_all

F = TypeVar("F", bound=Callable[..., Any])

#: ``gen_ai.provider.name`` of every memory span.
PROVIDER = "tulving"
#: The GenAI conventions' switch for recording content on spans (``true``/``false``, or
#: the content-capturing modes some instrumentations use: ``SPAN_ONLY``,
#: ``SPAN_AND_EVENT``).
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: ``TULVING_TRACING=off`` keeps the library from making spans even with an SDK set up.
TRACING_ENV = "TULVING_TRACING"
#: Opted-in content is cut to this many characters a text and this many records a span.
MAX_TEXT = 1000
MAX_RECORDS = 20

_UNSET: Any = object()
#: ``_find_api``'s answer while nothing in the process has imported OpenTelemetry: no
#: provider can have been set, so every span would be a no-op; asked again next time.
_DORMANT: Any = object()


@attrs.frozen
class OperationRecord:
    """One facade operation, as listeners hear of it (nothing of its content)."""

    method: str
    """The facade method: ``store``, ``search``, ``curate``, ..."""
    operation: str
    """Its GenAI memory operation: ``update_memory``, ``search_memory``, ..."""
    seconds: float
    error: str | None
    """The exception's type name when it failed, else None."""
    tenant: str
    """The tenant's hash (``tenant_hash``)."""
    token_budget: int | None = None
    tokens_used: int | None = None


class Listener(Protocol):
    """What the server's metrics implement; called on the thread that did the work."""

    def operation(self, record: OperationRecord) -> None: ...

    def write_lock(self, wait_seconds: float, hold_seconds: float) -> None: ...


class _State:
    def __init__(self) -> None:
        self.provider: Any = None
        self.capture: bool | None = None
        self.enabled: bool | None = None
        self.tracer: Any = _UNSET
        self.api: Any = _UNSET
        self.listeners: tuple[Listener, ...] = ()
        self.lock = threading.Lock()


_state = _State()
#: Set by the outermost facade operation, so nested ones are traced but counted once.
_in_operation: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "tulving_in_operation", default=False)
#: What a door (the HTTP server) wants to know about the request it serves: the
#: operations note the tenant's hash here (a dict shared by reference, so a worker
#: thread's copy of the context writes into the request's own).
request_notes: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "tulving_request_notes", default=None)


def configure(*, tracer_provider: Any = _UNSET, capture_content: bool | None = _UNSET,
              enabled: bool | None = _UNSET) -> None:
    """Settings that override OpenTelemetry's globals and the environment: the tracer
    provider spans go to (default: the global one), whether content is captured
    (default: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``), whether tracing
    is on at all (default: on unless ``TULVING_TRACING=off``). ``None`` restores a
    default. Memories opened afterwards follow the new settings."""
    with _state.lock:
        if tracer_provider is not _UNSET:
            _state.provider = tracer_provider
        if capture_content is not _UNSET:
            _state.capture = capture_content
        if enabled is not _UNSET:
            _state.enabled = enabled
        _state.tracer = _state.api = _UNSET


def add_listener(listener: Listener) -> None:
    """Tell ``listener`` of every operation and write lock of this process from now on."""
    with _state.lock:
        _state.listeners = (*_state.listeners, listener)


def remove_listener(listener: Listener) -> None:
    with _state.lock:
        _state.listeners = tuple(x for x in _state.listeners if x is not listener)


def capture_content() -> bool:
    """Whether the user opted in to query and memory text on spans."""
    if _state.capture is not None:
        return _state.capture
    value = os.environ.get(CAPTURE_ENV, "").strip().lower()
    return value in ("1", "true", "yes", "on", "span_only", "span_and_event")


def _api() -> Any:
    """The ``opentelemetry.trace`` module, or None (not installed, tracing off, or not
    imported by anyone yet); looked up once it is (``TULVING_TRACING`` is read then),
    again after ``configure``."""
    found = _state.api
    if found is _UNSET:
        found = _find_api()
        if found is _DORMANT:
            return None
        _state.api = found
    return found


def _find_api() -> Any:
    enabled = _state.enabled
    if enabled is None:
        enabled = os.environ.get(TRACING_ENV, "").strip().lower() not in ("off", "0", "false")
    if not enabled:
        return None
    if (_state.provider is None and "opentelemetry.trace" not in sys.modules
            and not os.environ.get("OTEL_PYTHON_TRACER_PROVIDER")):
        # Whoever sets a provider imports OpenTelemetry first (the SDK's setup, the
        # auto-instrumentation's sitecustomize); until then a span would be a no-op, so
        # a Memory does not pay for importing it.
        return _DORMANT
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace


def tracer() -> Any:
    """The tracer spans are made with, or None when tracing is off."""
    found = _state.tracer
    if found is _UNSET:
        from tulving.version import __version__

        trace = _api()
        if trace is None and _state.api is _UNSET:
            return None  # dormant: looked up again at the next operation
        if trace is None:
            found = None
        elif _state.provider is not None:
            found = _state.provider.get_tracer("tulving", __version__)
        else:  # a proxy: follows a global provider set after this call
            found = trace.get_tracer("tulving", __version__)
        _state.tracer = found
    return found


def engines_traced() -> bool:
    """Whether a Memory opened now wraps its engines in traced proxies: only when spans
    are really recorded (a provider configured here, or an SDK set as the global one),
    so without an SDK the engines are called directly and cost nothing extra."""
    trace = _api()
    if trace is None:
        return False
    if _state.provider is not None:
        return True
    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


def note_request(field: str, value: Any) -> None:
    """Tell the request being served (its access-log line) ``field``, unless it knows it
    already; nothing outside a request."""
    notes = request_notes.get()
    if notes is not None:
        notes.setdefault(field, value)


def tenant_hash(tenant: str) -> str:
    """A short stable pseudonym of a tenant (user and workspace ids): what spans
    (``gen_ai.memory.store.id``), logs and per-tenant metrics name it by. Pseudonymous,
    not anonymous: whoever knows an id can compute its hash."""
    return "t" + hashlib.sha256(tenant.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def recording_span() -> Any:
    """The current span when it is being recorded, else None (no SDK, not sampled)."""
    trace = _api()
    if trace is None:
        return None
    span = trace.get_current_span()
    return span if span.is_recording() else None


def in_span(name: str, fn: F) -> F:
    """``fn`` called in a child span ``name``, made only inside a recorded operation (an
    engine never starts a trace of its own); one call site made traceable without
    re-indenting it: ``in_span("curate.pack", pack)(...)``."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if recording_span() is None:
            return fn(*args, **kwargs)
        with tracer().start_as_current_span(name, attributes={"tulving.engine": "packing"}):
            return fn(*args, **kwargs)

    return call  # type: ignore[return-value]


# -- the facade's operations ---------------------------------------------------------

Describe = Callable[[Any, Mapping[str, Any], Any, bool], Mapping[str, Any]]
"""(memory, bound arguments, result, capture) -> span attributes after the call."""


def traced_operation(method: F, operation: str, describe: Describe | None = None, *,
                     when: Callable[[Any], bool] | None = None) -> F:
    """``method`` (a facade method) in a span named ``"{operation} {method}"``, timed for
    the listeners. ``describe`` adds attributes from the result; ``when(memory)`` False
    calls straight through (``startup`` once the store is open)."""
    import inspect

    signature = inspect.signature(method)
    name = method.__name__

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        listeners = _state.listeners
        tr = tracer()
        if (tr is None and not listeners) or (when is not None and not when(self)):
            return method(self, *args, **kwargs)
        outermost = not _in_operation.get()
        token = _in_operation.set(True)
        tenant = tenant_hash(self.identity.tenant)
        notes = request_notes.get()
        if notes is not None:
            notes.setdefault("tenant", tenant)
            notes.setdefault("operation", name)
        began = time.perf_counter()
        result: Any = None
        error: str | None = None
        try:
            if tr is None:
                result = method(self, *args, **kwargs)
                return result
            with tr.start_as_current_span(
                    f"{operation} {name}", record_exception=False,
                    set_status_on_exception=False) as span:
                recording = span.is_recording()
                if recording:
                    span.set_attributes(_base_attributes(operation, name, tenant))
                try:
                    result = method(self, *args, **kwargs)
                except BaseException as exc:
                    if recording:
                        _record_error(span, exc)
                    raise
                if recording and describe is not None:
                    _describe(span, describe, self, signature.bind_partial(
                        self, *args, **kwargs).arguments, result)
                return result
        except BaseException as exc:
            error = type(exc).__name__
            raise
        finally:
            _in_operation.reset(token)
            if notes is not None and error is not None:
                notes.setdefault("error", error)  # the access log's error type
            if outermost and listeners:
                _tell(listeners, OperationRecord(
                    name, operation, time.perf_counter() - began, error, tenant,
                    *_budget(result)))

    return wrapper  # type: ignore[return-value]


def _describe(span: Any, describe: Describe, memory: Any, args: Mapping[str, Any],
              result: Any) -> None:
    """The span's attributes from the result; a telemetry bug never fails the operation."""
    try:
        attributes = describe(memory, args, result, capture_content())
    except Exception:
        span.set_attribute("tulving.telemetry.error", "describe")
        return
    span.set_attributes({k: v for k, v in attributes.items() if v is not None})


def _base_attributes(operation: str, name: str, tenant: str) -> dict[str, Any]:
    return {"gen_ai.operation.name": operation, "gen_ai.provider.name": PROVIDER,
            "gen_ai.memory.store.id": tenant, "tulving.operation": name}


def _record_error(span: Any, exc: BaseException) -> None:
    """The error's type only: an exception's message may quote a memory or a query."""
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", type(exc).__name__)
    span.set_status(Status(StatusCode.ERROR, type(exc).__name__))


def _budget(result: Any) -> tuple[int | None, int | None]:
    budget = getattr(result, "token_budget", None)
    used = getattr(result, "token_count", None)
    if isinstance(budget, int) and isinstance(used, int):
        return budget, used
    return None, None


def _tell(listeners: tuple[Listener, ...], record: OperationRecord) -> None:
    for listener in listeners:
        try:
            listener.operation(record)
        except Exception:  # a broken metric never fails the memory operation
            continue


# -- write lock timing ---------------------------------------------------------------

_lock_depth = threading.local()


class LockTiming:
    """Marks the moment the write lock is held (``acquired()``) inside ``write_lock``."""

    __slots__ = ("acquired_at",)

    def __init__(self) -> None:
        self.acquired_at: float | None = None

    def acquired(self) -> None:
        if self.acquired_at is None:
            self.acquired_at = time.perf_counter()


@contextmanager
def write_lock() -> Iterator[LockTiming]:
    """Times one writing transaction (``plumbing.write_order``): the wait from asking
    for it until ``acquired()`` and the hold from then until it ended. Nested
    transactions join the outer one and are timed with it."""
    timing = LockTiming()
    listeners = _state.listeners
    depth = getattr(_lock_depth, "n", 0)
    if not listeners or depth:
        _lock_depth.n = depth + 1
        try:
            yield timing
        finally:
            _lock_depth.n = depth
        return
    _lock_depth.n = 1
    began = time.perf_counter()
    try:
        yield timing
    finally:
        _lock_depth.n = 0
        ended = time.perf_counter()
        if timing.acquired_at is not None:
            for listener in listeners:
                try:
                    listener.write_lock(timing.acquired_at - began, ended - timing.acquired_at)
                except Exception:
                    continue


def note_write_lock(wait_seconds: float, hold_seconds: float) -> None:
    """A writing transaction timed elsewhere (a write committed in one storage call,
    whose hold the store measured: ``write_order.commit_at_once``)."""
    for listener in _state.listeners:
        try:
            listener.write_lock(wait_seconds, hold_seconds)
        except Exception:
            continue


# -- describing results (attribute builders used by the facade's table) ---------------

_SCOPES = {"agent": "agent", "session": "session", "personal": "user", "shared": "team",
           "workspace": "team", "model_specific": "agent"}


def query_text(query: object) -> str | None:
    """The query as a span may show it (opted in): redacted, contact details included (a
    tracing backend is another audience than the memory's callers), cut to ``MAX_TEXT``."""
    if not isinstance(query, str) or not query:
        return None
    return redact_all(query)[:MAX_TEXT]


def records_json(items: list[tuple[Any, float | None]]) -> str:
    """``gen_ai.memory.records``: id, type, score and redacted content of at most
    ``MAX_RECORDS`` memories (opted in only)."""
    out = []
    for entry, score in items[:MAX_RECORDS]:
        record: dict[str, Any] = {"id": entry.id, "content":
                                  redact_stored_all(entry.content, entry.key)[:MAX_TEXT],
                                  "metadata": {"type": entry.type.value}}
        if score is not None:
            record["score"] = round(float(score), 6)
        out.append(record)
    return json.dumps(out, ensure_ascii=False)


def entry_attributes(entries: list[Any], capture: bool) -> dict[str, Any]:
    """Attributes of a write or read of ``entries``: count, the one id, scope, records."""
    attributes: dict[str, Any] = {"gen_ai.memory.record.count": len(entries)}
    if len(entries) == 1:
        entry = entries[0]
        attributes["gen_ai.memory.record.id"] = entry.id
        attributes["tulving.memory.type"] = entry.type.value
        attributes["tulving.memory.scope"] = entry.scope.value
        attributes["gen_ai.memory.scope"] = _SCOPES.get(entry.scope.value)
    if capture and entries:
        attributes["gen_ai.memory.records"] = records_json([(e, None) for e in entries])
    return attributes


def scope_attributes(scope: object) -> dict[str, Any]:
    value = getattr(scope, "value", scope)
    if not isinstance(value, str):
        return {}
    return {"tulving.memory.scope": value, "gen_ai.memory.scope": _SCOPES.get(value)}
