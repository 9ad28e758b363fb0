"""The Tulving MCP server: stdio by default, streamable HTTP on 127.0.0.1 with tokens.

Built on the official SDK 2.x (``mcp.server.mcpserver.MCPServer``). What this module adds
to the SDK: unknown or oversized arguments are refused as tool errors (the SDK would
silently drop unknown names, so a misspelt ``tpo_k`` would go unnoticed); argument
validation errors are reported by field without echoing the values; the Memory opens in
the background so ``initialize`` is answered at once; SIGTERM, SIGINT and a closed stdin
all end the server promptly with the Memory closed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult

from tulving.application.plumbing.rule_set_source import redact
from tulving.domain.errors import ConfigError, ValidationError
from tulving.domain.log_masking import masked_logger
from tulving.domain.validation import first_invalid_text
from tulving.interfaces.mcp import unreadable
from tulving.interfaces.mcp.agent_tools import build_agent_tools
from tulving.interfaces.mcp.service import MemoryService
from tulving.interfaces.mcp.tool_hints import ANNOTATIONS
from tulving.interfaces.mcp.tool_schemas import plain_schema
from tulving.interfaces.mcp.tools import (
    allowed_arguments,
    build_tools,
    error,
    failure,
    runner,
)

if TYPE_CHECKING:
    from tulving.application.memory import Memory

#: Whole-call argument size cap; content itself is capped lower by the Memory.
MAX_ARGUMENT_BYTES = 512 * 1024
#: A stdin line longer than this is passed on unfinished (and rejected as bad JSON).
MAX_LINE_BYTES = 16 * 1024 * 1024
LOCAL_HOSTS = {"127.0.0.1": "127.0.0.1", "localhost": "127.0.0.1"}
INSTRUCTIONS = (
    "Tulving is your persistent memory across sessions. At the start of a session call "
    "memory_curate with no query (the briefing). Before a task, memory_curate or "
    "memory_search with the task. Store durable facts, decisions, preferences and procedures with memory_store "
    "(give changing facts a key); fix wrong ones with memory_correct."
)
log = masked_logger("tulving.mcp")


def _tool_error(text: str) -> CallToolResult:
    return failure("ArgumentError", redact(text))


class TulvingMCPServer(MCPServer[Any]):
    """MCPServer that refuses what the SDK would ignore or echo."""

    def __init__(self, service: MemoryService, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.service = service
        self._allowed: dict[str, frozenset[str]] = {}
        tools = [*build_tools(service), *build_agent_tools(runner(service))]
        for fn, description in tools:
            self.add_tool(fn, name=fn.__name__, description=description,
                          annotations=ANNOTATIONS[fn.__name__])
            tool = self._tool_manager.get_tool(fn.__name__)
            assert tool is not None
            tool.parameters = plain_schema(tool.parameters)
            self._allowed[fn.__name__] = allowed_arguments(fn)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if INVALID_TEXT in arguments:
            where = str(arguments[INVALID_TEXT])
            return error(ValidationError(f"{name}: {where} is not valid Unicode text"))
        allowed = self._allowed.get(name)
        if allowed is None:
            known = ", ".join(sorted(self._allowed))
            return _tool_error(f"unknown tool {name!r}; available: {known}")
        unknown = sorted(set(arguments) - allowed)
        if unknown:
            return _tool_error(
                f"{name}: unknown argument(s) {', '.join(map(repr, unknown))}; "
                f"accepted: {', '.join(sorted(allowed)) or 'none'}"
            )
        invalid = first_invalid_text(arguments, "arguments")
        if invalid is not None:
            return error(ValidationError(f"{name}: {invalid} is not valid Unicode text"))
        try:
            size = len(json.dumps(arguments, default=str))
        except (TypeError, ValueError):
            return _tool_error(f"{name}: arguments are not JSON-serialisable")
        if size > MAX_ARGUMENT_BYTES:
            return _tool_error(
                f"{name}: arguments are {size} bytes; the limit is {MAX_ARGUMENT_BYTES}"
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            errors = getattr(cause, "errors", None)
            if callable(errors):
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in err.get('loc', ())) or 'arguments'}: {err.get('msg')}"
                    for err in errors()
                )
                return _tool_error(f"{name}: invalid arguments: {problems}")
            return _tool_error(str(exc))


#: The tool list is fixed for a server's life and the same for every token, so a client
#: may keep it (2026-07-28 caching hints) for an hour and share it across tokens.
LIST_HINT = CacheHint(ttl_ms=3_600_000, scope="public")


def build_server(service: MemoryService) -> TulvingMCPServer:
    from tulving import __version__

    return TulvingMCPServer(
        service, name="tulving", version=__version__, instructions=INSTRUCTIONS,
        log_level="WARNING",
        cache_hints={method: LIST_HINT for method in ("tools/list", "prompts/list",
                                                       "resources/list",
                                                       "resources/templates/list",
                                                       "server/discover")})


async def _on_signals(stop: Callable[[], None]) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("signal %s: shutting down", signum)
            stop()
            return


async def serve_stdio(open_memory: Callable[[], Memory]) -> None:
    """Serve on stdin/stdout until stdin closes or SIGTERM/SIGINT arrives."""
    service = MemoryService(open_memory)
    server = build_server(service)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_on_signals, tg.cancel_scope.cancel)
            tg.start_soon(service.start)
            await _run_stdio(server)
            log.info("stdin closed: shutting down")
            tg.cancel_scope.cancel()
    finally:
        await service.close()


class _StdinLines:
    """Lines of stdin, read by a daemon thread, that a shutdown never waits for.

    The SDK reads stdin through ``anyio.wrap_file``, i.e. a non-daemon worker thread
    blocked in ``readline``: after SIGTERM the interpreter would wait for the client to
    write another line before exiting. A daemon thread feeding an asyncio queue lets the
    process exit as soon as the Memory is closed.
    """

    def __init__(self, fd: int) -> None:
        self._fd = os.dup(fd)
        self._queue: asyncio.Queue[bytes | None] | None = None
        #: The lines handed on and not yet relayed, oldest first: the SDK makes one item
        #: of each (a message, or the exception of a line it cannot read), in order.
        self.handed: collections.deque[str] = collections.deque()

    def __aiter__(self) -> _StdinLines:
        return self

    def _start(self) -> asyncio.Queue[bytes | None]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()

        def pump() -> None:
            # os.read on a private descriptor: no BufferedReader lock for the interpreter
            # to trip over at exit while this daemon thread is blocked.
            parts: list[bytes] = []
            size = 0
            try:
                while True:
                    chunk = os.read(self._fd, 1 << 16)
                    if not chunk:
                        break
                    *complete, rest = chunk.split(b"\n")
                    for piece in complete:
                        loop.call_soon_threadsafe(queue.put_nowait, b"".join([*parts, piece]))
                        parts, size = [], 0
                    parts.append(rest)
                    size += len(rest)
                    if size > MAX_LINE_BYTES:  # hand it on: it fails parsing, not memory
                        loop.call_soon_threadsafe(queue.put_nowait, b"".join(parts))
                        parts, size = [], 0
                if size:
                    loop.call_soon_threadsafe(queue.put_nowait, b"".join(parts))
            except (OSError, RuntimeError):
                pass
            finally:
                with contextlib.suppress(RuntimeError):  # the loop is already gone
                    loop.call_soon_threadsafe(queue.put_nowait, None)

        threading.Thread(target=pump, name="tulving-stdin", daemon=True).start()
        return queue

    async def __anext__(self) -> str:
        if self._queue is None:
            self._queue = self._start()
        line = await self._queue.get()
        if line is None:
            raise StopAsyncIteration
        screened = screen_line(line.decode("utf-8", errors="replace"))
        self.handed.append(screened)
        return screened


#: A reserved argument name: ``screen_line`` puts it in place of the arguments of a tool
#: call whose text is not valid Unicode, and ``call_tool`` answers it with that error.
INVALID_TEXT = "\x00tulving:invalid-unicode"


def screen_line(text: str) -> str:
    """A JSON-RPC line whose strings hold a lone surrogate (the JSON escape ``\\ud800``)
    fails the SDK's parser, which then answers nothing: the client waits for ever. Such a
    tool call becomes one the server answers with a ValidationError naming the argument;
    any other message gets the bad characters replaced (they never reach the memory)."""
    if "\\ud" not in text.lower():
        return text
    try:
        message = json.loads(text)
    except ValueError:
        return text
    invalid = first_invalid_text(message, "message")
    if invalid is None:
        return text
    params = message.get("params") if isinstance(message, dict) else None
    if message.get("method") == "tools/call" and isinstance(params, dict):
        name = params.get("name")
        where = first_invalid_text(params.get("arguments"), "arguments") or invalid
        message["params"] = {"name": name if first_invalid_text(name) is None else "?",
                             "arguments": {INVALID_TEXT: where}}
        return json.dumps(message)
    return json.dumps(message, ensure_ascii=False).encode("utf-8", "replace").decode("utf-8")


async def _run_stdio(server: TulvingMCPServer) -> None:
    """``MCPServer.run_stdio_async`` with a cancellable stdin (see above), and a line the
    SDK cannot read answered with a JSON-RPC error (``unreadable``) instead of silence."""
    from mcp.server.stdio import stdio_server
    from mcp.shared._context_streams import create_context_streams
    from mcp.shared.message import SessionMessage

    lowlevel = server._lowlevel_server  # the SDK's own Client reaches it the same way
    stdin = _StdinLines(sys.stdin.fileno())
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):  # type: ignore[arg-type]
        relay, relayed = create_context_streams[SessionMessage | Exception](0)

        async def screen() -> None:
            async with relay:
                async for item in read_stream:
                    line = stdin.handed.popleft() if stdin.handed else ""  # the item's
                    if isinstance(item, Exception):  # a line the SDK cannot read: answered
                        with contextlib.suppress(anyio.ClosedResourceError,
                                                 anyio.BrokenResourceError):
                            await write_stream.send(SessionMessage(unreadable.answer(line)))
                        continue
                    await relay.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(screen)
            await lowlevel.run(relayed, write_stream, lowlevel.create_initialization_options())
            tg.cancel_scope.cancel()


def check_host(host: str) -> str:
    bound = LOCAL_HOSTS.get(host)
    if bound is None:
        raise ConfigError(
            f"refusing to serve on {host!r}: the HTTP transport binds to "
            "127.0.0.1 only (put a reverse proxy in front to expose it)"
        )
    return bound


async def serve_http(
    open_memory: Callable[[], Memory],
    *,
    port: int,
    host: str = "127.0.0.1",
    token_registry: Any = None,
    ready: Callable[[int], None] | None = None,
) -> None:
    """Streamable HTTP at ``http://127.0.0.1:<port>/mcp``; every request needs a token.

    ``token_registry``: a ``TokenRegistry``; ``None`` (the default) reads the tokens of
    the served Memory's own store at each request, so a revocation made by another
    process applies at once.
    """
    import uvicorn

    from tulving.interfaces.auth.bearer_tokens import registry_for
    from tulving.interfaces.auth.middleware import BearerAuth

    bound = check_host(host)
    service = MemoryService(open_memory)
    server = build_server(service)

    async def verify(token: str) -> Any:
        if token_registry is not None:
            return await anyio.to_thread.run_sync(token_registry.verify, token)
        return await service.call(lambda memory: registry_for(memory).verify(token))

    app = BearerAuth(server.streamable_http_app(host=bound), verify)
    config = uvicorn.Config(
        app, host=bound, port=port, log_level="warning", timeout_graceful_shutdown=1, lifespan="on"
    )
    web = _uvicorn_class()(config)

    def stop() -> None:
        web.should_exit = True

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_on_signals, stop)
            tg.start_soon(service.start)
            if ready is not None:
                tg.start_soon(_announce, web, ready)
            await web.serve()
            tg.cancel_scope.cancel()
    finally:
        await service.close()


def _uvicorn_class() -> Any:
    import uvicorn

    class QuietSignals(uvicorn.Server):
        """uvicorn re-raises a caught SIGTERM after its own shutdown, which would kill the
        process before the Memory is closed; signals are handled by ``_on_signals``."""

        @contextlib.contextmanager
        def capture_signals(self) -> Any:
            yield

    return QuietSignals


async def _announce(web: Any, ready: Callable[[int], None]) -> None:
    while not web.started:
        await anyio.sleep(0.02)
    sockets = [s for server in web.servers for s in server.sockets]
    ready(sockets[0].getsockname()[1] if sockets else 0)


def run(
    open_memory: Callable[[], Memory],
    *,
    http: bool = False,
    port: int = 8765,
    host: str = "127.0.0.1",
    token_registry: Any = None,
) -> None:
    """Blocking entry point for ``tulving mcp`` and ``python -m tulving.interfaces.mcp``."""
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="tulving-mcp %(levelname)s %(message)s"
    )
    if http:
        check_host(host)

        def announce(p: int) -> None:
            print(
                f"tulving MCP server on http://127.0.0.1:{p}/mcp (bearer token required)",
                file=sys.stderr,
                flush=True,
            )

        anyio.run(
            lambda: serve_http(
                open_memory, port=port, host=host, token_registry=token_registry, ready=announce
            )
        )
    else:
        anyio.run(serve_stdio, open_memory)
