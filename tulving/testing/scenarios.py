"""Scenarios that tests of several doors share (library, CLI, HTTP, MCP, the plugins).

``preference_scenario``: the cold-start case. Two important preferences and twelve
turns of small talk; a briefing of 300 tokens must show both preferences, whatever door
asks for it.
"""

from __future__ import annotations

from typing import Any

VEGETARIAN = "The user is vegetarian"
PORTUGUESE = "The user wants answers in Portuguese"
PREFERENCES = ((VEGETARIAN, "user/diet"), (PORTUGUESE, "user/language"))
SMALL_TALK = (
    "Hi! How are you today?", "I'm doing well, thanks for asking. How about you?",
    "Pretty good. The weather is lovely today.", "It really is, perfect for a walk.",
    "Did you see the game last night?", "No, I missed it. Was it exciting?",
    "Very! It went to overtime.", "Wow, that sounds thrilling.",
    "Anyway, what are you up to this weekend?", "Nothing much, maybe some reading.",
    "Sounds relaxing. Enjoy!", "Thanks, you too!",
)


def small_talk_transcript() -> str:
    """The twelve turns as a ``user:``/``assistant:`` transcript for ``remember()``."""
    return "\n".join(f"{'user' if i % 2 == 0 else 'assistant'}: {line}"
                     for i, line in enumerate(SMALL_TALK))


def preference_scenario(memory: Any) -> None:
    """Store the scenario through ``memory`` (a ``Memory`` or a client with ``store`` and
    ``remember``)."""
    for content, key in PREFERENCES:
        memory.store(content, type="PREFERENCE", importance=0.9, key=key)
    memory.remember(small_talk_transcript())
