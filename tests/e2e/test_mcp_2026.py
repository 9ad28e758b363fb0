"""The MCP 2026-07-28 revision on the stdio server, as raw JSON-RPC lines a client writes:
no ``initialize``, version and client info in each request's ``_meta``, ``server/discover``,
list results with caching hints, and a request's ``traceparent`` continuing the client's
trace into the server's spans (sent to a real OTLP collector on 127.0.0.1). The handshake
of earlier revisions still works beside it (the official client, ``mode="legacy"``)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.e2e.conftest import FAST, ROOT, clean_env
from tests.http.test_observability import start_receiver

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
        "traceparent": f"00-{TRACE_ID}-{CLIENT_SPAN}-01"}


def _exchange(proc: subprocess.Popen[str], number: int, method: str,
              params: dict[str, Any]) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": number, "method": method,
                                 "params": params}) + "\n")
    proc.stdin.flush()
    answer: dict[str, Any] = json.loads(proc.stdout.readline())
    assert answer["id"] == number, answer
    return answer


def _spans(path: Path, want: Callable[[list[dict[str, Any]]], bool]) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 30
    while True:
        spans = [json.loads(line) for line in path.read_text().splitlines() if line]
        if want(spans) or time.monotonic() > deadline:
            return spans
        time.sleep(0.2)


def test_stateless_requests_discover_hints_and_traceparent(tmp_path: Path) -> None:
    receiver, port, out = start_receiver(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tulving.interfaces.mcp", "--path", str(tmp_path / "m.db"),
         *FAST, "--agent-id", "modern"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env=clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}",
                      OTEL_SERVICE_NAME="tulving-mcp"), cwd=str(ROOT))
    try:
        found = _exchange(proc, 1, "server/discover", {"_meta": META})["result"]
        assert "2026-07-28" in found["supportedVersions"]
        assert found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "tulving"
        assert "tools" in found["capabilities"] and "memory_curate" in found["instructions"]
        listed = _exchange(proc, 2, "tools/list", {"_meta": META})["result"]
        assert (listed["ttlMs"], listed["cacheScope"]) == (3_600_000, "public")
        assert len(listed["tools"]) == 13
        stored = _exchange(proc, 3, "tools/call", {
            "name": "memory_store", "_meta": META,
            "arguments": {"content": "Traces reach the collector", "type": "FACT"}})
        assert stored["result"]["isError"] is False, stored
        late = _exchange(proc, 4, "initialize", {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "late", "version": "1"}})
        assert "error" in late  # this connection speaks 2026-07-28: no handshake on it
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # the server flushes its spans as it stops
        proc.wait(timeout=30)
    try:
        spans = _spans(out, lambda s: any(x["name"] == "update_memory store" for x in s))
    finally:
        receiver.kill()
        receiver.wait(timeout=10)
    call = next(s for s in spans if s["name"] == "tools/call memory_store")
    assert (call["trace_id"], call["parent_span_id"]) == (TRACE_ID, CLIENT_SPAN)
    assert call["kind"] == "SERVER" and call["service"] == "tulving-mcp"
    store = next(s for s in spans if s["name"] == "update_memory store")
    assert (store["trace_id"], store["parent_span_id"]) == (TRACE_ID, call["span_id"])


@pytest.mark.anyio
async def test_the_handshake_of_earlier_revisions_still_works(
        server_params: Callable[..., Any]) -> None:
    async with Client(server_params(), mode="legacy") as client:
        assert client.session.protocol_version == "2025-11-25"
        stored = await client.call_tool("memory_store", {"content": "an older client",
                                                          "type": "fact", "importance": 0.3})
        assert not stored.is_error
        assert stored.structured_content["stored"]["importance"] == 0.3
