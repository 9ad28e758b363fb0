"""The MCP server over streamable HTTP on 127.0.0.1 with bearer tokens.

A real server process (``tulving mcp --http --port 0``), the official MCP client over
HTTP with a token, raw HTTP requests without or with bad tokens (401), revocation taking
effect without a restart, and refusal to bind anything but 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import FAST, ROOT, clean_env

pytestmark = pytest.mark.anyio


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tulving.interfaces.cli.main", *args],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=str(ROOT),
        timeout=60,
    )


def create_token(path: str, name: str) -> str:
    result = cli("--path", path, "mcp", "token", "create", name, "--json")
    assert result.returncode == 0, result.stderr
    token: str = json.loads(result.stdout)["token"]
    return token


class Server:
    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc, self.url = proc, url


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[Server, str, dict[str, str]]]:
    path = str(tmp_path / "shared.db")
    tokens = {name: create_token(path, name) for name in ("planner", "coder")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tulving.interfaces.cli.main",
            "--path",
            path,
            *FAST,
            "--agent-id",
            "team",
            "mcp",
            "--http",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
        cwd=str(ROOT),
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    url = None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        match = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line)
        if match:
            url = match.group(1)
            break
    assert url, "server did not announce its address"
    try:
        yield Server(proc, url), path, tokens
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def _client(url: str, token: str | None) -> Client:
    import httpx2

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers)))


def _initialize_status(url: str, token: str | None) -> int:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    return httpx.post(url, json=body, headers=headers, timeout=30).status_code


async def test_tokens_gate_every_request(http_server: Any) -> None:
    server, path, tokens = http_server
    assert _initialize_status(server.url, None) == 401
    assert _initialize_status(server.url, "tlv_000000000000_" + "x" * 43) == 401
    last = tokens["planner"][-1]
    tampered = tokens["planner"][:-1] + ("B" if last == "A" else "A")  # always a change
    assert _initialize_status(server.url, tampered) == 401
    assert _initialize_status(server.url, "not-even-a-token") == 401
    assert _initialize_status(server.url, tokens["planner"]) == 200

    # two agents share one memory through one server, each with its own token
    async with _client(server.url, tokens["planner"]) as planner:
        stored = await planner.call_tool(
            "memory_store",
            {
                "content": "Sprint goal: ship refresh-token rotation.",
                "type": "PLAN",
                "key": "sprint/goal",
            },
        )
        assert not stored.is_error
        bad = await planner.call_tool(
            "memory_store", {"content": "x", "type": "FACT", "colour": "blue"}
        )
        assert bad.is_error and "colour" in bad.content[0].text
    async with _client(server.url, tokens["coder"]) as coder:
        got = await coder.call_tool("memory_get", {"id_or_key": "sprint/goal"})
        assert not got.is_error
        assert "refresh-token rotation" in got.content[0].text
        found = await coder.call_tool("memory_search", {"query": "sprint goal"})
        assert found.structured_content["results"][0]["key"] == "sprint/goal"

    # revocation applies to the running server at once
    revoked = cli("--path", path, "mcp", "token", "revoke", "coder")
    assert revoked.returncode == 0, revoked.stderr
    assert _initialize_status(server.url, tokens["coder"]) == 401
    assert _initialize_status(server.url, tokens["planner"]) == 200
    listed = cli("--path", path, "mcp", "token", "list", "--json")
    names = [t["name"] for t in json.loads(listed.stdout)["tokens"]]
    assert names == ["planner"]
    secret = tokens["planner"].split("_", 2)[2].encode()
    assert not Path(path + ".tokens.json").exists()
    assert not [f for f in Path(path).parent.iterdir() if f.is_file()
                and secret in f.read_bytes()]

    # SIGTERM: prompt, clean exit, the store's lock released
    began = time.perf_counter()
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=15) == 0
    print(f"\nHTTP server stopped {time.perf_counter() - began:.2f} s after SIGTERM")
    after = cli("--path", path, *FAST, "--agent-id", "team", "get", "sprint/goal", "--json")
    assert after.returncode == 0, after.stderr


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com", "::"])
def test_refuses_non_loopback_hosts(
    tmp_path: Path, host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from tulving.interfaces.cli.main import main

    code = main(["--path", str(tmp_path / "m.db"), *FAST, "mcp", "--http", "--host", host])
    assert code == 3
    assert "127.0.0.1" in capsys.readouterr().err
    assert not (tmp_path / "m.db").exists()
