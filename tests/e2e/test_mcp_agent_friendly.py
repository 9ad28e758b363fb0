"""What agents write, accepted (issue 21): enum arguments in any case, valid_from /
metadata / scope on memory_store with the library's validation, and annotations on every
tool; through the official MCP client against the real server over stdio."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client

from tulving import Memory

pytestmark = pytest.mark.anyio


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def test_lenient_enums_new_store_fields_and_annotations(
    server_params: Callable[..., Any], store: str
) -> None:
    async with Client(server_params()) as client:
        listed = await client.list_tools()
        for tool in listed.tools:
            hints = tool.annotations
            assert hints is not None and hints.read_only_hint is not None, tool.name
            assert hints.destructive_hint is not None and hints.idempotent_hint is not None
        by_name = {t.name: t for t in listed.tools}
        assert by_name["memory_search"].annotations.read_only_hint is True  # type: ignore[union-attr]
        assert by_name["memory_erase"].annotations.destructive_hint is True  # type: ignore[union-attr]
        assert by_name["memory_store"].annotations.read_only_hint is False  # type: ignore[union-attr]
        assert "orient" in (by_name["memory_curate"].description or "")
        for name in ("valid_from", "metadata", "scope"):
            assert name in by_name["memory_store"].input_schema["properties"]

        stored = await client.call_tool("memory_store", {
            "content": "the team moved standups to 9:30", "type": "fact", "scope": "Workspace",
            "valid_from": "2026-03-01", "metadata": {"source": "retro", "n": 2}})
        assert not stored.is_error, text(stored)
        entry = stored.structured_content["stored"]
        assert entry["type"] == "FACT" and entry["scope"] == "workspace"
        assert entry["valid_from"].startswith("2026-03-01") and entry["metadata"]["n"] == 2
        found = await client.call_tool("memory_search", {"query": "standups", "mode": "LEXICAL",
                                                         "types": ["Fact"]})
        assert not found.is_error and found.structured_content["results"]
        orient = await client.call_tool("memory_curate", {"mode": "Orient"})
        assert not orient.is_error, text(orient)

        for bad, why in (
            ({"content": "x", "type": "gossip"}, "type"),
            ({"content": "x", "type": "FACT", "scope": "everyone"}, "scope"),
            ({"content": "x", "type": "FACT", "valid_from": "last tuesday"}, "valid_from"),
            ({"content": "x", "type": "FACT", "metadata": "not an object"}, "metadata"),
        ):
            result = await client.call_tool("memory_store", bad)
            assert result.is_error, why
    with Memory(store, agent_id="e2e", embedder="hashing") as m:
        assert [e.content for e in m.list_entries().entries] == ["the team moved standups to 9:30"]
