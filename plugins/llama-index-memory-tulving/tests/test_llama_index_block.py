"""``TulvingMemoryBlock`` inside LlamaIndex's ``Memory``: what the memory flushes is
remembered, and what the block gives back is Tulving's curation within its budget."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory, StaticMemoryBlock
from llama_index.core.storage.chat_store.sql import MessageStatus
from llama_index.memory.tulving import TulvingMemoryBlock

from tulving import AsyncMemory, TulvingWarning

CHAT = [
    ("I am vegetarian and I live in Lisbon.", "Noted, you're vegetarian."),
    ("I work night shifts at the hospital.", "That sounds demanding."),
    ("My cat is called Miso.", "Cute name!"),
    ("Any plans this weekend?", "Let me think."),
]


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TulvingWarning)     # "no LLM configured", said once
        yield


def _chat(memory: Memory, turns: list[tuple[str, str]] = CHAT) -> None:
    for user, assistant in turns:
        memory.put(ChatMessage(role="user", content=user))
        memory.put(ChatMessage(role="assistant", content=assistant))


def _small_memory(block: TulvingMemoryBlock, session: str = "s1", **kwargs: Any) -> Memory:
    kwargs.setdefault("token_limit", 100)
    return Memory.from_defaults(session_id=session, chat_history_token_ratio=0.3,
                                token_flush_size=20, memory_blocks=[block], **kwargs)


def _block_text(messages: list[ChatMessage], name: str = "TulvingMemory") -> str:
    system = next(m for m in messages if m.role == "system").content
    assert f"<{name}>" in system
    return system.split(f"<{name}>", 1)[1].split(f"</{name}>", 1)[0].strip()


def test_flushed_messages_are_remembered_and_curated_back(tulving_memory: Any) -> None:
    block = TulvingMemoryBlock(memory=tulving_memory, user_id="ann", token_budget=60)
    memory = _small_memory(block)
    _chat(memory)
    ann = tulving_memory.view(agent_id="assistant", user_id="ann")
    kept = [e.content for e in ann.list_entries().entries]
    assert "User: I am vegetarian and I live in Lisbon." in kept
    assert "Assistant: That sounds demanding." in kept
    assert "Assistant: Noted, you're vegetarian." not in kept     # an acknowledgement
    active = memory.get_all(status=MessageStatus.ACTIVE)       # still in the short term
    assert active and len(kept) < 2 * len(CHAT) + 2
    assert all(f"User: {m.content}" not in kept for m in active if m.role == "user")
    text = _block_text(memory.get(input="As a vegetarian, what can I cook?"))
    assert "vegetarian" in text
    assert tulving_memory.count_tokens(text) <= 60


def test_another_session_recalls_what_an_earlier_one_flushed(make_memory: Any) -> None:
    store = make_memory("shared.db")
    _chat(_small_memory(TulvingMemoryBlock(memory=store, user_id="ann", token_budget=200),
                        session="monday"))
    store.close()
    again = make_memory("shared.db")                       # a later process
    later = Memory.from_defaults(session_id="friday", token_limit=2000,
                                 memory_blocks=[TulvingMemoryBlock(memory=again,
                                                                   user_id="ann",
                                                                   token_budget=200)])
    later.put(ChatMessage(role="user", content="Where do I work?"))
    assert "hospital" in _block_text(later.get())


def test_truncation_curates_again_into_less(tulving_memory: Any) -> None:
    for i in range(30):
        tulving_memory.store(f"Release note {i}: the payments service ships on Thursdays "
                             f"with canary releases and a rollback plan", type="FACT")
    block = TulvingMemoryBlock(memory=tulving_memory, shared=True, token_budget=400,
                               priority=1)
    full = asyncio.run(block.aget([ChatMessage(role="user", content="payments release")]))
    used = tulving_memory.count_tokens(full)
    assert 300 < used <= 400
    smaller = asyncio.run(block.atruncate(full, 250))
    assert smaller and tulving_memory.count_tokens(smaller) <= used - 250
    assert "payments" in smaller
    assert asyncio.run(block.atruncate(full, used)) is None
    # inside the Memory: over its limit, the block is curated smaller, not dropped
    memory = Memory.from_defaults(session_id="t", token_limit=300, memory_blocks=[block])
    memory.put(ChatMessage(role="user", content="how do we release payments?"))
    text = _block_text(memory.get())
    assert text and tulving_memory.count_tokens(text) < used


def test_priority_zero_blocks_are_never_truncated_by_llama_index(tulving_memory: Any) -> None:
    tulving_memory.store("The payments service ships on Thursdays", type="FACT")
    static = StaticMemoryBlock(name="rules", static_content="Be brief.", priority=0)
    block = TulvingMemoryBlock(memory=tulving_memory, shared=True, token_budget=50)
    memory = Memory.from_defaults(session_id="p", token_limit=2000,
                                  memory_blocks=[static, block])
    memory.put(ChatMessage(role="user", content="when does payments ship"))
    assert "Thursdays" in _block_text(memory.get())


def test_a_block_that_takes_no_short_term_memory_stores_nothing(tulving_memory: Any) -> None:
    block = TulvingMemoryBlock(memory=tulving_memory, accept_short_term_memory=False)
    _chat(_small_memory(block))
    assert tulving_memory.view(agent_id="assistant", user_id="s1").list_entries().entries \
        == ()


def test_async_with_an_async_memory(tulving_memory: Any) -> None:
    async def run() -> str:
        block = TulvingMemoryBlock(memory=AsyncMemory.wrapping(tulving_memory),
                                   user_id="ann", token_budget=80, name="LongTerm")
        memory = _small_memory(block, session="a")
        for user, assistant in CHAT:
            await memory.aput(ChatMessage(role="user", content=user))
            await memory.aput(ChatMessage(role="assistant", content=assistant))
        return _block_text(await memory.aget(input="where do I work?"), "LongTerm")

    assert "hospital" in asyncio.run(run())


def test_an_empty_query_gives_the_briefing_and_bad_arguments_are_refused(
        tulving_memory: Any) -> None:
    tulving_memory.store("Use PostgreSQL for the app", type="DECISION", key="db/engine")
    block = TulvingMemoryBlock(memory=tulving_memory, shared=True, token_budget=100)
    assert "PostgreSQL" in asyncio.run(block.aget([]))
    with pytest.raises(ValueError):
        TulvingMemoryBlock(memory="agent.db")
    with pytest.raises(ValueError):
        TulvingMemoryBlock(memory=tulving_memory, token_budget=0)
    with pytest.raises(ValueError, match="not both"):
        TulvingMemoryBlock(memory=tulving_memory, user_id="ann", shared=True)
    with pytest.raises(ValueError, match="whose memory"):        # no user, no session
        asyncio.run(TulvingMemoryBlock(memory=tulving_memory).aget([]))


def test_tool_results_are_not_remembered(tulving_memory: Any) -> None:
    block = TulvingMemoryBlock(memory=tulving_memory, user_id="ann", token_budget=60)
    memory = _small_memory(block)
    memory.put(ChatMessage(role="user", content="What is the weather in Lisbon today?"))
    memory.put(ChatMessage(role="tool", content='{"city": "Lisbon", "sky": "sunny", "c": 24}',
                           additional_kwargs={"tool_call_id": "c1", "name": "weather"}))
    _chat(memory)
    ann = tulving_memory.view(agent_id="assistant", user_id="ann")
    kept = [e.content for e in ann.list_entries().entries]
    assert "User: What is the weather in Lisbon today?" in kept
    assert not any("sunny" in text for text in kept)
