"""``curated_instructions`` gives an agent the memory's briefing: the issue's preference
scenario (two important preferences, twelve turns of small talk) at 300 tokens reaches the
model's instructions with both preferences, through a real ``agents.Runner`` run."""

from __future__ import annotations

from agents import Agent, Runner
from agents_scripted_model import ScriptedModel
from openai_agents_tulving import curated_instructions

from tulving import Memory
from tulving.testing.scenarios import PORTUGUESE, VEGETARIAN, preference_scenario


def test_both_preferences_reach_the_instructions_at_300_tokens(memory: Memory) -> None:
    preference_scenario(memory)
    model = ScriptedModel(["Olá! Que tal uma moqueca de legumes?"])
    agent = Agent(name="Assistant", model=model,
                  instructions=curated_instructions(memory, "You cook.", token_budget=300))
    result = Runner.run_sync(agent, "What should I make tonight?")
    assert result.final_output.startswith("Olá")
    instructions, _ = model.seen[0]
    assert instructions is not None
    briefing = instructions.split("# What you remember\n", 1)[1]
    assert VEGETARIAN in briefing and PORTUGUESE in briefing
    assert memory.count_tokens(briefing) <= 300
    # what the user is like comes first; the replayed small talk only fills what is left
    assert briefing.index(VEGETARIAN) < briefing.index("## Recent turns")
