"""The service behaves as ADK's own memory services wherever ``BaseMemoryService``
defines the behaviour.

Ported case by case from adk-python's ``tests/unittests/memory/test_in_memory_memory_service.py``
(read, not copied), with only the construction swapped: ``TulvingMemoryService(memory)``
over a real SQLite Memory where upstream builds ``InMemoryMemoryService()``. Where
upstream reads the service's private ``_session_events`` dict, these read what the
service stored through a back channel: the user's Tulving entries (``memory.view(...)``),
the same facts another door would see.

Where the service differs on purpose: a search also returns a memory that shares no word
with the query when Tulving's vectors find it close enough (``min_similarity``); ties in
the ranking follow Tulving's order, not insertion order (the one check of that is
adapted, and says so). Four non-Latin cases of upstream (a word inside unspaced Chinese
or Japanese text) are strict xfails: Tulving's full-text search does not split those
scripts into words, which is Tulving's, not this package's, to change.
"""

from __future__ import annotations

import asyncio
import threading
import unicodedata
from typing import Any

import pytest
from adk_tulving import TulvingMemoryService
from google.adk.events.event import Event
from google.adk.sessions.session import Session
from google.genai import types

APP, USER, OTHER = "test-app", "test-user", "another-user"


def _event(id: str, text: str | None, *, author: str = "user", ts: float = 1.0,
           inv: str | None = None) -> Event:
    content = types.Content(parts=[types.Part(text=text)]) if text is not None else None
    return Event(id=id, invocation_id=inv or f"inv-{id}", author=author, timestamp=ts,
                 content=content)


SESSION_1 = Session(app_name=APP, user_id=USER, id="session-1", last_update_time=1000, events=[
    _event("event-1a", "The ADK is a great toolkit.", ts=12345),
    _event("event-1b", None, ts=12346),                 # no content: not kept
    _event("event-1c", "I agree. The Agent Development Kit (ADK) rocks!", author="model",
           ts=12347)])
SESSION_2 = Session(app_name=APP, user_id=USER, id="session-2", last_update_time=2000,
                    events=[_event("event-2a", "I like to code in Python.", ts=54321)])
SESSION_OTHER_USER = Session(app_name=APP, user_id=OTHER, id="session-3", last_update_time=3000,
                             events=[_event("event-3a", "This is a secret.", ts=60000)])
SESSION_NO_EVENTS = Session(app_name=APP, user_id=USER, id="session-4", last_update_time=4000)


def _kept(service: TulvingMemoryService, user: str = USER, app: str = APP) -> list[str]:
    """The event ids the service keeps for the user, oldest first (back channel)."""
    entries = service.view(app, user).list_entries(limit=1000).entries
    return [e.metadata["adk"]["event_id"] for e in entries if e.metadata.get("adk")]


def _texts(result: Any) -> list[str]:
    return [m.content.parts[0].text for m in result.memories]


def _search(service: TulvingMemoryService, query: str, user: str = USER,
            app: str = APP) -> Any:
    return asyncio.run(service.search_memory(app_name=app, user_id=user, query=query))


def test_add_session_to_memory(service: TulvingMemoryService) -> None:
    asyncio.run(service.add_session_to_memory(SESSION_1))
    assert _kept(service) == ["event-1a", "event-1c"]


def test_add_events_to_memory_with_explicit_events(service: TulvingMemoryService) -> None:
    asyncio.run(service.add_events_to_memory(app_name=APP, user_id=USER, session_id="session-1",
                                             events=[SESSION_1.events[0]]))
    assert _kept(service) == ["event-1a"]


def test_add_events_to_memory_without_session_id_uses_default_bucket(
        service: TulvingMemoryService) -> None:
    asyncio.run(service.add_events_to_memory(app_name=APP, user_id=USER,
                                             events=[SESSION_1.events[0]]))
    entries = service.view(APP, USER).list_entries().entries
    assert [e.metadata["adk"]["event_id"] for e in entries] == ["event-1a"]
    assert entries[0].metadata["adk"]["session_id"] == "__no_session__"


def test_add_events_to_memory_appends_without_replacing(service: TulvingMemoryService) -> None:
    asyncio.run(service.add_session_to_memory(SESSION_1))
    asyncio.run(service.add_events_to_memory(
        app_name=APP, user_id=USER, session_id="session-1",
        events=[_event("event-1d", "A new fact.", ts=12348)]))
    assert _kept(service) == ["event-1a", "event-1c", "event-1d"]


def test_add_events_to_memory_deduplicates_event_ids(service: TulvingMemoryService) -> None:
    asyncio.run(service.add_session_to_memory(SESSION_1))
    asyncio.run(service.add_events_to_memory(
        app_name=APP, user_id=USER, session_id="session-1",
        events=[_event("event-1a", "Updated duplicate text.", ts=12349, inv="inv-7")]))
    assert sorted(_kept(service)) == ["event-1a", "event-1c"]


def test_add_session_with_no_events_to_memory(service: TulvingMemoryService) -> None:
    asyncio.run(service.add_session_to_memory(SESSION_NO_EVENTS))
    assert _kept(service) == []


def test_search_memory_simple_match(service: TulvingMemoryService) -> None:
    asyncio.run(service.add_session_to_memory(SESSION_1))
    asyncio.run(service.add_session_to_memory(SESSION_2))
    result = _search(service, "Python")
    assert _texts(result) == ["I like to code in Python."]
    assert result.memories[0].author == "user"


def test_search_memory_case_insensitive_match(service: TulvingMemoryService) -> None:
    asyncio.run(service.add_session_to_memory(SESSION_1))
    assert _texts(_search(service, "development")) == [
        "I agree. The Agent Development Kit (ADK) rocks!"]


def test_search_memory_multiple_matches(service: TulvingMemoryService) -> None:
    asyncio.run(service.add_session_to_memory(SESSION_1))
    assert set(_texts(_search(service, "How about ADK?"))) == {
        "The ADK is a great toolkit.", "I agree. The Agent Development Kit (ADK) rocks!"}


def test_search_memory_no_match(service: TulvingMemoryService) -> None:
    asyncio.run(service.add_session_to_memory(SESSION_1))
    assert not _search(service, "nonexistent").memories


def test_search_memory_is_scoped_by_user(service: TulvingMemoryService) -> None:
    asyncio.run(service.add_session_to_memory(SESSION_1))
    asyncio.run(service.add_session_to_memory(SESSION_OTHER_USER))
    assert not _search(service, "secret").memories
    assert _texts(_search(service, "secret", user=OTHER)) == ["This is a secret."]


def test_search_memory_does_not_collide_on_slash_in_identifiers(
        service: TulvingMemoryService) -> None:
    asyncio.run(service.add_session_to_memory(Session(
        app_name="app/other-user", user_id="user", id="session-slashed-app",
        last_update_time=1000, events=[_event("event-slashed-app", "This is a secret.")])))
    assert not _search(service, "secret", user="other-user/user", app="app").memories


UNSPACED = pytest.mark.xfail(strict=True, reason="Tulving's full-text search does not split "
                             "unspaced Chinese or Japanese text into words")
NON_LATIN = [
    pytest.param("私の名前は太郎です", "太郎", 1, marks=UNSPACED),
    ("私の名前は太郎です", "天気", 0),
    pytest.param("我喜欢机器学习", "机器学习", 1, marks=UNSPACED),
    ("我喜欢机器学习", "天气预报", 0),
    ("제 이름은 민수입니다", "민수입니다", 1),
    ("Меня зовут Алексей", "Алексей", 1),
    ("太郎 works at ABC Corp", "太郎", 1),
    ("太郎 works at ABC Corp", "ABC", 1),
    ("私はPythonでADKを使っています", "Python", 1),
    ("私はPythonでADKを使っています", "adk", 1),
    ("我用Python写代码", "python", 1),
    pytest.param("私はPythonでADKを使っています", "使って", 1, marks=UNSPACED),
    ("私はPythonでADKを使っています", "Java", 0),
    ("I like to code in Python.", "thon", 0),
    ("私はPythonでADKを使っています", "thon", 0),
    (unicodedata.normalize("NFD", "私はCaféでADKを使っています"), "Café", 1),
    (unicodedata.normalize("NFD", "私はCaféでADKを使っています"), "café", 1),
    (unicodedata.normalize("NFD", "私はCaféでADKを使っています"), "Ruby", 0),
    (unicodedata.normalize("NFD", "Meet at the Café"), "Café", 1),
    ("Meet at the Café", unicodedata.normalize("NFD", "Café"), 1),
    pytest.param(unicodedata.normalize("NFD", "プログラミングを学ぶ"), "プログラミング", 1,
                 marks=UNSPACED),
    (unicodedata.normalize("NFD", "제 이름은 민수입니다"), "민수입니다", 1),
]


@pytest.mark.parametrize("event_text, query, expected_count", NON_LATIN)
def test_search_memory_non_latin(service: TulvingMemoryService, event_text: str, query: str,
                                 expected_count: int) -> None:
    asyncio.run(service.add_session_to_memory(Session(
        app_name=APP, user_id=USER, id="session-i18n", last_update_time=7000,
        events=[_event("event-i18n", event_text, ts=90000)])))
    result = _search(service, query)
    assert len(result.memories) == expected_count
    if expected_count:                       # the event's own text comes back
        assert _texts(result) == [event_text]


def test_search_memory_ranks_by_number_of_matching_words(service: TulvingMemoryService) -> None:
    asyncio.run(service.add_session_to_memory(Session(
        app_name=APP, user_id=USER, id="session-ranked", last_update_time=1000, events=[
            _event("ranked-a", "The deploy is ready."), _event("ranked-b", "Ready."),
            _event("ranked-c", "The deploy status is ready.")])))
    assert _texts(_search(service, "deploy status ready")) == [
        "The deploy status is ready.", "The deploy is ready.", "Ready."]


def test_search_memory_returns_at_most_ten_memories(service: TulvingMemoryService) -> None:
    """Adapted: the best match first and ten in all, as upstream; which nine of the twenty
    tied notes follow is Tulving's ranking (upstream: insertion order)."""
    events = [_event(f"note-{i}", f"note {i} about work") for i in range(20)]
    events.append(_event("backlog", "the backlog note about work"))
    asyncio.run(service.add_session_to_memory(Session(
        app_name=APP, user_id=USER, id="session-many", last_update_time=1000, events=events)))
    texts = _texts(_search(service, "work backlog note"))
    assert len(texts) == 10 and texts[0] == "the backlog note about work"
    assert set(texts[1:]) <= {f"note {i} about work" for i in range(20)}


def _session(tag: str) -> Session:
    return Session(app_name=APP, user_id=USER, id=f"session-{tag}", last_update_time=1,
                   events=[_event(f"event-{tag}", f"fact about {tag}")])


def test_search_memory_is_thread_safe_against_concurrent_writes(memory: Any) -> None:
    service = TulvingMemoryService(memory)
    for i in range(20):
        asyncio.run(service.add_session_to_memory(_session(f"seed-{i}")))
    errors: list[BaseException] = []
    barrier = threading.Barrier(3)

    def writer() -> None:
        barrier.wait()
        try:
            for i in range(40):
                asyncio.run(service.add_session_to_memory(_session(f"writer-{i}")))
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        barrier.wait()
        try:
            for _ in range(40):
                asyncio.run(service.search_memory(app_name=APP, user_id=USER, query="fact"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=f) for f in (writer, reader, reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]
    assert len(_kept(service)) == 60


@pytest.mark.parametrize("ingest_session", [True, False])
def test_ingested_memories_do_not_follow_caller_event_mutations(
        service: TulvingMemoryService, ingest_session: bool) -> None:
    event = _event("event", "I prefer jasmine tea.", ts=12345)
    session = Session(app_name=APP, user_id=USER, id="session", events=[event])
    if ingest_session:
        asyncio.run(service.add_session_to_memory(session))
    else:
        asyncio.run(service.add_events_to_memory(app_name=APP, user_id=USER,
                                                 session_id="session", events=session.events))
    event.author = "changed"
    assert event.content is not None and event.content.parts
    event.content.parts[0].text = "I prefer coffee."
    result = _search(service, "jasmine")
    assert len(result.memories) == 1 and result.memories[0].author == "user"
    assert _texts(result) == ["I prefer jasmine tea."]


@pytest.mark.parametrize("ingest_session", [True, False])
def test_retrieved_memories_do_not_mutate_storage_or_session_history(
        service: TulvingMemoryService, ingest_session: bool) -> None:
    session = Session(app_name=APP, user_id=USER, id="session",
                      events=[_event("event", "I prefer jasmine tea.", ts=12345)])
    if ingest_session:
        asyncio.run(service.add_session_to_memory(session))
    else:
        asyncio.run(service.add_events_to_memory(app_name=APP, user_id=USER,
                                                 session_id="session", events=session.events))
    first = _search(service, "jasmine")
    first.memories[0].content.parts.clear()
    assert _texts(_search(service, "jasmine")) == ["I prefer jasmine tea."]
    content = session.events[0].content
    assert content is not None and content.parts and content.parts[0].text == \
        "I prefer jasmine tea."


# ---- the installed InMemoryMemoryService's delete_memory (2.13) --------------------------
def test_delete_memory_removes_it_and_a_later_add_does_not_bring_it_back(
        service: TulvingMemoryService) -> None:
    asyncio.run(service.add_session_to_memory(SESSION_1))
    (hit,) = _search(service, "toolkit").memories
    assert hit.id is not None
    asyncio.run(service.delete_memory(app_name=APP, user_id=USER, memory_id=hit.id))
    assert not _search(service, "toolkit").memories
    asyncio.run(service.add_session_to_memory(SESSION_1))        # the whole session again
    assert not _search(service, "toolkit").memories
    assert _kept(service) == ["event-1c"]
    asyncio.run(service.delete_memory(app_name=APP, user_id=USER, memory_id=None))
    asyncio.run(service.delete_memory(app_name=APP, user_id=USER, memory_id="no-such-id"))
