"""The block behaves as LlamaIndex's own memory blocks wherever ``BaseMemoryBlock`` and
``Memory`` define the behaviour.

Written from llama-index-core's own tests (read, not copied): ``tests/memory/blocks/
test_vector.py`` (``VectorMemoryBlock``, the block closest to this one),
``tests/memory/test_memory_blocks_base.py`` (how ``Memory`` gathers, formats, inserts
and truncates blocks) and ``tests/memory/blocks/test_static.py``; each test names the
upstream tests it follows. Everything runs inside llama-index-core's own ``Memory``.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, TextBlock
from llama_index.core.memory import Memory, StaticMemoryBlock
from llama_index.core.memory.memory import InsertMethod
from llama_index.memory.tulving import TulvingMemoryBlock

from tulving import TulvingWarning


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TulvingWarning)     # "no LLM configured", said once
        yield


def _message(role: str, text: str) -> ChatMessage:
    """A message whose text is in content blocks, as LlamaIndex's tests build them."""
    return ChatMessage(role=role, content=None, blocks=[TextBlock(text=text)])


def _kept(memory: Any, user: str) -> list[str]:
    return [e.content for e in memory.view(agent_id="assistant", user_id=user)
            .list_entries().entries]


def test_put_then_get_what_is_relevant(tulving_memory: Any) -> None:
    """test_vector_memory_block_put, test_vector_memory_block_get"""
    block = TulvingMemoryBlock(memory=tulving_memory, user_id="u", token_budget=200)
    asyncio.run(block.aput([
        _message("user", "What's the capital of France?"),
        _message("assistant", "The capital of France is Paris."),
        _message("user", "What about Germany?"),
        _message("assistant", "The capital of Germany is Berlin.")]))
    assert "Assistant: The capital of France is Paris." in _kept(tulving_memory, "u")
    result = asyncio.run(block.aget([_message("user", "Tell me about Paris.")]))
    assert "capital of France is Paris" in result


def test_nothing_in_nothing_out(tulving_memory: Any) -> None:
    """test_empty_messages, test_message_without_text"""
    block = TulvingMemoryBlock(memory=tulving_memory, user_id="u")
    assert asyncio.run(block.aget([])) == ""
    asyncio.run(block.aput([]))
    asyncio.run(block.aput([ChatMessage(role="user", content=None, blocks=[])]))
    assert _kept(tulving_memory, "u") == []


def test_block_keywords_pass_through_memory_get(tulving_memory: Any) -> None:
    """test_parameterized_memory_block (a keyword given to ``Memory.get`` reaches the
    block: here ``query``, what to curate for)"""
    tulving_memory.view(agent_id="assistant", user_id="u").store(
        "The deploy window is Thursday at 14:00", type="FACT")
    memory = Memory.from_defaults(session_id="s", token_limit=2000, memory_blocks=[
        TulvingMemoryBlock(memory=tulving_memory, user_id="u", token_budget=100)])
    memory.put(ChatMessage(role="user", content="hello there"))
    with_query = memory.get(query="deploy window")
    assert "Thursday" in next(m for m in with_query if m.role == "system").content


def test_the_block_is_in_the_system_message(tulving_memory: Any) -> None:
    """test_memory_with_all_block_types, test_text_memory_block"""
    tulving_memory.view(agent_id="assistant", user_id="u").store(
        "Ann's cat is called Miso", type="FACT")
    memory = Memory.from_defaults(session_id="s", token_limit=2000, memory_blocks=[
        TulvingMemoryBlock(memory=tulving_memory, user_id="u", name="long_term")])
    messages = memory.get(input="What is my cat called?")
    system = next(m for m in messages if m.role == "system")
    assert "<long_term>" in system.content and "Miso" in system.content


@pytest.mark.parametrize("method", [InsertMethod.USER, InsertMethod.SYSTEM])
def test_insert_method_is_respected(tulving_memory: Any, method: InsertMethod) -> None:
    """test_insert_method_setting"""
    tulving_memory.view(agent_id="assistant", user_id="u").store(
        "Ann's cat is called Miso", type="FACT")
    memory = Memory.from_defaults(session_id="s", token_limit=2000, insert_method=method,
                                  memory_blocks=[TulvingMemoryBlock(memory=tulving_memory,
                                                                    user_id="u")])
    memory.put(ChatMessage(role="user", content="What is my cat called?"))
    messages = memory.get()
    holder = [m for m in messages if "Miso" in (m.content or "")]
    assert [m.role.value for m in holder] == [method.value]


def test_over_the_limit_the_block_gives_way_and_priority_zero_stays(
        tulving_memory: Any) -> None:
    """test_memory_truncation_preserves_priority_zero, test_truncation_of_content_blocks
    (the order in which blocks of priorities 1, 2, ... give way changed after
    llama-index-core 0.14.25, see test_memory_truncation_priority_order; either way this
    block, asked to give tokens back, curates again into fewer)"""
    for i in range(20):
        tulving_memory.view(agent_id="assistant", user_id="u").store(
            f"Release note {i}: the payments service ships on Thursdays", type="FACT")
    keep = StaticMemoryBlock(name="rules", static_content="Always answer in French.",
                             priority=0)
    tulving = TulvingMemoryBlock(memory=tulving_memory, user_id="u", token_budget=300,
                                 priority=2)
    memory = Memory.from_defaults(session_id="s", token_limit=120, token_flush_size=10,
                                  chat_history_token_ratio=0.3,
                                  memory_blocks=[keep, tulving])
    memory.put(ChatMessage(role="user", content="when does payments ship"))
    system = next(m for m in memory.get() if m.role == "system").content
    assert "Always answer in French." in system
    shown = system.split("<TulvingMemory>", 1)[1] if "<TulvingMemory>" in system else ""
    assert tulving_memory.count_tokens(shown) < 300              # curated smaller, or out


def test_flushed_messages_carry_their_session(tulving_memory: Any) -> None:
    """BaseMemoryBlock.aput(session_id=...): the flushed messages carry the session, and
    the block remembers them as that session's (its user, when none is given)."""
    block = TulvingMemoryBlock(memory=tulving_memory, token_budget=100)
    memory = Memory.from_defaults(session_id="chat-42", token_limit=60,
                                  chat_history_token_ratio=0.3, token_flush_size=20,
                                  memory_blocks=[block])
    for i in range(4):
        memory.put(ChatMessage(role="user", content=f"My locker number is {40 + i}."))
        memory.put(ChatMessage(role="assistant", content=f"I will remember locker {40 + i}."))
    assert any("locker number is 40" in c for c in _kept(tulving_memory, "chat-42"))
    assert tulving_memory.list_entries().entries == ()          # nothing unowned
