"""``tulving mcp``: serve the memory to agents, and manage the HTTP bearer tokens."""

from __future__ import annotations

import argparse
import os
from typing import Any

from tulving.domain.errors import ValidationError
from tulving.domain.log_masking import masked_logger
from tulving.interfaces.cli.config import add_common, add_json, open_memory, settings_from
from tulving.interfaces.cli.output import OK, Output


def register(sub: Any) -> None:
    p = sub.add_parser(
        "mcp",
        help="run the MCP server (stdio; --http for 127.0.0.1 with tokens)",
        description="Serve this memory over the Model Context Protocol. stdio by default "
        "(for Claude Code / Claude Desktop); --http serves streamable HTTP on "
        "127.0.0.1 for several agents, each with a bearer token.",
    )
    p.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    p.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765; 0 = any)")
    p.add_argument("--host", default="127.0.0.1", help="only 127.0.0.1/localhost are accepted")
    p.add_argument("--read-only", action="store_true", dest="read_only_store",
                   help="serve reads only, beside the process that writes the store (another "
                        "MCP server, tulving serve): search, curate and get work; writes "
                        "answer with an error. Without it, a SQLite store another process "
                        "holds is served read-only too, with a warning")
    p.add_argument("--otlp-endpoint", metavar="URL",
                   help="send traces to this OpenTelemetry collector (OTLP over HTTP, e.g. "
                        "http://127.0.0.1:4318; default: OTEL_EXPORTER_OTLP_ENDPOINT); a "
                        "request's traceparent in _meta continues the client's trace")
    add_common(p)
    p.set_defaults(func=_serve)
    tokens = p.add_subparsers(dest="mcp_command", metavar="{token}")
    t = tokens.add_parser("token", help="create, list or revoke HTTP bearer tokens")
    tsub = t.add_subparsers(dest="token_command", metavar="{create,list,revoke}", required=True)
    c = tsub.add_parser("create", help="create a token (shown once) for an agent")
    c.add_argument("name", help="who the token is for, e.g. an agent name")
    add_json(c)
    add_common(c)
    c.set_defaults(func=_token_create)
    ls = tsub.add_parser("list", help="list tokens (names and ids, never secrets)")
    add_json(ls)
    add_common(ls)
    ls.set_defaults(func=_token_list)
    r = tsub.add_parser("revoke", help="revoke a token by id or name")
    r.add_argument("id_or_name")
    add_json(r)
    add_common(r)
    r.set_defaults(func=_token_revoke)


def _serve(args: argparse.Namespace, out: Output) -> int:
    from tulving.interfaces.cli.extras import require

    require("mcp")
    from tulving.interfaces.mcp.server import check_host, run

    settings = settings_from(args)
    if args.http:
        check_host(args.host)
        if not 0 <= args.port <= 65535:
            raise ValidationError(f"--port must be 0..65535, got {args.port}")
    read_only = bool(getattr(args, "read_only_store", False))
    from tulving.interfaces import trace_export

    stop_tracing = trace_export.start(args.otlp_endpoint)  # before the memory opens
    try:
        run(
            lambda: _open_for_serving(settings, read_only),
            http=args.http,
            port=args.port,
            host=args.host,
        )
    finally:
        if stop_tracing is not None:
            stop_tracing()  # the spans still queued go out
    return OK


def _open_for_serving(settings: Any, read_only: bool) -> Any:
    """The served Memory: read-only when asked; otherwise the store for writing, or, when
    another process holds a SQLite store's writer lock, the same store read-only (so an
    agent can still search it) with a warning that says what happened and how to write."""

    from tulving.domain.errors import LockError

    if read_only:
        return open_memory(settings, read_only=True).startup()
    memory = open_memory(settings)
    try:
        return memory.startup()
    except LockError as exc:
        memory.close()
        sqlite = (settings.storage in (None, "sqlite") and "://" not in settings.path
                  and settings.path != ":memory:")
        if not sqlite:
            raise
        masked_logger("tulving.mcp").warning(
            "%s. Serving it read-only: search, curate and get work, writes answer with an "
            "error until the other process stops (tulving mcp --read-only says this on "
            "purpose)",
            exc)
        return open_memory(settings, read_only=True).startup()


def _with_registry(args: argparse.Namespace, fn: Any) -> Any:
    """``fn(registry)`` over the store's token table, opened without a ``Memory`` (and
    beside a server that holds a SQLite store: see ``interfaces.auth.token_door``)."""
    from tulving.application.plumbing.memory_settings import DEFAULT
    from tulving.interfaces.auth.bearer_tokens import TokenRegistry
    from tulving.interfaces.auth.token_door import open_token_store

    settings = settings_from(args)
    if settings.sources.get("path") == "default":
        os.makedirs(os.path.dirname(os.path.expanduser(settings.path)), exist_ok=True)
    store = open_token_store(
        settings.path, storage=settings.storage or DEFAULT,
        options=(settings.options or {}).get("storage"),
        encryption=settings.encryption if settings.encryption != "none" else None)
    try:
        return fn(TokenRegistry(store))
    finally:
        store.close()


def _token_create(args: argparse.Namespace, out: Output) -> int:
    record, secret = _with_registry(args, lambda reg: reg.create(args.name))
    # The secret is the point of this command: printed once, deliberately unredacted.
    if out.as_json:
        import json

        print(json.dumps({"id": record.id, "name": record.name, "token": secret}), file=out.out)
    else:
        print(
            f"token for {record.name} (id {record.id}); shown once, store it now:\n{secret}",
            file=out.out,
        )
    return OK


def _token_list(args: argparse.Namespace, out: Output) -> int:
    records = _with_registry(args, lambda reg: reg.records())
    data = [{"id": r.id, "name": r.name, "created_at": r.created_at.isoformat()}
            for r in records]
    out.result(
        {"tokens": data},
        "\n".join(f"{r['id']}  {r['name']}  {r['created_at']}" for r in data) or "(no tokens)",
    )
    return OK


def _token_revoke(args: argparse.Namespace, out: Output) -> int:
    record = _with_registry(args, lambda reg: reg.revoke(args.id_or_name))
    out.result(
        {"revoked": {"id": record.id, "name": record.name}},
        f"revoked token {record.id} ({record.name})",
    )
    return OK
