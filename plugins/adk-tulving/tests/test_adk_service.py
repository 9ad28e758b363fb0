"""What the service promises beyond ADK's own tests: settings checked, bad input refused
with nothing written, long events whole, explicit memories superseded by id, curation
within its budget, a Memory bound to a user serving that user only."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from adk_tulving import TulvingMemoryService, tulving_id
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry as AdkMemory
from google.genai import types

from tulving import ValidationError


def _event(id: str, text: str) -> Event:
    return Event(id=id, author="user", timestamp=1.0,
                 content=types.Content(role="user", parts=[types.Part(text=text)]))


def _add(service: TulvingMemoryService, *events: Event, **options: Any) -> None:
    asyncio.run(service.add_events_to_memory(app_name="app", user_id="ann", session_id="s",
                                             events=list(events), **options))


def _search(service: TulvingMemoryService, query: str) -> list[str]:
    found = asyncio.run(service.search_memory(app_name="app", user_id="ann", query=query))
    return [m.content.parts[0].text for m in found.memories if m.content.parts]


def test_settings_are_checked(memory: Any) -> None:
    with pytest.raises(TypeError):
        TulvingMemoryService(memory, max_result=3)   # type: ignore[call-arg]
    for bad in [{"max_results": 0}, {"min_similarity": 2}, {"scope": "workspace"}]:
        with pytest.raises(ValidationError):
            TulvingMemoryService(memory, **bad)
    with pytest.raises(ValidationError):
        TulvingMemoryService(object())               # type: ignore[arg-type]


def test_bad_input_writes_nothing(service: TulvingMemoryService) -> None:
    with pytest.raises(ValidationError):
        _add(service, _event("a", "kept?"), _event("b", "also?"),
             custom_metadata={"when": object()})
    with pytest.raises(ValidationError):
        asyncio.run(service.add_events_to_memory(app_name="app", user_id="  ",
                                                 events=[_event("a", "kept?")]))
    assert service.view("app", "ann").list_entries().entries == ()


def test_a_long_event_comes_back_whole(service: TulvingMemoryService) -> None:
    text = "the quick brown fox " * 5000 + "ends with a zebra"       # 100,017 characters
    _add(service, _event("long", text))
    assert len(service.view("app", "ann").list_entries().entries) == 3
    assert _search(service, "zebra") == [text]
    asyncio.run(service.delete_memory(app_name="app", user_id="ann",
                                      memory_id="adk/e/s/long"))
    assert service.view("app", "ann").list_entries().entries == ()


def test_explicit_memories_supersede_by_id(service: TulvingMemoryService) -> None:
    def add(text: str) -> None:
        asyncio.run(service.add_memory(app_name="app", user_id="ann", memories=[AdkMemory(
            id="diet", author="user", content=types.Content(parts=[types.Part(text=text)]))]))

    add("Ann eats fish")
    add("Ann is vegetarian now")
    assert _search(service, "Ann") == ["Ann is vegetarian now"]
    assert len(service.view("app", "ann").history("adk/m/diet")) == 2


def test_curate_packs_the_users_memories_into_the_budget(service: TulvingMemoryService) -> None:
    _add(service, *[_event(f"e{i}", f"Ann mentioned fact number {i} about her garden")
                    for i in range(40)])
    block = asyncio.run(service.curate(app_name="app", user_id="ann", query="garden",
                                       token_budget=120))
    assert 0 < block.token_count <= 120 and "garden" in block.content
    other = asyncio.run(service.curate(app_name="app", user_id="bob", query="garden",
                                       token_budget=120))
    assert "garden" not in other.content


def test_a_memory_bound_to_a_user_serves_that_user_only(make_memory: Any) -> None:
    service = TulvingMemoryService(make_memory(user_id="ann"))
    _add(service, _event("a", "Ann likes tea"))
    assert _search(service, "tea") == ["Ann likes tea"]
    with pytest.raises(ValidationError, match="acts for user 'ann'"):
        asyncio.run(service.search_memory(app_name="app", user_id="bob", query="tea"))


@pytest.mark.parametrize("name", ["user-42", "ann@example.com", "user one", "a/b", "/x",
                                  "Zoë", "0::x", "x" * 300])
def test_adk_names_become_valid_distinct_tulving_ids(memory: Any, name: str) -> None:
    mapped = tulving_id(name)
    memory.view(agent_id=mapped, user_id=mapped)                     # a valid identity
    others = {tulving_id(n) for n in ["user-42", "ann@example.com", "user one", "a/b",
                                      "/x", "Zoë", "0::x", "x" * 300] if n != name}
    assert mapped not in others
