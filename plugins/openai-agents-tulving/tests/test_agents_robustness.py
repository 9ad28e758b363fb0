"""No run fails because of what a tool or a user produced, and one session used from
many threads at once keeps every item.

The SDK adds a run's items to the session at the very end of ``Runner.run``, after the
model and the tools ran: a refusal there loses the answer and leaves the question alone
in the history. These are the reproductions of issue 41, as tests.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel
from openai_agents_tulving import TulvingSession
from scripting import calls, reply

from tulving import Memory

BIG = "".join(f"row {i}: value {i * 7}\n" for i in range(12_000))     # ~200k characters
BINARY = "header\x00\x01\x02 payload \udcff tail"     # NUL, control bytes, a lone surrogate


@function_tool
def fetch_report() -> str:
    """Fetch the quarterly report."""
    return BIG


@function_tool
def read_blob() -> str:
    """Read a binary blob as text."""
    return BINARY


@pytest.mark.parametrize("tool, output", [(fetch_report, BIG), (read_blob, BINARY)],
                         ids=["over-100k-characters", "nul-and-bad-unicode"])
def test_a_tool_output_is_kept_whatever_it_holds(memory: Memory, tool: Any,
                                                 output: str) -> None:
    session = TulvingSession("tools", memory)
    model = ScriptedModel([calls((tool.name, {})), reply("Here is the summary."),
                           reply("Still here.")])
    agent = Agent(name="test", model=model, tools=[tool])
    result = asyncio.run(Runner.run(agent, "Summarise it.", session=session))
    assert result.final_output == "Here is the summary."
    kept = asyncio.run(session.get_items())
    assert [i.get("type", "message") for i in kept] == [
        "message", "function_call", "function_call_output", "message"]
    assert kept[2]["output"] == output                   # whole, byte for byte
    Runner.run_sync(agent, "And now?", session=session)   # the next run replays it
    replayed = [i for i in model.calls[-1].input if i.get("type") == "function_call_output"]
    assert replayed[0]["output"] == output
    shown = [e.content for e in session.memory.list_entries(limit=1000).entries]
    assert all("\x00" not in text for text in shown)


def test_a_nul_in_a_user_message_is_kept(memory: Memory) -> None:
    session = TulvingSession("user-nul", memory)
    model = ScriptedModel([reply("ok")])
    Runner.run_sync(Agent(name="test", model=model), "paste: a\x00b", session=session)
    assert asyncio.run(session.get_items())[0] == {"role": "user", "content": "paste: a\x00b"}


def test_one_session_from_eight_threads_with_run_sync_keeps_every_item(memory: Memory) -> None:
    session = TulvingSession("threaded-server", memory)
    failures: list[BaseException] = []

    def turn(i: int) -> None:
        model = ScriptedModel([reply(f"answer {i}")])
        try:
            Runner.run_sync(Agent(name="test", model=model), f"question {i}", session=session)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=turn, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a run hung"
    assert failures == []
    kept = asyncio.run(session.get_items())
    assert len(kept) == 16
    questions = {i["content"] for i in kept if i.get("role") == "user"}
    assert questions == {f"question {i}" for i in range(8)}
    answers = {i["content"][0]["text"] for i in kept if i.get("role") == "assistant"}
    assert answers == {f"answer {i}" for i in range(8)}
