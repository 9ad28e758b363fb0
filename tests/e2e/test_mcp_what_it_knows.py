"""What the memory knows about the user, through the official MCP client over stdio: the
scenario told with ``memory_store`` and ``memory_remember``; ``memory_profile`` lists
every preference and fact about the user with its id; ``memory_curate`` without a query
at 300, 500 and 1,500 tokens shows them under "About the user", nothing twice, every
section under its heading."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client

from tests.e2e.test_mcp_stdio import text
from tulving.testing.scenarios import (
    DECISION,
    PROJECT_FACT,
    USER_FACTS,
    USER_PREFERENCES,
    briefing_problems,
    chat_turns,
)

pytestmark = pytest.mark.anyio


async def _call(client: Client, tool: str, args: dict[str, Any]) -> Any:
    done = await client.call_tool(tool, args)
    assert not done.is_error, text(done)
    return done


async def test_profile_and_briefings_over_mcp(server_params: Callable[..., Any]) -> None:
    async with Client(server_params("--user-id", "alice")) as client:
        for content in USER_PREFERENCES:
            await _call(client, "memory_store",
                        {"content": content, "type": "preference", "importance": 0.9})
        for content in (*USER_FACTS, PROJECT_FACT):
            await _call(client, "memory_store", {"content": content, "type": "fact"})
        await _call(client, "memory_store", {"content": DECISION, "type": "decision"})
        await _call(client, "memory_remember", {"text": "\n".join(chat_turns())})

        profile = await _call(client, "memory_profile", {})
        items = profile.structured_content["profile"]["items"]  # ids, not the texts again
        shown = text(profile)
        assert all(content in shown for content in (*USER_PREFERENCES, *USER_FACTS))
        assert PROJECT_FACT not in shown and DECISION not in shown
        assert len(items) == len(USER_PREFERENCES) + len(USER_FACTS)
        assert [i["type"] for i in items] == sorted(
            (i["type"] for i in items), key=lambda t: t != "PREFERENCE")  # preferences first
        for item in items:
            assert item["id"] in shown
        for budget in (300, 500, 1500):
            briefing = await _call(client, "memory_curate", {"token_budget": budget})
            assert briefing.structured_content["token_count"] <= budget
            assert briefing_problems(text(briefing)) == [], budget
