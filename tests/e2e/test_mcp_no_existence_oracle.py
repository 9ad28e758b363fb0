"""The MCP tools answer an id of another tenant exactly as an id nobody has (issue 34,
finding 6), through the official MCP client over stdio; the refusal is audited."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tulving import Memory
from tulving.domain.ids import new_id

pytestmark = pytest.mark.anyio

CALLS = {
    "memory_get": lambda i: {"id_or_key": i},
    "memory_forget": lambda i: {"id_or_key": i},
    "memory_correct": lambda i: {"id_or_key": i, "content": "hijacked", "reason": "why"},
}


def _shape(result: Any, entry_id: str) -> tuple[bool, str, Any]:
    text = "\n".join(b.text for b in result.content if b.type == "text")
    structured = str(result.structured_content).replace(entry_id, "<id>")
    return result.is_error, text.replace(entry_id, "<id>"), structured


async def test_a_foreign_id_looks_missing_to_every_id_tool(
        store: str, server_params: Any) -> None:
    with Memory(store, agent_id="someone", user_id="u2", embedder="hashing",
                vectors="exact") as other:
        foreign = other.store("u2's launch code is pelican", type="FACT").id
    async with Client(server_params()) as client:
        for tool, arguments in CALLS.items():
            absent = new_id(datetime.now(UTC))
            theirs = await client.call_tool(tool, arguments(foreign))
            nobody = await client.call_tool(tool, arguments(absent))
            assert _shape(theirs, foreign) == _shape(nobody, absent), tool
            assert theirs.is_error and "NotFoundError" in _shape(theirs, foreign)[1]
            assert "pelican" not in str(theirs.content) + str(theirs.structured_content)
    with Memory(store, agent_id="e2e", embedder="hashing", vectors="exact") as mine:
        refused = [r for r in mine.audit_log() if r.action == "refused"]
        assert {r.details.get("not_visible") for r in refused} == {foreign}
    with Memory(store, agent_id="someone", user_id="u2", embedder="hashing",
                vectors="exact") as other:
        assert other.get(foreign).content == "u2's launch code is pelican"


def test_the_python_api_still_says_scope_error(tmp_path: Path) -> None:
    """The store's owner, in process, is told the id exists elsewhere (documented)."""
    from tulving import NotFoundError, ScopeError

    path = tmp_path / "m.db"
    with Memory(path, agent_id="a", user_id="u2", embedder="hashing") as other:
        foreign = other.store("elsewhere", type="FACT").id
    with Memory(path, agent_id="a", user_id="u1", embedder="hashing") as mine:
        with pytest.raises(ScopeError):
            mine.get(foreign)
        with pytest.raises(NotFoundError):
            mine.get(new_id(datetime.now(UTC)))
        assert [r.details["not_visible"] for r in mine.audit_log()
                if r.action == "refused"] == [foreign]
