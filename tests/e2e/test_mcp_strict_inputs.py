"""The MCP tools refuse text that is not valid Unicode with a ValidationError, and bools
or numbers given as something else (issue 34, finding 4). The official client cannot even
send a lone surrogate (it serialises strictly), so that part speaks JSON-RPC over stdio by
hand, as any other client may: a line with the escape ``\\ud800`` used to get no answer."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.e2e.conftest import FAST, ROOT, clean_env
from tests.e2e.test_mcp_stdio import _initialize_line

pytestmark = pytest.mark.anyio
BAD = "a\ud800b"


def test_a_lone_surrogate_in_any_tool_argument_is_a_validation_error(
        store: str, proc_cleanup: list[Any]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tulving.interfaces.mcp", "--path", store, "--agent-id", "e2e",
         *FAST], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=clean_env(), cwd=str(ROOT))
    proc_cleanup.append(proc)
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write((json.dumps(message) + "\n").encode())  # ASCII: "\ud800" escaped
        proc.stdin.flush()

    proc.stdin.write(_initialize_line())
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    calls = [("memory_store", {"content": BAD, "type": "FACT"}),
             ("memory_store", {"content": "x", "type": "FACT", "tags": ["ok", BAD]}),
             ("memory_store", {"content": "x", "type": "FACT", "metadata": {BAD: 1}}),
             ("memory_search", {"query": BAD}),
             ("memory_curate", {"query": BAD}),
             ("memory_get", {"id_or_key": BAD}),
             ("memory_correct", {"id_or_key": "k", "content": BAD}),
             ("memory_remember", {"text": BAD})]
    for number, (tool, arguments) in enumerate(calls, start=2):
        send({"jsonrpc": "2.0", "id": number, "method": "tools/call",
              "params": {"name": tool, "arguments": arguments}})
        answer = json.loads(proc.stdout.readline())
        assert answer["id"] == number, answer
        result = answer["result"]
        assert result["isError"], answer
        assert result["structuredContent"]["error"]["type"] == "ValidationError", answer
        assert "Unicode" in result["content"][0]["text"]
    send({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
          "params": {"name": "memory_stats", "arguments": {}}})
    answer = json.loads(proc.stdout.readline())
    assert "active: 0" in answer["result"]["content"][0]["text"], answer
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0


async def test_bools_and_numbers_are_not_coerced(store: str, server_params: Any) -> None:
    from mcp import Client

    async with Client(server_params()) as client:
        for tool, arguments in (("memory_consolidate", {"apply": "yes"}),
                                ("memory_consolidate", {"apply": 1}),
                                ("memory_store", {"content": "x", "type": "FACT",
                                                  "importance": True}),
                                ("memory_store", {"content": "x", "type": "FACT",
                                                  "pinned": "yes"}),
                                ("memory_search", {"query": "x", "top_k": True})):
            result = await client.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
            assert "invalid arguments" in result.content[0].text, result
        stats = await client.call_tool("memory_stats", {})
        assert "active: 0" in stats.content[0].text, stats
        ok = await client.call_tool("memory_store", {"content": "strict but fair",
                                                     "type": "fact", "importance": 1,
                                                     "pinned": True})
        assert not ok.is_error, ok
