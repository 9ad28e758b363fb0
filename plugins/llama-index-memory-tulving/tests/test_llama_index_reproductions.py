"""Issue 41's reproductions for the LlamaIndex block, as tests: the block queries with what
the user asked, leaves acknowledgements out, survives a NUL byte, and keeps each user's
memory to that user.

The forty-turn conversation runs on Tulving's default local model (MiniLM, offline):
"What food should I avoid?" shares no word with "I have a severe peanut allergy"; only a
model that reads meaning links them, which is the point of the reproduction.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from llama_index.memory.tulving import TulvingMemoryBlock

from tulving import TulvingWarning


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TulvingWarning)     # "no LLM configured", said once
        yield


def _block_text(messages: list[ChatMessage]) -> str:
    system = next((m.content for m in messages if m.role == "system"), "") or ""
    return system.split("<TulvingMemory>", 1)[-1].split("</TulvingMemory>", 1)[0]


def _forty_turns(memory: Memory) -> None:
    memory.put(ChatMessage(role="user", content="I have a severe peanut allergy."))
    memory.put(ChatMessage(role="assistant", content="Noted, turn 1."))
    for turn in range(2, 41):
        memory.put(ChatMessage(role="user", content=f"Reminder {turn}: standup is at 9:30."))
        memory.put(ChatMessage(role="assistant", content=f"Noted, turn {turn}."))


def test_the_block_queries_with_what_the_user_asked(make_memory: Any) -> None:
    store = make_memory("forty.db", embedder="local")
    block = TulvingMemoryBlock(memory=store, user_id="ann", token_budget=120)
    memory = Memory.from_defaults(session_id="chat", token_limit=400, token_flush_size=100,
                                  chat_history_token_ratio=0.5, memory_blocks=[block])
    _forty_turns(memory)
    text = _block_text(memory.get(input="What food should I avoid?"))
    assert "peanut" in text
    assert "Noted, turn" not in text                          # acknowledgements left out
    asked = _block_text(memory.get(input="thanks", query="allergies"))   # the caller's query
    assert "peanut" in asked


def test_acknowledgements_are_not_remembered(tulving_memory: Any) -> None:
    block = TulvingMemoryBlock(memory=tulving_memory, user_id="ann")
    memory = Memory.from_defaults(session_id="s", token_limit=60, token_flush_size=20,
                                  chat_history_token_ratio=0.3, memory_blocks=[block])
    for user, assistant in [("ok thanks!", "Noted."), ("I moved to Lisbon in May.", "Got it!"),
                            ("Yes, I'm vegetarian.", "Sure, I'll keep that in mind."),
                            ("cool", "Lovely name."), ("bye", "See you tomorrow at 9.")]:
        memory.put(ChatMessage(role="user", content=user))
        memory.put(ChatMessage(role="assistant", content=assistant))
    kept = [e.content for e in tulving_memory.view(agent_id="assistant", user_id="ann")
            .list_entries().entries if e.type.name == "EPISODE"]
    assert "User: I moved to Lisbon in May." in kept
    assert "User: Yes, I'm vegetarian." in kept                 # says something: kept
    assert not {"User: ok thanks!", "Assistant: Noted.", "Assistant: Got it!",
                "User: cool", "Assistant: Lovely name."} & set(kept)


def test_a_nul_byte_never_fails_a_later_put(tulving_memory: Any) -> None:
    block = TulvingMemoryBlock(memory=tulving_memory, user_id="ann")
    memory = Memory.from_defaults(session_id="s", token_limit=60, token_flush_size=20,
                                  chat_history_token_ratio=0.3, memory_blocks=[block])
    memory.put(ChatMessage(role="user", content="my key file reads KEY\x00=secret-door-7"))
    for i in range(8):                           # later puts flush the NUL message out
        memory.put(ChatMessage(role="user", content=f"Message number {i} about the trip."))
    kept = [e.content for e in tulving_memory.view(agent_id="assistant", user_id="ann")
            .list_entries().entries]
    assert "User: my key file reads KEY\\0=secret-door-7" in kept


def test_one_users_memories_never_reach_anothers_prompt(make_memory: Any) -> None:
    store = make_memory("users.db")

    def session(user: str, name: str) -> Memory:
        return Memory.from_defaults(session_id=name, token_limit=60, token_flush_size=20,
                                    chat_history_token_ratio=0.3, memory_blocks=[
                                        TulvingMemoryBlock(memory=store, user_id=user,
                                                           token_budget=300)])

    ann = session("ann", "ann-monday")
    for text in ["My bank PIN is 4921.", "I live at Rua das Flores 12.",
                 "My doctor is Dr. Pereira.", "I am allergic to penicillin."]:
        ann.put(ChatMessage(role="user", content=text))
        ann.put(ChatMessage(role="assistant", content="I will remember that for you."))
    bob = session("bob", "bob-friday")
    bob.put(ChatMessage(role="user", content="What is my bank PIN and where do I live?"))
    prompt = "\n".join(m.content or "" for m in bob.get())
    assert not any(secret in prompt for secret in ("4921", "Flores", "Pereira", "penicillin"))
    brief = "\n".join(m.content or "" for m in bob.get(query="PIN doctor allergy address"))
    assert "4921" not in brief and "Pereira" not in brief
    again = session("ann", "ann-friday")
    again.put(ChatMessage(role="user", content="What is my bank PIN?"))
    assert "4921" in _block_text(again.get())
    # without a user, each LlamaIndex session is private to itself
    private = Memory.from_defaults(session_id="carol-1", token_limit=2000, memory_blocks=[
        TulvingMemoryBlock(memory=store, token_budget=300)])
    private.put(ChatMessage(role="user", content="What is my bank PIN?"))
    assert "4921" not in "\n".join(m.content or "" for m in private.get())
