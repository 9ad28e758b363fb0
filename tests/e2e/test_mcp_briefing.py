"""``memory_curate`` with no query is the briefing, through the official MCP client over
stdio: the issue's preference scenario at 300 tokens shows both preferences."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client

from tests.e2e.test_mcp_stdio import text
from tulving.testing.scenarios import PORTUGUESE, PREFERENCES, VEGETARIAN, small_talk_transcript

pytestmark = pytest.mark.anyio


async def test_memory_curate_without_a_query_briefs(server_params: Callable[..., Any]) -> None:
    async with Client(server_params()) as client:
        for content, key in PREFERENCES:
            stored = await client.call_tool("memory_store", {
                "content": content, "type": "preference", "importance": 0.9, "key": key})
            assert not stored.is_error, text(stored)
        told = await client.call_tool("memory_remember", {"text": small_talk_transcript()})
        assert not told.is_error, text(told)

        briefing = await client.call_tool("memory_curate", {"token_budget": 300})
        assert not briefing.is_error, text(briefing)
        data = briefing.structured_content
        assert data["mode"] == "orient" and data["token_count"] <= 300
        assert VEGETARIAN in text(briefing) and PORTUGUESE in text(briefing)
        assert set(data["sections"]) >= {"profile", "recent"}

        named = await client.call_tool("memory_curate", {"mode": "orient", "token_budget": 300})
        assert text(named) == text(briefing)
        asks = await client.call_tool("memory_curate", {"mode": "query", "token_budget": 300})
        assert asks.is_error and "needs a query" in text(asks)
