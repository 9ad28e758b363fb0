"""``tulving serve``: the HTTP memory server (``/v1``), and its tenant-bound tokens.

Binds 127.0.0.1 by default. Another address needs ``--allow-remote`` and at least one
token: the server never answers an unauthenticated request but ``/v1/health``.

Observability (docs/operations/observability.md): ``/metrics`` for Prometheus (this
machine only, unless ``TULVING_METRICS_TOKEN`` names the bearer token a scraper sends),
JSON access lines on stderr (``--access-log all``; failures only by default), and traces to an OpenTelemetry collector
with ``--otlp-endpoint`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import logging
import os
import socket
import sys
import time
from typing import Any

from tulving.domain.errors import ConfigError, SecurityError, ValidationError
from tulving.interfaces.cli.commands_mcp import _token_list, _token_revoke, _with_registry
from tulving.interfaces.cli.config import (
    add_common,
    add_json,
    hint,
    open_memory,
    settings_from,
)
from tulving.interfaces.cli.output import OK, Output
from tulving.interfaces.request_limits import (
    MAX_DELTA,
    MAX_IMPORT_ENTRIES,
    MAX_REMEMBER_CHARS,
    Limits,
)


def register(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the HTTP memory server (/v1 API, bearer tokens)",
                       description="Serve this memory over HTTP (see docs/server/index.md "
                       "in the repository). Each client needs a token: tulving serve token "
                       "create NAME --bind-user U.")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; others need --allow-remote)")
    p.add_argument("--port", type=int, default=8780, help="port (default 8780)")
    p.add_argument("--allow-remote", action="store_true",
                   help="permit binding a non-loopback address (tokens are then required)")
    p.add_argument("--concurrency", type=int, default=8, help="library calls at once")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds per call: past it the call answers 503 and is cancelled")
    p.add_argument("--max-remember-chars", type=int, default=MAX_REMEMBER_CHARS,
                   help=f"characters of one remember call (default {MAX_REMEMBER_CHARS})")
    p.add_argument("--max-import-entries", type=int, default=MAX_IMPORT_ENTRIES,
                   help=f"entries of one imported bundle (default {MAX_IMPORT_ENTRIES})")
    p.add_argument("--max-delta-bytes", type=int, default=MAX_DELTA,
                   help=f"bytes of one sync push (default {MAX_DELTA})")
    p.add_argument("--read-only", action="store_true", dest="read_only_store",
                   help="serve reads only, beside the process that writes the store (an "
                        "MCP server, another serve): the inspector and searches work while "
                        "it runs; writes answer with an error")
    o = p.add_argument_group("observability (docs/operations/observability.md)")
    o.add_argument("--otlp-endpoint", metavar="URL",
                   help="send traces to this OpenTelemetry collector (OTLP over HTTP, e.g. "
                        "http://127.0.0.1:4318; default: OTEL_EXPORTER_OTLP_ENDPOINT)")
    o.add_argument("--no-metrics", action="store_true",
                   help="do not serve /metrics (Prometheus; this machine only unless "
                        f"{METRICS_TOKEN_ENV} holds the token scrapers send)")
    o.add_argument("--metrics-tenant-label", action="store_true",
                   help="per-tenant metric series, labelled by the tenant's hash")
    o.add_argument("--metrics-refresh", type=float, default=60.0, metavar="SECONDS",
                   help="read the store's figures (entries per tenant, sync deltas, jobs) "
                        "at most this often (default 60)")
    o.add_argument("--access-log", choices=("all", "errors", "off"), default="errors",
                   help="JSON lines on stderr: one per request (all), per failed request "
                        "(errors, the default) or none (off)")
    add_common(p)
    p.set_defaults(func=_serve)
    tokens = p.add_subparsers(dest="serve_command", metavar="{token}")
    t = tokens.add_parser("token", help="create, list or revoke tokens (shared with MCP)")
    tsub = t.add_subparsers(dest="token_command", metavar="{create,list,revoke}",
                            required=True)
    c = tsub.add_parser("create", help="create a token bound to a tenant (shown once)")
    c.add_argument("name")
    c.add_argument("--bind-user", help="the user_id this token acts for")
    c.add_argument("--bind-workspace", help="the workspace_id this token acts for")
    c.add_argument("--bind-agent", help="pin the token to one agent id")
    c.add_argument("--read-only", action="store_true", help="reads only")
    add_json(c)
    add_common(c)
    c.set_defaults(func=_token_create)
    # the same token table as `tulving mcp token`: list and revoke from either door
    ls = tsub.add_parser("list", help="list tokens (names and ids, never secrets)")
    add_json(ls)
    add_common(ls)
    ls.set_defaults(func=_token_list)
    r = tsub.add_parser("revoke", help="revoke a token by id or name (at once: the server "
                        "reads the table on every request)")
    r.add_argument("id_or_name")
    add_json(r)
    add_common(r)
    r.set_defaults(func=_token_revoke)


#: The environment variable holding /metrics' bearer token (never a flag: a command
#: line is visible to every user of the machine).
METRICS_TOKEN_ENV = "TULVING_METRICS_TOKEN"


def check_bind(host: str, allow_remote: bool) -> None:
    if host in ("localhost", "127.0.0.1", "::1"):
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not allow_remote:
        raise SecurityError(f"binding {host} exposes the memory beyond this machine: add "
                            "--allow-remote (and give every client a token)")


def _serve(args: argparse.Namespace, out: Output) -> int:
    from tulving.interfaces.cli.extras import require

    require("serve")
    check_bind(args.host, args.allow_remote)
    if not 0 <= args.port <= 65535:
        raise ValidationError(f"--port must be 0..65535, got {args.port}")
    if args.concurrency < 1 or args.timeout <= 0:
        raise ValidationError("--concurrency must be >= 1 and --timeout > 0")
    if min(args.max_remember_chars, args.max_import_entries, args.max_delta_bytes) < 1:
        raise ValidationError("--max-remember-chars, --max-import-entries and "
                              "--max-delta-bytes must be >= 1")
    limits = Limits(timeout=args.timeout, max_remember_chars=args.max_remember_chars,
                    max_import_entries=args.max_import_entries,
                    max_delta_bytes=args.max_delta_bytes)
    began = time.perf_counter()
    from tulving.interfaces import trace_export
    from tulving.interfaces.http.observability import ObservabilityOptions

    if not args.metrics_refresh >= 0:
        raise ValidationError("--metrics-refresh must be a number of seconds >= 0")
    if args.metrics_tenant_label and args.no_metrics:
        raise ValidationError("--metrics-tenant-label needs the metrics (drop --no-metrics)")
    stop_tracing = trace_export.start(args.otlp_endpoint)  # before the memory opens
    if args.access_log != "off":
        _log_access_lines()
    options = ObservabilityOptions(
        metrics=not args.no_metrics, metrics_token=os.environ.get(METRICS_TOKEN_ENV) or None,
        tenant_labels=args.metrics_tenant_label, census_interval=args.metrics_refresh,
        access_log=args.access_log)
    try:
        return _run(args, began, options, limits)
    finally:
        if stop_tracing is not None:
            stop_tracing()  # the batch of spans still queued goes out


def _log_access_lines() -> None:
    """The access log's JSON lines, as they are, on stderr."""
    logger = logging.getLogger("tulving.access")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


#: How often the server's threads hand the interpreter over (Python's default is 5 ms):
#: a short call's every return from SQLite or the network waits for a long call's thread
#: to let go, and at 5 ms a search beside a costly scan took 10x its time
#: (``benchmarks/redaction_fairness.py``).
SWITCH_INTERVAL = 0.0005


def _run(args: argparse.Namespace, began: float, options: Any, limits: Any) -> int:
    import uvicorn

    sys.setswitchinterval(SWITCH_INTERVAL)

    from tulving.interfaces.auth.bearer_tokens import registry_for
    from tulving.interfaces.http import create_app

    sock = bind(args.host, args.port)  # a busy port is told before the memory opens
    try:
        memory = open_memory(settings_from(args),
                             read_only=bool(getattr(args, "read_only_store", False)))
        memory.startup()
    except BaseException:
        sock.close()
        raise
    registry = registry_for(memory)
    token_hint = hint(args, "serve", "token", "create", "me")
    if args.allow_remote and not registry.records():
        memory.close()
        sock.close()
        raise ConfigError(f"--allow-remote needs at least one token: {token_hint}")
    app = create_app(memory, registry=registry, concurrency=args.concurrency, limits=limits,
                     observability=options)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning",
                            lifespan="on")
    server = _server_class()(config)
    server.app_state = app.state
    base = f"http://{_url_host(args.host)}:{sock.getsockname()[1]}"
    head = f"tulving: serving {memory.location} on {base}/v1"
    lines = [f"  inspector: {base}/ui/",
             f"  health:    {base}/v1/health"]
    if getattr(app.state, "metrics", None) is not None:
        lines.append(f"  metrics:   {base}/metrics"
                     + ("" if options.metrics_token else " (this machine only)"))
    elif options.metrics:
        from tulving.distribution import missing_extra

        lines.append("  metrics:   off; " + missing_extra("/metrics", "metrics",
                                                          "prometheus_client"))
    if not registry.records():
        lines.append(f"  no tokens yet; every call but /v1/health needs one: {token_hint}")
    # said once the server listens and its startup ran
    server.say_ready = lambda: print(
        "\n".join([f"{head} (ready in {time.perf_counter() - began:.2f} s)", *lines]),
        file=sys.stderr, flush=True)
    server.run(sockets=[sock])
    return OK


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port``, bound before anything says the server is
    ready; a port another process holds (or one this user may not bind) is a
    ``ConfigError`` naming it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # not a listening one's
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} on {host} is already in use by another "
                              "process: stop it or choose another --port") from exc
        raise ConfigError(f"cannot listen on {host} port {port}: "
                          f"{exc.strerror or exc}") from exc
    sock.set_inheritable(True)
    return sock


def _url_host(host: str) -> str:
    """``host`` as it goes in a URL (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _server_class() -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, except that SIGTERM/SIGINT end it gracefully with exit 0: the
        memory is closed (index persisted, sessions summarised), a clean stop, not a
        death by signal (uvicorn re-raises the signal after shutting down). It drains
        first (``tulving.interfaces.http.drain``): ``DRAIN_SECONDS`` of answers that close
        their connections, then the stop; a second signal stops it at once."""

        app_state: Any = None
        say_ready: Any = None
        _draining = False

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started and not self.should_exit:  # listening, lifespan done
                self.say_ready()

        def handle_exit(self, sig: int, frame: Any) -> None:
            import threading

            from tulving.interfaces.http.drain import DRAIN_SECONDS

            if self._draining or self.app_state is None or DRAIN_SECONDS <= 0:
                super().handle_exit(sig, frame)
                return
            self._draining = True
            self.app_state.draining = True
            timer = threading.Timer(DRAIN_SECONDS, super().handle_exit, (sig, frame))
            timer.daemon = True
            timer.start()

        def capture_signals(self) -> Any:
            import contextlib
            import signal

            @contextlib.contextmanager
            def handlers() -> Any:
                old = {s: signal.signal(s, self.handle_exit)
                       for s in (signal.SIGINT, signal.SIGTERM)}
                try:
                    yield
                finally:
                    for sig, handler in old.items():
                        signal.signal(sig, handler)

            return handlers()

    return Server


def _token_create(args: argparse.Namespace, out: Output) -> int:
    record, secret = _with_registry(args, lambda reg: reg.create(
        args.name, user_id=args.bind_user, workspace_id=args.bind_workspace,
        agent_id=args.bind_agent, read_only=args.read_only))
    # The secret is the point of this command: printed once, deliberately unredacted.
    import json

    data = {"id": record.id, "name": record.name, "token": secret, "user_id": record.user_id,
            "workspace_id": record.workspace_id, "agent_id": record.agent_id,
            "read_only": record.read_only}
    print(json.dumps(data) if out.as_json else
          f"token for {record.name} (id {record.id}); shown once, store it now:\n{secret}",
          file=out.out)
    return OK
