"""``curated_instructions`` gives an agent the memory's briefing: the issue's preference
scenario (two important preferences, twelve turns of small talk) at 300 tokens reaches the
model's instructions with both preferences, through a real ``agents.Runner`` run."""

from __future__ import annotations

from agents import Agent, Runner
from agents_scripted_model import ScriptedModel
from openai_agents_tulving import curated_instructions

from tulving import Memory

VEGETARIAN = "The user is vegetarian"
PORTUGUESE = "The user wants answers in Portuguese"
SMALL_TALK = [
    "Hi! How are you today?", "I'm doing well, thanks for asking. How about you?",
    "Pretty good. The weather is lovely today.", "It really is, perfect for a walk.",
    "Did you see the game last night?", "No, I missed it. Was it exciting?",
    "Very! It went to overtime.", "Wow, that sounds thrilling.",
    "Anyway, what are you up to this weekend?", "Nothing much, maybe some reading.",
    "Sounds relaxing. Enjoy!", "Thanks, you too!",
]


def test_both_preferences_reach_the_instructions_at_300_tokens(memory: Memory) -> None:
    memory.store(VEGETARIAN, type="PREFERENCE", importance=0.9, key="user/diet")
    memory.store(PORTUGUESE, type="PREFERENCE", importance=0.9, key="user/language")
    memory.remember("\n".join(f"{'user' if i % 2 == 0 else 'assistant'}: {line}"
                              for i, line in enumerate(SMALL_TALK)))
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
