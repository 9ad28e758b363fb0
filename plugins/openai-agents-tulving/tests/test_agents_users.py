"""Users sharing one Memory: one user's memories never reach another user's prompt.

One ``Memory`` (one SQLite file) serves two users of one agent. Ann tells it her bank
PIN and her address; Bob then asks the same agent what it knows. Nothing of Ann's may be
in anything the model is sent for Bob: the instructions (the briefing), the history,
the tool outputs.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agents import Agent, Runner
from agents.testing import ScriptedModel
from openai_agents_tulving import TulvingSession, curated_instructions, memory_tools
from scripting import calls, reply, tool_outputs

from tulving import Memory

ANN_SECRETS = ("4921", "Rua das Flores")


def _agent(server_memory: Memory, model: Any) -> Agent[Any]:
    who = lambda run: run.context["user_id"]  # noqa: E731 - the README's pattern
    return Agent(name="Assistant", model=model,
                 instructions=curated_instructions(server_memory, "Be brief.", user_id=who,
                                                   token_budget=400),
                 tools=memory_tools(server_memory, user_id=who, token_budget=400))


def _sent(model_calls: Any) -> str:
    """Everything the model was sent in these calls, as text."""
    return "\n".join(f"{c.system_instructions}\n{c.input}" for c in model_calls)


def test_one_users_memories_never_reach_anothers_prompt(server_memory: Memory) -> None:
    model = ScriptedModel([
        calls(("remember", {"content": "Ann's bank PIN is 4921", "key": "bank/pin"}),
              ("remember", {"content": "Ann lives at Rua das Flores 12", "key": "home"})),
        reply("Noted, Ann."),
        calls(("recall", {"query": "bank PIN address"}),
              ("curate", {"query": "what do you know about me"})),
        reply("I know nothing about you yet, Bob."),
        calls(("recall", {"query": "bank PIN"})),
        reply("Your PIN is 4921."),
    ])
    agent = _agent(server_memory, model)
    Runner.run_sync(agent, "My PIN is 4921 and I live at Rua das Flores 12.",
                    session=TulvingSession("ann-1", server_memory, user_id="ann"),
                    context={"user_id": "ann"})
    ann_calls = len(model.calls)
    Runner.run_sync(agent, "What do you know about me? My bank PIN?",
                    session=TulvingSession("bob-1", server_memory, user_id="bob"),
                    context={"user_id": "bob"})
    bob_sent = _sent(model.calls[ann_calls:])
    assert "What do you know about me" in bob_sent   # Bob's own words are there...
    assert not any(secret in bob_sent for secret in ANN_SECRETS)   # ...Ann's are not
    # Ann, in a new conversation: her memories come back to her
    Runner.run_sync(agent, "What is my PIN?",
                    session=TulvingSession("ann-2", server_memory, user_id="ann"),
                    context={"user_id": "ann"})
    assert "4921" in model.calls[-1].system_instructions
    assert "4921" in tool_outputs(model)[-1]
    # ...and through Tulving's own doors, per user
    bob = server_memory.view(agent_id="assistant", user_id="bob")
    assert not any("4921" in h.entry.content for h in bob.search("bank PIN 4921", 50))
    assert "4921" in server_memory.view(agent_id="assistant", user_id="ann").get(
        "agent/bank/pin").content


def test_sessions_without_a_user_are_private_to_themselves(server_memory: Memory) -> None:
    first = TulvingSession("chat-ann", server_memory)
    asyncio.run(first.add_items([{"role": "user", "content": "My PIN is 4921."}]))
    other = TulvingSession("chat-bob", server_memory)
    assert (first.user_id, other.user_id) == ("chat-ann", "chat-bob")
    assert other.memory.search("PIN") == []
    assert other.memory.curate(mode="orient", token_budget=300).content == ""
    assert server_memory.search("PIN") == []                 # nor the Memory's own identity
    assert "4921" in first.memory.curate(mode="orient", token_budget=300).content


def test_sharing_is_an_explicit_choice(server_memory: Memory) -> None:
    model = ScriptedModel([reply("ok"), reply("ok")])
    agent = Agent(name="Assistant", model=model,
                  instructions=curated_instructions(server_memory, "Be brief.", shared=True))
    Runner.run_sync(agent, "The office wifi password is on the fridge.",
                    session=TulvingSession("team-1", server_memory, shared=True))
    Runner.run_sync(agent, "Where is the wifi password?",
                    session=TulvingSession("team-2", server_memory, shared=True))
    assert "fridge" in (model.calls[-1].system_instructions or "")
