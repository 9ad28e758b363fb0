"""``TulvingSession`` keeps a conversation as the SDK's reference ``SQLiteSession`` does,
and the conversation is Tulving memory at the same time."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, SQLiteSession
from agents.memory import Session, SessionSettings
from openai_agents_tulving import TulvingSession

from tulving import Memory

TURNS: list[list[dict[str, Any]]] = [
    [{"role": "user", "content": "Hi, I am Ann and I live in Lisbon."},
     {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
      "content": [{"type": "output_text", "text": "Hello Ann!", "annotations": []}]}],
    [{"role": "user", "content": "What's the weather?"},
     {"type": "function_call", "call_id": "c1", "name": "weather",
      "arguments": '{"city": "Lisbon"}'},
     {"type": "function_call_output", "call_id": "c1", "output": "Sunny, 24 °C"},
     {"type": "message", "role": "assistant", "id": "msg_2", "status": "completed",
      "content": [{"type": "output_text", "text": "Sunny in Lisbon.", "annotations": []}]}],
    [{"role": "user", "content": [{"type": "input_text", "text": "thanks!"}]},
     {"type": "reasoning", "id": "rs_1", "summary": []}],
]


async def _scenario(session: Any) -> list[Any]:
    """The same calls on any Session; what each returned."""
    seen: list[Any] = [await session.get_items(), await session.pop_item()]
    for turn in TURNS:
        await session.add_items(turn)
    await session.add_items([])
    seen += [await session.get_items(), await session.get_items(limit=3),
             await session.get_items(limit=0), await session.pop_item(),
             await session.pop_item(), await session.get_items(limit=2)]
    await session.add_items([{"role": "user", "content": "thanks!"}])   # a repeat is kept
    await session.add_items([{"role": "user", "content": "thanks!"}])
    seen.append(await session.get_items(limit=2))
    await session.clear_session()
    seen += [await session.get_items(), await session.pop_item()]
    await session.add_items(TURNS[0])
    seen.append(await session.get_items())
    return seen


def test_the_session_answers_as_sqlite_session_does(memory: Memory) -> None:
    reference = asyncio.run(_scenario(SQLiteSession("chat-1")))
    ours = TulvingSession("chat-1", memory)
    assert isinstance(ours, Session)                 # the SDK's runtime-checkable protocol
    assert asyncio.run(_scenario(ours)) == reference


def test_session_settings_limit_as_in_the_sdk(memory: Memory) -> None:
    async def scenario(session: Any) -> list[Any]:
        for turn in TURNS:
            await session.add_items(turn)
        return [await session.get_items(), await session.get_items(limit=1)]

    reference = asyncio.run(scenario(SQLiteSession("s", session_settings=SessionSettings(
        limit=2))))
    ours = asyncio.run(scenario(TulvingSession("s", memory, session_settings={"limit": 2})))
    assert ours == reference and len(ours[0]) == 2


def test_sessions_are_apart_and_the_conversation_is_memory(make_memory: Any,
                                                            tmp_path: Path) -> None:
    memory = make_memory("chat.db")
    ann = TulvingSession("ann-chat", memory, user_id="ann")
    bob = TulvingSession("bob-chat", memory, user_id="bob")

    async def write() -> None:
        await asyncio.gather(ann.add_items(TURNS[0]), bob.add_items(
            [{"role": "user", "content": "I am Bob, I live in Porto."}]))

    asyncio.run(write())
    assert len(asyncio.run(ann.get_items())) == 2
    assert asyncio.run(bob.get_items()) == [{"role": "user",
                                             "content": "I am Bob, I live in Porto."}]
    hit = ann.memory.search("where does Ann live", top_k=1)[0]
    assert hit.entry.content == "user: Hi, I am Ann and I live in Lisbon."
    assert hit.entry.type.name == "EPISODE" and hit.entry.user_id == "ann"
    memory.close()
    again = make_memory("chat.db")                  # another process, later
    assert asyncio.run(TulvingSession("ann-chat", again, user_id="ann").get_items()) \
        == TURNS[0]
    assert "Lisbon" in again.view(agent_id="assistant", user_id="ann").curate(
        "Ann's city", token_budget=100).content


def test_archived_or_deleted(make_memory: Any) -> None:
    memory = make_memory()
    soft = TulvingSession("soft", memory, shared=True)
    hard = TulvingSession("hard", memory, shared=True, hard_delete=True)
    for session in (soft, hard):
        asyncio.run(session.add_items(TURNS[0]))
        asyncio.run(session.clear_session())
        assert asyncio.run(session.get_items()) == []
    archived = memory.list_entries(include_archived=True).entries
    assert {e.metadata["openai_agents"]["session_id"] for e in archived} == {"soft"}
    assert all(e.archived_at is not None for e in archived)


def test_big_items_are_kept_whole(memory: Memory) -> None:
    session = TulvingSession("big", memory)
    page = "word " * 16_000                          # 80 kB: two parts
    big = {"type": "function_call_output", "call_id": "c9", "output": page}
    huge = {"type": "function_call_output", "call_id": "c10",
            "output": " needle in the middle ".join(["x " * 75_000, "y " * 75_000])}
    asyncio.run(session.add_items([{"role": "user", "content": "fetch it"}, big, huge]))
    assert asyncio.run(session.get_items()) == [{"role": "user", "content": "fetch it"},
                                                big, huge]
    assert asyncio.run(session.get_items(limit=1)) == [huge]
    parts = session.memory.list_entries(limit=1000).entries
    assert len(parts) > 3                            # the huge one is cut into parts
    assert all(len(p.content) <= 100_000 for p in parts)
    from tulving import TOOL_ITEM_TAG

    # a tool output is recalled only when asked for (tool items leave plain search)
    assert session.memory.search("needle in the middle", top_k=1, mode="lexical") == []
    found = session.memory.search("needle in the middle", top_k=1, mode="lexical",
                                  tags=[TOOL_ITEM_TAG])
    assert found and found[0].entry in parts         # a part carries its slice of text
    assert asyncio.run(session.pop_item()) == huge
    assert len(session.memory.list_entries(limit=1000).entries) == 3   # all its parts gone
    assert asyncio.run(session.get_items()) == [{"role": "user", "content": "fetch it"}, big]


def test_a_run_through_the_openai_client_keeps_and_replays_the_history(memory: Memory) -> None:
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    from tulving.testing.openai_server import OpenAIStubServer

    with OpenAIStubServer() as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
        agent = Agent(name="Assistant", instructions="Be brief.",
                      model=OpenAIChatCompletionsModel(model="stub", openai_client=client))
        session = TulvingSession("run-1", memory)
        server.queue_reply("Nice to meet you, Ann.")
        first = Runner.run_sync(agent, "My name is Ann.", session=session)
        server.queue_reply("You are Ann.")
        second = Runner.run_sync(agent, "What is my name?", session=session)
        sent = server.requests_to("/chat/completions")[-1].body["messages"]
    assert first.final_output == "Nice to meet you, Ann."
    assert second.final_output == "You are Ann."
    assert [(m["role"], m["content"]) for m in sent] == [
        ("system", "Be brief."), ("user", "My name is Ann."),
        ("assistant", "Nice to meet you, Ann."), ("user", "What is my name?")]
    kept = asyncio.run(session.get_items())
    assert [i.get("role") for i in kept] == ["user", "assistant", "user", "assistant"]
    assert session.memory.search("Ann name", top_k=1)[0].entry.content.startswith(
        ("user:", "assistant:"))


def test_the_memorys_write_policy_governs_the_history(make_memory: Any) -> None:
    from tulving import PolicyViolation

    turn = [{"role": "user", "content": "mail me at ann@example.com"},
            {"role": "user", "content": "thanks"}]
    strict = TulvingSession("s", make_memory("strict.db", policy={"pii": "reject"}))
    with pytest.raises(PolicyViolation):
        asyncio.run(strict.add_items(turn))
    assert asyncio.run(strict.get_items()) == []            # all of the call, or none
    masked = TulvingSession("s", make_memory("masked.db", policy={"pii": "redact"}))
    asyncio.run(masked.add_items(turn))
    assert asyncio.run(masked.get_items()) == [
        {"role": "user", "content": "mail me at [REDACTED:email]"},
        {"role": "user", "content": "thanks"}]
