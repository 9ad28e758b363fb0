"""The memory tools called by an agent in real ``Runner`` runs (the SDK's own scripted
model decides the calls), and curated memory as dynamic instructions."""

from __future__ import annotations

import pytest
from agents import Agent, Runner
from agents.testing import ScriptedModel
from openai_agents_tulving import TulvingSession, curated_instructions, memory_tools
from scripting import calls, reply, tool_outputs

from tulving import Memory, ValidationError


def test_an_agent_remembers_then_recalls_and_curates(server_memory: Memory) -> None:
    tools = memory_tools(server_memory, user_id="ann", token_budget=80, key_prefix="agent")
    model = ScriptedModel([
        calls(("remember", {"content": "Ann is vegetarian", "key": "user/diet",
                            "type": "PREFERENCE", "importance": 0.9}),
              ("remember", {"content": "Ann lives in Porto", "key": "user/city"})),
        reply("Noted."),
        calls(("remember", {"content": "Ann moved to Lisbon", "key": "user/city"})),
        reply("Updated."),
        calls(("recall", {"query": "where did Ann move", "limit": 1}),
              ("curate", {"query": "cook dinner for Ann"})),
        reply("You could cook a vegetable stew in Lisbon."),
    ])
    agent = Agent(name="Assistant", model=model, tools=tools)
    assert Runner.run_sync(agent, "I'm vegetarian and live in Porto.").final_output == "Noted."
    assert Runner.run_sync(agent, "I moved to Lisbon.").final_output == "Updated."
    last = Runner.run_sync(agent, "What should I cook?")
    assert last.final_output.startswith("You could cook")
    stored, stored_city, moved, recalled, curated = tool_outputs(model)
    assert stored == "Stored PREFERENCE under key agent/user/diet."
    assert stored_city == "Stored FACT under key agent/user/city."
    assert moved == "Stored FACT under key agent/user/city (replacing the previous version)."
    assert recalled.startswith("- [fact · agent/user/city · ") and\
        recalled.endswith("] Ann moved to Lisbon")
    assert "vegetarian" in curated and "Porto" not in curated
    assert server_memory.count_tokens(curated) <= 80
    ann = server_memory.view(agent_id="assistant", user_id="ann")
    assert [e.content for e in ann.history("agent/user/city")] == [
        "Ann moved to Lisbon", "Ann lives in Porto"]
    assert server_memory.list_keys() == []                 # nothing under the shared identity


def test_bad_input_is_explained_to_the_model_and_nothing_is_written(server_memory: Memory) -> None:
    model = ScriptedModel([
        calls(("remember", {"content": "x", "key": "bad key with spaces"}),
              ("remember", {"content": "   "})),
        reply("Sorry."),
    ])
    agent = Agent(name="Assistant", model=model, tools=memory_tools(server_memory, shared=True))
    Runner.run_sync(agent, "remember something")
    refused_key, refused_content = tool_outputs(model)
    assert refused_key.startswith("Refused: ") and "key" in refused_key
    assert refused_content.startswith("Refused: ")
    assert server_memory.list_entries(include_archived=True).entries == ()


def test_the_budget_and_the_threshold_are_the_developers(server_memory: Memory) -> None:
    for i in range(40):
        server_memory.store(f"deploy note {i}: canary releases go out on Thursdays", type="FACT")
    model = ScriptedModel([calls(("curate", {"query": "deploy"})), reply("ok"),
                           calls(("recall", {"query": "canary releases"})), reply("ok"),
                           calls(("recall", {"query": "canary releases"})), reply("ok")])
    agent = Agent(name="Assistant", model=model,
                  tools=memory_tools(server_memory, shared=True, token_budget=50))
    Runner.run_sync(agent, "brief me")
    Runner.run_sync(agent, "find it")
    strict = Agent(name="Assistant", model=model,
                   tools=memory_tools(server_memory, shared=True, min_score=1.0))
    Runner.run_sync(strict, "find it, strictly")
    block, found, none = tool_outputs(model)
    assert 0 < server_memory.count_tokens(block) <= 50
    assert found.count("\n") == 4                        # five hits, the default limit
    assert none == "No memories match."                  # min_score passed to search
    schema = memory_tools(server_memory, shared=True)[2].params_json_schema
    assert set(schema["properties"]) == {"query"}        # no budget for the model to pick
    with pytest.raises(ValidationError):
        memory_tools(server_memory, shared=True, token_budget=0)


def test_whose_memory_is_a_choice_made_up_front(server_memory: Memory) -> None:
    with pytest.raises(ValidationError, match="whose memory"):
        memory_tools(server_memory)
    with pytest.raises(ValidationError, match="whose memory"):
        curated_instructions(server_memory, "Be brief.")
    with pytest.raises(ValidationError, match="not both"):
        memory_tools(server_memory, user_id="ann", shared=True)
    ann = server_memory.view(agent_id="assistant", user_id="ann")
    assert len(memory_tools(ann)) == 3                   # bound to a user already
    with pytest.raises(ValidationError, match="acts for user 'ann'"):
        memory_tools(ann, user_id="bob")


def test_curated_instructions_and_a_session_together(server_memory: Memory) -> None:
    ops = server_memory.view(agent_id="assistant", user_id="ops-team")
    ops.store("Ship the payments service with canary releases", type="DECISION",
              key="deploy/strategy")
    model = ScriptedModel([reply("Canary, as decided."), reply("Still canary.")])
    agent = Agent(name="Assistant", model=model,
                  instructions=curated_instructions(server_memory, "You are terse.",
                                                    user_id=lambda run: run.context["user"],
                                                    token_budget=120))
    session = TulvingSession("ops", server_memory, user_id="ops-team")
    Runner.run_sync(agent, "How do we release payments?", session=session,
                    context={"user": "ops-team"})
    Runner.run_sync(agent, "And next week?", session=session, context={"user": "ops-team"})
    second = model.calls[1]
    instructions = second.system_instructions or ""
    assert instructions.startswith("You are terse.\n\n# What you remember\n")
    assert "canary releases" in instructions
    assert server_memory.count_tokens(instructions.split("# What you remember\n", 1)[1]) <= 120
    assert [i.get("content") for i in second.input if i.get("role") == "user"] == [
        "How do we release payments?", "And next week?"]


def test_a_function_of_the_run_that_names_no_user_is_refused(server_memory: Memory) -> None:
    model = ScriptedModel([calls(("recall", {"query": "anything"})), reply("ok")])
    agent = Agent(name="Assistant", model=model,
                  tools=memory_tools(server_memory, user_id=lambda run: run.context.get("user")))
    Runner.run_sync(agent, "hello", context={})
    (refused,) = tool_outputs(model)
    assert refused.startswith("Refused: ") and "user_id" in refused


def test_recall_after_a_session_skips_the_question_and_the_tool_items(memory: Memory) -> None:
    """A session that kept a tool call, its output and the question just asked: recall
    and curate answer from what the user said, not from those (tool items carry
    Tulving's tool-item tag; the question's own turn is no answer to itself)."""
    import asyncio

    from tulving import TOOL_ITEM_TAG

    session = TulvingSession("chat-1", memory)
    asyncio.run(session.add_items([
        {"role": "user", "content": "I eat oatmeal with berries every morning."},
        {"type": "function_call", "call_id": "c1", "name": "what_do_i_eat",
         "arguments": '{"what": "what do I eat"}'},
        {"type": "function_call_output", "call_id": "c1",
         "output": "what do I eat: unknown, what do I eat"},
        {"role": "user", "content": "what do I eat?"},
    ]))
    tagged = memory.search("what do I eat", 10, tags=[TOOL_ITEM_TAG])
    assert sorted(h.entry.content.split(" ")[1] for h in tagged) == ["call", "output:"]
    model = ScriptedModel([calls(("recall", {"query": "what do I eat?"}),
                                 ("curate", {"query": "what do I eat?"})), reply("ok")])
    agent = Agent(name="Assistant", model=model, tools=memory_tools(memory))
    Runner.run_sync(agent, "what do I eat?")
    recalled, curated = tool_outputs(model)
    assert recalled.splitlines()[0].endswith("I eat oatmeal with berries every morning.")
    for text in (recalled, curated):
        assert "tool" not in text and "unknown" not in text
        assert "user: what do I eat?" not in text
    # the session still replays every item, tool items included
    assert len(asyncio.run(session.get_items())) == 4
