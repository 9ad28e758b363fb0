"""Truthful doors (issue 54, item 8): a door says what happened, or refuses with a typed
error, and never says more than it did.

- a reading CLI command on a ``--path`` with no store refuses (``NotFoundError``, exit 1)
  and creates nothing there;
- ``tulving serve`` says it is serving once it listens (a port given as 0 is named as the
  one bound), and a port another process holds is an error naming the port, exit 3,
  without a "serving" line;
- a read-only memory refuses ``consolidate`` with ``apply`` (``ReadOnlyError``: the
  library, ``tulving serve --read-only`` through the Python client, ``tulving mcp
  --read-only`` through the official MCP client) instead of answering "applied";
- a line the MCP stdio server cannot read (nested too deeply, or not JSON) is answered
  with a JSON-RPC error, and the server answers the next line.

Everything runs the real thing: CLI and server subprocesses, real sockets on 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import select
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters

from tests.e2e.conftest import FAST, ROOT, CLIResult, clean_env
from tests.http.conftest import cli, stop_server, wait_healthy
from tulving import Memory
from tulving.domain.errors import ReadOnlyError

READING = [("search", "pelican"), ("list",), ("stats",), ("curate", "pelican"),
           ("export", "out.zip")]


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("where", ["typo.db", "no-such-folder/memory.db"])
@pytest.mark.parametrize("command", READING, ids=[c[0] for c in READING])
def test_a_reading_command_on_a_path_with_no_store_refuses_and_creates_nothing(
        tulving: Callable[..., CLIResult], tmp_path: Path, command: tuple[str, ...],
        where: str) -> None:
    before = files(tmp_path)
    result = tulving("--path", str(tmp_path / where), *FAST, *command, "--json")
    assert result.code == 1, result
    error = result.json()["error"]
    assert (error["type"], error["exit_code"]) == ("NotFoundError", 1), error
    assert "no memory at" in error["message"] and "creates nothing" in error["message"]
    assert files(tmp_path) == before


def test_a_reading_command_still_reads_a_store_that_is_there(
        tulving: Callable[..., CLIResult], tmp_path: Path) -> None:
    path = str(tmp_path / "memory.db")
    assert tulving("--path", path, *FAST, "store", "pelicans nest on islands",
                   "--type", "FACT").code == 0
    found = tulving("--path", path, *FAST, "search", "pelicans", "--json")
    assert found.code == 0 and "pelicans" in found.out, found


def _serve(folder: Path, port: int, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tulving.interfaces.cli.main", "serve", "--path",
         str(folder / "server.db"), *FAST, "--port", str(port), *extra],
        env=clean_env(), cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test_serve_on_a_port_another_process_holds_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        proc = _serve(tmp_path, port)
        _, err = proc.communicate(timeout=120)
    said = err.decode()
    assert proc.returncode == 3, said
    assert f"port {port}" in said and "in use" in said, said
    assert "serving" not in said, "it said it was ready on a port it never had"
    assert not (tmp_path / "server.db").exists(), "the port is checked before the store opens"


def test_serve_says_ready_once_it_listens_on_the_port_it_names(tmp_path: Path) -> None:
    proc = _serve(tmp_path, 0)  # the system picks the port: only the bound socket knows it
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 120
        line = b""
        while b"serving" not in line:
            assert time.monotonic() < deadline and proc.poll() is None, line
            line = proc.stderr.readline()
        found = re.search(rb"on http://127\.0\.0\.1:(\d+)/v1 \(ready in", line)
        assert found, line
        # at once, no retry: the server listens and its startup has run
        answer = httpx.get(f"http://127.0.0.1:{int(found.group(1))}/v1/health", timeout=10)
        assert answer.status_code == 200 and answer.json()["status"] == "ok"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _similar(memory: Memory) -> int:
    """Memories a consolidation would merge; how many the store holds."""
    for text in ("the staging database is in Frankfurt",
                 "the staging database lives in Frankfurt",
                 "our staging database is hosted in Frankfurt"):
        memory.store(text, type="FACT")
    return len(memory.list_entries().entries)


def test_a_read_only_library_memory_refuses_to_apply_consolidation(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with Memory(path, agent_id="a", user_id="u1", embedder="hashing", vectors="exact") as m:
        held = _similar(m)
    with Memory(path, agent_id="a", user_id="u1", embedder="hashing", vectors="exact",
                read_only=True) as reader:
        assert reader.consolidate(dry_run=True).dry_run  # the plan is shown
        with pytest.raises(ReadOnlyError, match="read-only"):
            reader.consolidate(dry_run=False)
    with Memory(path, agent_id="a", user_id="u1", embedder="hashing", vectors="exact") as m:
        assert len(m.list_entries().entries) == held, "nothing was consolidated"


def test_serve_read_only_refuses_to_apply_consolidation(tmp_path: Path) -> None:
    from tulving.client import TulvingClient
    from tulving.client.results import ServerError

    path = tmp_path / "server.db"
    token = json.loads(cli("serve", "token", "create", "alice", "--bind-user", "u1",
                           "--path", str(path), *FAST, "--json"))["token"]
    with Memory(path, agent_id="default", user_id="u1", embedder="hashing",
                vectors="exact") as m:
        _similar(m)
    port = _free_port()
    proc = _serve(tmp_path, port, "--read-only")
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, proc, lambda: "", timeout=120)
        with TulvingClient(url, token, retries=0) as client:
            assert client.consolidate(apply=False) is not None
            with pytest.raises(ServerError) as refused:
                client.consolidate(apply=True)
        assert (refused.value.status, refused.value.kind) == (409, "ReadOnlyError")
    finally:
        stop_server(_Proc(proc))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Proc:
    """What ``stop_server`` needs of a server."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc


def _mcp(path: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "tulving.interfaces.mcp", "--path", str(path),
            "--agent-id", "e2e", *FAST, *extra]


@pytest.mark.anyio
async def test_mcp_read_only_refuses_to_apply_consolidation(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with Memory(path, agent_id="e2e", embedder="hashing", vectors="exact") as m:
        held = _similar(m)
    argv = _mcp(path, "--read-only")
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=clean_env(),
                                   cwd=str(ROOT))
    async with Client(params) as client:
        plan = await client.call_tool("memory_consolidate", {"apply": False})
        assert not plan.is_error, plan
        applied = await client.call_tool("memory_consolidate", {"apply": True})
        text = "\n".join(b.text for b in applied.content if b.type == "text")
        assert applied.is_error and "ReadOnlyError" in text, text
    with Memory(path, agent_id="e2e", embedder="hashing", vectors="exact") as m:
        assert len(m.list_entries().entries) == held


class _RawMCP:
    """``tulving mcp`` on stdio, written to and read from line by line."""

    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen(_mcp(path), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=clean_env(), cwd=str(ROOT))

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self, timeout: float = 60) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "no answer: the server was silent"
        return dict(json.loads(self.proc.stdout.readline()))


def test_mcp_stdio_answers_a_line_nested_too_deeply_with_a_json_rpc_error(
        tmp_path: Path) -> None:
    server = _RawMCP(tmp_path / "memory.db")
    try:
        server.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}))
        assert server.answer(120)["id"] == 1
        server.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        depth = 100_000
        server.send('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": '
                    '"memory_search", "arguments": {"query": ' + "[" * depth + "]" * depth
                    + "}}}")
        deep = server.answer(30)
        assert deep["id"] == 2 and deep["error"]["code"] == -32600, deep
        assert "nested" in deep["error"]["message"], deep
        server.send("this is not JSON")
        unreadable = server.answer(30)
        assert unreadable["id"] is None and unreadable["error"]["code"] == -32700, unreadable
        server.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
        listed = server.answer(30)
        assert listed["id"] == 3 and listed["result"]["tools"], "the server goes on"
    finally:
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        assert server.proc.wait(timeout=30) == 0
