"""``tulving mcp`` on a SQLite store another process writes (issue 41): ``--read-only``
serves reads beside the writer, and without it the server falls back to read-only and
says so, instead of failing every tool.

Both servers are the real one (``python -m tulving.interfaces.mcp``), each driven by the
official MCP client; the first holds the store's writer lock the whole time.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.e2e.conftest import FAST, ROOT, clean_env

pytestmark = pytest.mark.anyio


def _server(path: str, *extra: str, errors: Path | None = None) -> StdioServerParameters:
    """The server; with ``errors``, its stderr goes to that file (through a shell)."""
    argv = [sys.executable, "-m", "tulving.interfaces.mcp", "--path", path,
            "--agent-id", "e2e", *FAST, *extra]
    if errors is None:
        return StdioServerParameters(command=argv[0], args=argv[1:], env=clean_env(),
                                     cwd=str(ROOT))
    script = " ".join(shlex.quote(a) for a in argv) + f" 2>{shlex.quote(str(errors))}"
    return StdioServerParameters(command="/bin/sh", args=["-c", f"exec {script}"],
                                 env=clean_env(), cwd=str(ROOT))


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


@pytest.mark.parametrize("flag", [(), ("--read-only",)], ids=["fallback", "read-only"])
async def test_a_second_server_reads_beside_the_writer(tmp_path: Path,
                                                       flag: tuple[str, ...]) -> None:
    path = str(tmp_path / "memory.db")
    errors = tmp_path / "second.err"
    async with Client(_server(path)) as writer:
        stored = await writer.call_tool("memory_store", {
            "content": "The staging database moved to Frankfurt", "type": "FACT",
            "key": "infra/staging-db"})
        assert not stored.is_error, _text(stored)
        async with Client(_server(path, *flag, errors=errors)) as reader:
            found = await reader.call_tool("memory_search", {"query": "staging database"})
            assert not found.is_error, _text(found)
            assert "Frankfurt" in _text(found)
            got = await reader.call_tool("memory_get", {"id_or_key": "infra/staging-db"})
            assert not got.is_error and "Frankfurt" in _text(got)
            refused = await reader.call_tool("memory_store", {
                "content": "written by the reader", "type": "FACT"})
            assert refused.is_error and "read-only" in _text(refused)
        # the writer still writes, and never saw the reader's attempt
        again = await writer.call_tool("memory_store", {"content": "still writing",
                                                        "type": "FACT"})
        assert not again.is_error
        listed = await writer.call_tool("memory_list", {})
        assert "written by the reader" not in _text(listed)
    said = errors.read_text()
    if flag:
        assert "open for writing by another process" not in said
    else:
        assert "serving it read-only" in said.lower() and "--read-only" in said
