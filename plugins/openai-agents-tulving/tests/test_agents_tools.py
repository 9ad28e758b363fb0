"""The memory tools called by an agent in real ``Runner`` runs (a scripted model decides
the calls), and curated memory as dynamic instructions."""

from __future__ import annotations

from typing import Any

import pytest
from agents import Agent, Runner
from agents_scripted_model import ScriptedModel, call
from openai_agents_tulving import TulvingSession, curated_instructions, memory_tools

from tulving import Memory, ValidationError


def _outputs(model: Any) -> list[str]:
    """The tool outputs the SDK fed back to the model, in order."""
    return [i["output"] for _, items in model.seen for i in items
            if i.get("type") == "function_call_output"]


def test_an_agent_remembers_then_recalls_and_curates(memory: Memory) -> None:
    tools = memory_tools(memory, token_budget=80, key_prefix="agent")
    model = ScriptedModel([
        [call("remember", content="Ann is vegetarian", key="user/diet", type="PREFERENCE",
              importance=0.9),
         call("remember", content="Ann lives in Porto", key="user/city")],
        "Noted.",
        [call("remember", content="Ann moved to Lisbon", key="user/city")],
        "Updated.",
        [call("recall", query="where did Ann move", limit=1),
         call("curate", query="cook dinner for Ann")],
        "You could cook a vegetable stew in Lisbon.",
    ])
    agent = Agent(name="Assistant", model=model, tools=tools)
    assert Runner.run_sync(agent, "I'm vegetarian and live in Porto.").final_output == "Noted."
    assert Runner.run_sync(agent, "I moved to Lisbon.").final_output == "Updated."
    last = Runner.run_sync(agent, "What should I cook?")
    assert last.final_output.startswith("You could cook")
    stored, stored_city, moved, recalled, curated = _outputs(model)
    assert stored == "Stored PREFERENCE under key agent/user/diet."
    assert stored_city == "Stored FACT under key agent/user/city."
    assert moved == "Stored FACT under key agent/user/city (replacing the previous version)."
    assert recalled.startswith("- [fact · agent/user/city · ") and \
        recalled.endswith("] Ann moved to Lisbon")
    assert "vegetarian" in curated and "Porto" not in curated
    assert memory.count_tokens(curated) <= 80
    assert [e.content for e in memory.history("agent/user/city")] == [
        "Ann moved to Lisbon", "Ann lives in Porto"]


def test_bad_input_is_explained_to_the_model_and_nothing_is_written(memory: Memory) -> None:
    model = ScriptedModel([
        [call("remember", content="x", key="bad key with spaces"),
         call("remember", content="   ")],
        "Sorry.",
    ])
    agent = Agent(name="Assistant", model=model, tools=memory_tools(memory))
    Runner.run_sync(agent, "remember something")
    refused_key, refused_content = _outputs(model)
    assert refused_key.startswith("Refused: ") and "key" in refused_key
    assert refused_content.startswith("Refused: ")
    assert memory.list_entries(include_archived=True).entries == ()


def test_the_budget_is_the_developers(memory: Memory) -> None:
    for i in range(40):
        memory.store(f"deploy note {i}: canary releases go out on Thursdays", type="FACT")
    model = ScriptedModel([[call("curate", query="deploy")], "ok"])
    agent = Agent(name="Assistant", model=model, tools=memory_tools(memory, token_budget=50))
    Runner.run_sync(agent, "brief me")
    (block,) = _outputs(model)
    assert 0 < memory.count_tokens(block) <= 50
    schema = memory_tools(memory)[2].params_json_schema
    assert set(schema["properties"]) == {"query"}        # no budget for the model to pick
    with pytest.raises(ValidationError):
        memory_tools(memory, token_budget=0)


def test_curated_instructions_and_a_session_together(memory: Memory) -> None:
    memory.store("Ship the payments service with canary releases", type="DECISION",
                 key="deploy/strategy")
    model = ScriptedModel(["Canary, as decided.", "Still canary."])
    agent = Agent(name="Assistant", model=model,
                  instructions=curated_instructions(memory, "You are terse.", token_budget=120))
    session = TulvingSession("ops", memory)
    Runner.run_sync(agent, "How do we release payments?", session=session)
    Runner.run_sync(agent, "And next week?", session=session)
    instructions, second_input = model.seen[1]
    assert instructions.startswith("You are terse.\n\n# What you remember\n")
    assert "canary releases" in instructions
    assert memory.count_tokens(instructions.split("# What you remember\n", 1)[1]) <= 120
    assert [i.get("content") for i in second_input if i.get("role") == "user"] == [
        "How do we release payments?", "And next week?"]
