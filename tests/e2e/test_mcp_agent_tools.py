"""The agent tools (remember, profile, consolidate, list, erase) through the official MCP
client against the real server over stdio: each does what the Python API does, the
destructive ones only with their explicit argument."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client

from tulving import Memory

pytestmark = pytest.mark.anyio


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def test_remember_profile_consolidate_list_and_erase(
    server_params: Callable[..., Any], store: str
) -> None:
    async with Client(server_params()) as client:
        said = await client.call_tool(
            "memory_remember",
            {"text": "Ann: I live in Lisbon. My favourite editor is Helix.", "subject": "Ann",
             "wait": True})  # answer after what is read off the turns
        assert not said.is_error, text(said)
        types = [e["type"] for e in said.structured_content["entries"]]
        assert "EPISODE" in types and "FACT" in types

        profile = await client.call_tool("memory_profile", {"subject": "ann"})  # any case
        assert not profile.is_error and "Lisbon" in text(profile)
        assert profile.structured_content["profile"]["facts"]["lives in"]["value"] == "Lisbon"

        for i in range(3):
            await client.call_tool("memory_store", {
                "content": f"The staging cluster runs on three nodes, note {i}.", "type": "FACT"})
        plan = await client.call_tool("memory_consolidate", {})
        assert not plan.is_error and plan.structured_content["applied"] is False
        assert plan.structured_content["report"]["archived"] == 0  # a plan changes nothing

        seen: list[str] = []
        cursor = None
        while True:
            args: dict[str, Any] = {"limit": 2}
            if cursor:
                args["cursor"] = cursor
            page = await client.call_tool("memory_list", args)
            assert not page.is_error, text(page)
            seen += [e["id"] for e in page.structured_content["entries"]]
            cursor = page.structured_content.get("next_cursor")
            if cursor is None:
                break
        assert len(seen) == len(set(seen)) >= 5

        wrong = await client.call_tool("memory_erase", {"subject": "agent", "confirm": "yes"})
        assert wrong.is_error and "erase agent e2e" in text(wrong)
        still = await client.call_tool("memory_list", {"limit": 200})
        assert len(still.structured_content["entries"]) == len(seen)  # nothing erased

        erased = await client.call_tool(
            "memory_erase", {"subject": "agent", "confirm": "erase agent e2e"})
        assert not erased.is_error, text(erased)
        assert erased.structured_content["erased"]["deleted"] == len(seen)
        empty = await client.call_tool("memory_list", {})
        assert empty.structured_content["entries"] == []
    with Memory(store, agent_id="e2e", embedder="hashing") as m:
        assert m.stats()["active"] == 0 and m.verify_audit()["ok"]
