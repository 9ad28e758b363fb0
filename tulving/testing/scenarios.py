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


# The "what the memory knows" scenario: three important preferences, two facts about the
# user, a project fact, a decision, and forty turns of small talk told through remember()
# inside a session. Every door's briefing at 300, 500 and 1,500 tokens must list every
# preference and fact about the user under "About the user" (and nothing else there),
# show no item twice, and print every section under its heading (``briefing_problems``).
USER_PREFERENCES = (
    "Alice prefers concise answers without bullet lists",
    "Alice likes jazz fusion, especially Snarky Puppy",
    "Alice wants code examples in Python",
)
USER_FACTS = ("Alice works as a data engineer at Acme", "Alice has a dog named Pixel")
PROJECT_FACT = "Access tokens live 15 minutes before the gateway refreshes them"
DECISION = "We decided to deploy on Fridays only after the 2pm freeze"
_TOPICS = ("the weather", "the weekend", "a film", "the game last night", "lunch",
           "a podcast", "the train", "a book", "the garden", "a concert")


def chat_turns(count: int = 40) -> list[str]:
    """``count`` turns of small talk (user and assistant in turn), each of them distinct."""
    turns: list[str] = []
    for i in range(count // 2):
        topic = _TOPICS[i % len(_TOPICS)]
        turns.append(f"user: Round {i + 1} of chatting: what do you think about {topic} today?")
        turns.append(f"assistant: About {topic}, round {i + 1}: it sounds pleasant enough, "
                     "nothing more to add.")
    return turns


def knowledge_scenario(memory: Any) -> None:
    """Store the scenario through ``memory`` (a ``Memory``, a client, or anything with
    ``store`` and ``remember``; the turns are told inside a session when it has one)."""
    for content in USER_PREFERENCES:
        memory.store(content, type="PREFERENCE", importance=0.9)
    for content in USER_FACTS:
        memory.store(content, type="FACT")
    memory.store(PROJECT_FACT, type="FACT")
    memory.store(DECISION, type="DECISION")
    transcript = "\n".join(chat_turns())
    session = getattr(memory, "session", None)
    if callable(session):
        with session(goal="catch up"):
            memory.remember(transcript)
    else:
        memory.remember(transcript)


def _statement(line: str) -> str:
    text = line.strip()
    if text.startswith("- "):
        text = text[2:]
    if text.startswith("[") and "] " in text:
        text = text.split("] ", 1)[1]
    return " ".join(text.strip('"').split()).casefold()


def briefing_problems(content: str) -> list[str]:
    """What the scenario's briefing gets wrong (empty when right): a block without its
    heading, an item shown twice, a preference or fact about the user missing from "About
    the user", or something there that is not about the user."""
    problems: list[str] = []
    blocks = [b for b in content.split("\n\n") if b.strip()]
    seen: dict[str, str] = {}
    about = ""
    for block in blocks:
        lines = block.splitlines()
        heading = lines[0]
        if not heading.startswith("## "):
            problems.append(f"a block without its heading: {heading!r}")
        if heading.startswith("## About the user"):
            about = block
        for line in lines[1:]:
            if not line.startswith("- ") or line.startswith("- … "):
                continue
            said = _statement(line)
            if said in seen:
                problems.append(f"shown twice ({seen[said]} and {heading}): {line!r}")
            seen[said] = heading
    for text in (*USER_PREFERENCES, *USER_FACTS):
        if text not in about:
            problems.append(f"missing from About the user: {text!r}")
    for text in (PROJECT_FACT, DECISION):
        if text in about:
            problems.append(f"not about the user, yet under About the user: {text!r}")
    return problems
