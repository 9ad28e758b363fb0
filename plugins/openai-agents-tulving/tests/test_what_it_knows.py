"""What the memory knows about the user reaches an agent's instructions: the scenario
(three important preferences, two facts, a project fact, a decision, forty turns of small
talk inside a session) through ``curated_instructions`` in a real ``agents.Runner`` run at
300, 500 and 1,500 tokens: every preference and fact about the user under "About the
user", nothing twice, every section under its heading."""

from __future__ import annotations

import pytest
from agents import Agent, Runner
from agents_scripted_model import ScriptedModel
from openai_agents_tulving import curated_instructions

from tulving.testing.scenarios import briefing_problems, knowledge_scenario


@pytest.mark.parametrize("budget", [300, 500, 1500])
def test_the_briefing_in_the_instructions(make_memory, budget: int) -> None:
    memory = make_memory(user_id="alice")
    knowledge_scenario(memory)
    model = ScriptedModel(["Noted."])
    agent = Agent(name="Assistant", model=model,
                  instructions=curated_instructions(memory, "You help.", token_budget=budget))
    assert Runner.run_sync(agent, "Hi").final_output == "Noted."
    instructions, _ = model.seen[0]
    assert instructions is not None
    briefing = instructions.split("# What you remember\n", 1)[1]
    assert memory.count_tokens(briefing) <= budget
    assert briefing_problems(briefing.strip()) == []
