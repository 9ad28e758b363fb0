"""The MCP door: the real server (``python -m tulving.interfaces.mcp``) over stdio,
reached by the official MCP client, and by JSON-RPC lines written by hand for what that
client refuses to send (a lone surrogate: it serialises strictly, any other client may
not)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import subprocess
import sys
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from tests.doors.door import Door, given, store_fields, utf8_or_unsupported
from tests.doors.outcome import Outcome, Unsupported, typed
from tests.e2e.conftest import FAST, ROOT, clean_env


def server_argv(path: Path, *extra: str, agent_id: str = "e2e",
                user_id: str = "u1") -> list[str]:
    return [sys.executable, "-m", "tulving.interfaces.mcp", "--path", str(path),
            "--agent-id", agent_id, "--user-id", user_id, *FAST, *extra]


def tool_call(op: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The tool and arguments that perform ``op`` (Unsupported: no tool does)."""
    if op == "store":
        if args.get("agent_id") is not None:
            raise Unsupported("an MCP server serves the one agent it was started for")
        body = store_fields(**args)
        return "memory_store", body
    if op in ("get", "forget") and not args.get("hard"):
        return f"memory_{op}", {"id_or_key": args["id_or_key"]}
    if op == "correct":
        return "memory_correct", {"id_or_key": args["id_or_key"], "content": args["content"],
                                  **given(reason=args.get("reason"))}
    if op == "search":
        if args.get("since") is not None:
            raise Unsupported("memory_search has no since argument")
        return "memory_search", {"query": args["query"],
                                 **given(top_k=args.get("top_k"), tags=args.get("tags"),
                                         mode=args.get("mode"),
                                         min_score=args.get("min_score")),
                                 **(args.get("extra") or {})}
    if op == "curate":
        return "memory_curate", given(query=args.get("query"),
                                      token_budget=args.get("token_budget"),
                                      mode=args.get("mode"))
    simple = {"list_keys": ("memory_list_keys", "prefix"), "profile": ("memory_profile", "subject"),
              "remember": ("memory_remember", "text"), "consolidate": ("memory_consolidate", "apply"),
              "stats": ("memory_stats", None), "list_entries": ("memory_list", None)}
    if op in simple:
        tool, name = simple[op]
        return tool, given(**{name: args.get(name)}) if name else {}
    reasons = {"store_deep": "the official MCP client's JSON encoder recurses (mcp-raw "
                             "sends the text)",
               "forget": "memory_forget only archives (no hard delete over MCP)",
               "history": "there is no history tool", "audit": "there is no audit tool",
               "start_session": "sessions follow the connection; there is no session tool",
               "import_bundle": "there is no import tool"}
    raise Unsupported(reasons.get(op, f"no tool performs {op}"))


def outcome_of(door: str, is_error: bool, text: str, structured: Any) -> Outcome:
    shown = text + "\n" + json.dumps(structured, ensure_ascii=False)
    if not is_error:
        return Outcome(door, "ok", payload=structured, shown=shown, code="result")
    try:
        kind = structured["error"]["type"]
    except (KeyError, TypeError):
        kind = "(no structured error)"
    return typed(door, kind, "tool error", shown)


class _Loop:
    """An event loop in a thread of its own, so synchronous tests can await."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float = 120) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


class MCPDoor(Door):
    """The official client, one server process for the door's life."""

    name = "mcp"

    def __init__(self, path: Path, *extra: str, errors: Path | None = None,
                 name: str = "mcp") -> None:
        super().__init__(path)
        self.name = name
        self.errors = errors
        self._argv = server_argv(path, *extra)
        self._loop = _Loop()
        self._client: Any = None
        self._stop: asyncio.Event | None = None
        self._held: Any = None
        self._loop.run(self._open())

    async def _open(self) -> None:
        started = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._held = asyncio.ensure_future(self._hold(started))
        await started

    async def _hold(self, started: asyncio.Future[None]) -> None:
        """Enter the client and stay in it (an anyio scope is left by the task that
        entered it) until ``close``."""
        from mcp import Client, StdioServerParameters

        argv = self._argv
        if self.errors is not None:  # the server's stderr kept in a file, through a shell
            import shlex

            argv = ["/bin/sh", "-c", "exec " + " ".join(shlex.quote(a) for a in argv)
                    + f" 2>{shlex.quote(str(self.errors))}"]
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=clean_env(),
                                       cwd=str(ROOT))
        try:
            async with Client(params) as client:
                self._client = client
                started.set_result(None)
                assert self._stop is not None
                await self._stop.wait()
        except BaseException as exc:
            if not started.done():
                started.set_exception(exc)
            raise

    def tool(self, name: str, arguments: dict[str, Any]) -> Outcome:
        utf8_or_unsupported(arguments, "the official MCP client refuses to serialise a lone "
                                       "surrogate (mcp-raw sends it)")
        result = self._loop.run(self._client.call_tool(name, arguments))
        text = "\n".join(b.text for b in result.content if getattr(b, "type", "") == "text")
        return outcome_of(self.name, bool(result.is_error), text, result.structured_content)

    def call(self, op: str, **args: Any) -> Outcome:
        return self.tool(*tool_call(op, args))

    def close(self) -> None:
        if self._stop is not None:
            self._loop.loop.call_soon_threadsafe(self._stop.set)
            # the client ends the server process on its way out, whatever it raised
            with contextlib.suppress(Exception):
                self._loop.run(asyncio.wait_for(asyncio.shield(self._held), 30), timeout=40)
        self._loop.stop()


class MCPRawDoor(Door):
    """JSON-RPC lines over the server's stdin and stdout, escaped as ASCII: what any
    client in any language may send."""

    name = "mcp-raw"

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.proc = subprocess.Popen(server_argv(path), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=clean_env(), cwd=str(ROOT))
        self._ids = itertools.count(2)
        self._send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "doors", "version": "1"}}})
        self._answer(1)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())  # "\ud800" escaped
        self.proc.stdin.flush()

    def _answer(self, number: int, *others: int) -> dict[str, Any]:
        """The next message answering ``number`` (or one of ``others``)."""
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"the MCP server closed its stdout (exit "
                                     f"{self.proc.poll()}) before answering {number}")
            message: dict[str, Any] = json.loads(line)
            if message.get("id") in (number, *others):
                return message

    def call(self, op: str, **args: Any) -> Outcome:
        number = next(self._ids)
        if op == "store_deep":  # written as text: no encoder builds this value
            depth = args["depth"]
            assert self.proc.stdin is not None
            self.proc.stdin.write((
                f'{{"jsonrpc": "2.0", "id": {number}, "method": "tools/call", "params": '
                '{"name": "memory_store", "arguments": {"content": "x", "type": "FACT", '
                '"metadata": {"a": ' + "[" * depth + "]" * depth + "}}}}\n").encode())
            self.proc.stdin.flush()
            # the server answers a line the SDK cannot parse with a JSON-RPC error
            # (tulving.interfaces.mcp.unreadable); a ping sent behind it tells "dropped,
            # still serving" from "hung", should that ever come back
            ping = next(self._ids)
            self._send({"jsonrpc": "2.0", "id": ping, "method": "ping"})
            answer = self._answer(number, ping)
            if answer.get("id") == ping:
                raise Unsupported("the MCP SDK's stdio transport drops a line nested past "
                                  "its parser's limit without answering (the server kept "
                                  "serving: a ping behind it was answered)")
        else:
            name, arguments = tool_call(op, args)
            self._send({"jsonrpc": "2.0", "id": number, "method": "tools/call",
                        "params": {"name": name, "arguments": arguments}})
            answer = self._answer(number)
        if "result" not in answer:
            code = (answer.get("error") or {}).get("code")
            # a request refused as malformed (parse error, invalid request or params) is
            # the input's fault, answered; any other JSON-RPC error is the server's
            family = "invalid" if code in (-32700, -32600, -32602) else "crash"
            return Outcome(self.name, family, shown=json.dumps(answer), kind="JSON-RPC error",
                           code=None if code is None else str(code))
        result = answer["result"]
        text = "\n".join(b.get("text", "") for b in result.get("content", []))
        return outcome_of(self.name, bool(result.get("isError")), text,
                          result.get("structuredContent"))

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=10)
