"""``TulvingSession`` behaves as the SDK's reference ``SQLiteSession`` wherever the
``Session`` interface defines the behaviour.

Written from openai-agents-python's own session tests (read, not copied):
``tests/memory/test_session.py``, ``tests/memory/test_session_limit.py`` and
``tests/extensions/memory/test_async_sqlite_session.py``; each test names the behaviour
it checks. Runs go through ``agents.Runner`` (``run``, ``run_sync`` from a thread with
its own loop, ``run_streamed``) with the SDK's own ``agents.testing.ScriptedModel``.
What SQLiteSession's tests check of SQLite itself (connections, file locks, rollbacks
of its transactions, ``close()``) has no counterpart here: the session owns no
connection, and a failed write leaves nothing behind (one Tulving transaction).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, SessionSettings
from agents.testing import ScriptedModel
from openai_agents_tulving import TulvingSession
from scripting import reply

from tulving import ContentError, Memory

RUNNERS = ["run", "run_sync", "run_streamed"]


async def _run(how: str, agent: Agent[Any], user_input: Any, **kwargs: Any) -> Any:
    if how == "run":
        return await Runner.run(agent, user_input, **kwargs)
    if how == "run_sync":          # a thread with its own event loop, as a server has
        return await asyncio.to_thread(Runner.run_sync, agent, user_input, **kwargs)
    result = Runner.run_streamed(agent, user_input, **kwargs)
    async for _ in result.stream_events():
        pass
    return result


def _contents(items: list[Any]) -> list[Any]:
    return [i.get("content") for i in items]


@pytest.mark.parametrize("how", RUNNERS)
def test_a_second_turn_sees_the_first(memory: Memory, how: str) -> None:
    """test_session_memory_basic_functionality_parametrized"""
    session = TulvingSession("golden-gate", memory)
    model = ScriptedModel([reply("San Francisco"), reply("California")])
    agent = Agent(name="test", model=model)

    async def scenario() -> None:
        first = await _run(how, agent, "What city is the Golden Gate Bridge in?",
                           session=session)
        second = await _run(how, agent, "What state is it in?", session=session)
        assert (first.final_output, second.final_output) == ("San Francisco", "California")

    asyncio.run(scenario())
    last = model.calls[-1].input
    assert [i.get("role") for i in last] == ["user", "assistant", "user"]
    assert last[0]["content"] == "What city is the Golden Gate Bridge in?"


@pytest.mark.parametrize("how", RUNNERS)
def test_sessions_keep_separate_histories(memory: Memory, how: str) -> None:
    """test_session_memory_different_sessions_parametrized"""
    cats, dogs = TulvingSession("session_1", memory), TulvingSession("session_2", memory)
    model = ScriptedModel([reply("I like cats"), reply("I like dogs"), reply("cats")])
    agent = Agent(name="test", model=model)

    async def scenario() -> None:
        await _run(how, agent, "I like cats", session=cats)
        await _run(how, agent, "I like dogs", session=dogs)
        await _run(how, agent, "What did I say I like?", session=cats)

    asyncio.run(scenario())
    assert "I like dogs" not in str(model.calls[-1].input)
    assert _contents(model.calls[-1].input)[0] == "I like cats"


@pytest.mark.parametrize("how", RUNNERS)
def test_a_list_input_is_appended_to_the_history(memory: Memory, how: str) -> None:
    """test_session_memory_appends_list_input_by_default"""
    session = TulvingSession("list-input", memory)
    history = [{"role": "user", "content": "Earlier message"},
               {"role": "assistant", "content": "Saved reply"}]
    asyncio.run(session.add_items(history))
    model = ScriptedModel([reply("This should run")])
    new = [{"role": "user", "content": "Test message"}]
    asyncio.run(_run(how, Agent(name="test", model=model), new, session=session))
    assert model.calls[-1].input == history + new


@pytest.mark.parametrize("how", RUNNERS)
def test_the_session_input_callback_shapes_what_the_model_sees(memory: Memory,
                                                               how: str) -> None:
    """test_session_callback_prepared_input"""
    session = TulvingSession("callback", memory)
    history = [{"role": "user", "content": "Hello there."},
               {"role": "assistant", "content": "Hi, I'm here to assist you."}]
    asyncio.run(session.add_items(history))
    model = ScriptedModel([reply("I'm gpt-4o")])
    new = [{"role": "user", "content": "What your name?"}]

    def users_only(old: list[Any], fresh: list[Any]) -> list[Any]:
        return [i for i in old if i["role"] == "user"] + fresh

    asyncio.run(_run(how, Agent(name="test", model=model), new, session=session,
                     run_config=RunConfig(session_input_callback=users_only)))
    assert model.calls[-1].input == [history[0], new[0]]


@pytest.mark.parametrize("how", RUNNERS)
def test_a_callback_repeating_history_does_not_grow_the_session(memory: Memory,
                                                                how: str) -> None:
    """test_session_callback_repeating_history_does_not_grow_session"""
    session = TulvingSession("repeat", memory)
    model = ScriptedModel([reply(f"assistant {turn}") for turn in range(3)])

    def repeat_first(old: list[Any], fresh: list[Any]) -> list[Any]:
        return [*old, old[0], *fresh] if old else fresh

    async def scenario() -> None:
        for turn in range(3):
            await _run(how, Agent(name="test", model=model), f"user {turn}", session=session,
                       run_config=RunConfig(session_input_callback=repeat_first))

    asyncio.run(scenario())
    stored = asyncio.run(session.get_items())
    assert [i["content"] for i in stored if i.get("role") == "user"] == [
        "user 0", "user 1", "user 2"]
    assert len(stored) == 6


def test_add_get_and_clear(memory: Memory) -> None:
    """test_sqlite_session_memory_direct, test_async_sqlite_session_add_empty_items_list"""
    session = TulvingSession("direct_test", memory)
    items = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"}]
    asyncio.run(session.add_items(items))
    asyncio.run(session.add_items([]))
    assert asyncio.run(session.get_items()) == items
    asyncio.run(session.clear_session())
    assert asyncio.run(session.get_items()) == []


def test_pop_item_returns_the_latest_until_empty(memory: Memory) -> None:
    """test_sqlite_session_memory_pop_item, test_async_sqlite_session_pop_from_empty_session"""
    session = TulvingSession("pop_test", memory)
    assert asyncio.run(session.pop_item()) is None
    items = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi"},
             {"role": "user", "content": "How are you?"}]
    asyncio.run(session.add_items(items))
    popped = [asyncio.run(session.pop_item()) for _ in range(4)]
    assert popped == [items[2], items[1], items[0], None]
    assert asyncio.run(session.get_items()) == []


def test_pop_item_touches_only_its_session(memory: Memory) -> None:
    """test_session_memory_pop_different_sessions"""
    one, two = TulvingSession("session_1", memory), TulvingSession("session_2", memory)
    asyncio.run(one.add_items([{"role": "user", "content": "Session 1 message"}]))
    asyncio.run(two.add_items([{"role": "user", "content": "Session 2 message 1"},
                               {"role": "user", "content": "Session 2 message 2"}]))
    assert asyncio.run(two.pop_item()) == {"role": "user", "content": "Session 2 message 2"}
    assert _contents(asyncio.run(one.get_items())) == ["Session 1 message"]
    assert _contents(asyncio.run(two.get_items())) == ["Session 2 message 1"]


def test_get_items_limit_gives_the_latest_in_order(memory: Memory) -> None:
    """test_sqlite_session_get_items_with_limit,
    test_async_sqlite_session_get_items_with_limit_more_than_available"""
    session = TulvingSession("count_test", memory)
    texts = ["Message 1", "Response 1", "Message 2", "Response 2", "Message 3", "Response 3"]
    asyncio.run(session.add_items([{"role": "user" if i % 2 == 0 else "assistant",
                                    "content": t} for i, t in enumerate(texts)]))
    assert _contents(asyncio.run(session.get_items())) == texts
    assert _contents(asyncio.run(session.get_items(limit=2))) == texts[-2:]
    assert _contents(asyncio.run(session.get_items(limit=4))) == texts[-4:]
    assert _contents(asyncio.run(session.get_items(limit=10))) == texts
    assert asyncio.run(session.get_items(limit=0)) == []


def test_items_added_together_keep_their_order(memory: Memory) -> None:
    """test_async_sqlite_session_get_items_same_timestamp_consistent_order,
    test_async_sqlite_session_pop_item_same_timestamp_returns_latest (items added in one
    call share one event time here: their order is the order they were given in)"""
    session = TulvingSession("same_timestamp", memory)
    older = {"id": "older_same_ts", "role": "user", "content": "old"}
    reasoning = {"id": "rs_same_ts", "type": "reasoning", "summary": []}
    message = {"id": "msg_same_ts", "type": "message", "role": "assistant", "content": []}
    asyncio.run(session.add_items([older]))
    asyncio.run(session.add_items([reasoning, message]))
    assert [i["id"] for i in asyncio.run(session.get_items())] == [
        "older_same_ts", "rs_same_ts", "msg_same_ts"]
    assert [i["id"] for i in asyncio.run(session.get_items(limit=2))] == [
        "rs_same_ts", "msg_same_ts"]
    assert asyncio.run(session.pop_item()) == message


def test_unicode_and_special_characters_round_trip(memory: Memory) -> None:
    """test_sqlite_session_unicode_content, test_sqlite_session_special_characters_and_sql_injection"""
    session = TulvingSession("special_chars_test", memory)
    texts = ["こんにちは", "😊👍", "Привет", "O'Reilly", "DROP TABLE sessions;",
             '"SELECT * FROM users WHERE name = "admin";"',
             "Robert'); DROP TABLE students;--", "Normal message"]
    asyncio.run(session.add_items([{"role": "user", "content": t} for t in texts]))
    assert _contents(asyncio.run(session.get_items())) == texts


def test_writes_from_threads_with_their_own_loops_are_all_kept(memory: Memory) -> None:
    """test_sqlite_session_concurrent_access"""
    session = TulvingSession("concurrent_test", memory)

    def add(i: int) -> None:
        asyncio.run(session.add_items([{"role": "user", "content": f"Message {i}"}]))

    with concurrent.futures.ThreadPoolExecutor(max_workers=5) as pool:
        list(pool.map(add, range(10)))
    assert set(_contents(asyncio.run(session.get_items()))) == {f"Message {i}"
                                                                for i in range(10)}


def test_concurrent_pops_return_each_item_once(memory: Memory) -> None:
    """test_concurrent_pop_item_returns_each_row_once (the SQLAlchemy session's test)"""
    session = TulvingSession("pops", memory)
    asyncio.run(session.add_items([{"role": "user", "content": f"m{i}"} for i in range(12)]))
    popped: list[Any] = []
    lock = threading.Lock()

    def pop() -> None:
        item = asyncio.run(session.pop_item())
        with lock:
            popped.append(item)

    threads = [threading.Thread(target=pop) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(i["content"] for i in popped) == sorted(f"m{i}" for i in range(12))
    assert asyncio.run(session.get_items()) == []


def test_a_failed_add_writes_nothing_and_the_session_stays_usable(memory: Memory) -> None:
    """test_sqlite_session_failed_add_items_releases_write_lock (an item that is not JSON
    data is refused; here with ContentError, a ValueError, where SQLiteSession's
    json.dumps raises TypeError)"""
    session = TulvingSession("rollback_test", memory)
    with pytest.raises(ContentError):
        asyncio.run(session.add_items([{"role": "user", "content": "kept?"},
                                       {"role": "user", "content": object()}]))
    assert asyncio.run(session.get_items()) == []
    asyncio.run(session.add_items([{"role": "user", "content": "after failure"}]))
    assert _contents(asyncio.run(session.get_items())) == ["after failure"]


def test_unreadable_entries_are_skipped_and_dropped_by_pop(memory: Memory) -> None:
    """test_sqlite_session_pop_item_skips_corrupt_most_recent,
    test_sqlite_session_get_items_limit_skips_corrupt_newest_rows,
    test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows (a corrupt
    row here: an entry of the session whose item is unreadable, written behind its back)"""
    session = TulvingSession("corrupt", memory)
    valid = [{"role": "user", "content": f"valid {i}"} for i in range(3)]
    asyncio.run(session.add_items(valid))
    session.memory.store("user: ???", type="EPISODE", tags=[session.tag], dedup=False,
                         metadata={"openai_agents": {"session_id": "corrupt",
                                                     "item_json": "not valid json {{{",
                                                     "item_id": "x", "part": 0,
                                                     "parts": 1}})
    assert asyncio.run(session.get_items(limit=2)) == valid[1:]
    assert asyncio.run(session.pop_item()) == valid[2]
    assert asyncio.run(session.get_items()) == valid[:2]
    only = TulvingSession("only-corrupt", memory)
    only.memory.store("user: ???", type="EPISODE", tags=[only.tag], dedup=False,
                      metadata={"openai_agents": {"session_id": "only-corrupt"}})
    assert asyncio.run(only.pop_item()) is None
    assert asyncio.run(only.get_items()) == []
    assert only.memory.list_entries(tags=[only.tag]).entries == ()


def test_session_settings_as_the_sdk_takes_them(memory: Memory) -> None:
    """test_session_settings_default, test_session_settings_constructor,
    test_session_settings_constructor_normalizes_dictionary,
    test_session_settings_rejects_unknown_dictionary_fields"""
    assert TulvingSession("d", memory).session_settings == SessionSettings()
    assert TulvingSession("c", memory,
                          session_settings=SessionSettings(limit=5)).session_settings.limit == 5
    normalised = TulvingSession("n", memory, session_settings={"limit": 0}).session_settings
    assert isinstance(normalised, SessionSettings) and normalised.limit == 0
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        TulvingSession("bad", memory, session_settings={"limitt": 1})


def test_the_settings_limit_is_the_default_and_an_explicit_one_wins(memory: Memory) -> None:
    """test_get_items_uses_session_settings_limit,
    test_get_items_explicit_limit_overrides_session_settings"""
    session = TulvingSession("limits", memory, session_settings=SessionSettings(limit=3))
    asyncio.run(session.add_items([{"role": "user", "content": f"Message {i}"}
                                   for i in range(10)]))
    assert _contents(asyncio.run(session.get_items())) == [f"Message {i}" for i in (7, 8, 9)]
    assert _contents(asyncio.run(session.get_items(limit=2))) == ["Message 8", "Message 9"]


@pytest.mark.parametrize("how", RUNNERS)
@pytest.mark.parametrize("limit", [0, 2, None, 100])
def test_the_run_configs_session_settings_limit_the_history(memory: Memory, how: str,
                                                            limit: int | None) -> None:
    """test_runner_with_session_settings_override, test_session_limit_parameter,
    test_session_limit_zero, test_session_limit_none_gets_all_history,
    test_session_limit_larger_than_history"""
    session = TulvingSession("run-limit", memory, session_settings=SessionSettings(limit=100))
    history = [{"role": "user", "content": f"Turn {i}"} for i in range(10)]
    asyncio.run(session.add_items(history))
    model = ScriptedModel([reply("Got it")])
    asyncio.run(_run(how, Agent(name="test", model=model), "New question", session=session,
                     run_config=RunConfig(session_settings=SessionSettings(limit=limit))))
    seen = [i for i in model.calls[-1].input if i.get("content") != "New question"]
    expected = history if limit is None else history[len(history) - limit:] if limit else []
    assert seen == expected


@pytest.mark.parametrize("how", RUNNERS)
def test_a_limit_never_passes_a_tool_output_without_its_call(memory: Memory,
                                                             how: str) -> None:
    """test_session_limit_drops_unmatched_history_function_call_output"""
    session = TulvingSession("limit_tool_pair", memory)
    history = [
        {"role": "user", "content": "What is the weather?"},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather",
         "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "It is sunny.", "annotations": []}]},
    ]
    asyncio.run(session.add_items(history))
    assert asyncio.run(session.get_items(limit=2)) == history[-2:]
    model = ScriptedModel([reply("Tomorrow is sunny too.")])
    asyncio.run(_run(how, Agent(name="test", model=model), "What about tomorrow?",
                     session=session,
                     run_config=RunConfig(session_settings=SessionSettings(limit=2))))
    assert model.calls[-1].input == [history[-1],
                                     {"role": "user", "content": "What about tomorrow?"}]
