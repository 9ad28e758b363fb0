"""The capability on Pydantic AI's own agents: instructions, tools and recorded runs.

Ported from pydantic-ai's ``tests/test_capabilities.py`` (read, not copied), with only the
capability swapped for this one: a capability's toolset is offered to the model and its
tools run (``test_capability_returning_toolset_func``), also when the capability is given
to one run only (``test_runtime_capability_contributions_applied``) or beside the agent's
own instructions (``test_capability_returning_toolset_func_combined``). The rest checks
what this capability promises, with Pydantic AI's ``FunctionModel`` playing the LLM
(what it receives is what a provider would be sent).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic_ai import Agent, ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai_tulving import TulvingMemory

from tulving import ValidationError


def _parts(messages: list[ModelMessage], kind: type, part: type) -> list[Any]:
    return [p for m in messages if isinstance(m, kind) for p in m.parts if isinstance(p, part)]


# ---- ported from tests/test_capabilities.py ----------------------------------------------
def test_capability_returning_toolset_func(memory: Any) -> None:
    agent = Agent(TestModel(), capabilities=[TulvingMemory(memory, user_id="alice")])
    result = agent.run_sync("Greet Alice")
    calls = _parts(result.all_messages(), ModelResponse, ToolCallPart)
    assert sorted(c.tool_name for c in calls) == ["curate", "recall", "remember"]
    returns = _parts(result.all_messages(), ModelRequest, ToolReturnPart)
    assert len(returns) == 3 and "Remembered." in [r.content for r in returns]


def test_runtime_capability_contributions_applied(memory: Any) -> None:
    agent = Agent(TestModel())
    result = agent.run_sync("Greet Alice", capabilities=[TulvingMemory(memory, user_id="alice")])
    calls = _parts(result.all_messages(), ModelResponse, ToolCallPart)
    assert sorted(c.tool_name for c in calls) == ["curate", "recall", "remember"]


def test_capability_returning_toolset_func_combined(memory: Any) -> None:
    agent = Agent(TestModel(), instructions="You are a helpful greeter.",
                  capabilities=[TulvingMemory(memory, user_id="bob")])
    result = agent.run_sync("Greet Bob")
    returns = _parts(result.all_messages(), ModelRequest, ToolReturnPart)
    assert len(returns) == 3 and "Remembered." in [r.content for r in returns]


# ---- what this capability promises -------------------------------------------------------
@dataclass
class Seen:
    """What the model was sent on its last request: instructions and messages."""

    instructions: str = ""
    messages: list[ModelMessage] | None = None


def _model(seen: Seen, reply: str = "OK.") -> FunctionModel:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.instructions = info.instructions or ""
        seen.messages = messages
        return ModelResponse(parts=[TextPart(content=reply)])
    return FunctionModel(answer)


@dataclass
class User:
    id: str


def test_each_user_gets_their_own_memory_in_the_instructions(memory: Any) -> None:
    seen = Seen()
    agent = Agent(_model(seen), deps_type=User, instructions="Be brief.", capabilities=[
        TulvingMemory(memory, user_id=lambda ctx: ctx.deps.id, tools=False)])
    agent.run_sync("I am vegetarian and I live in Lisbon", deps=User("ann"))
    agent.run_sync("I love grilled sardines", deps=User("bob"))
    agent.run_sync("What should I cook? I am vegetarian", deps=User("ann"))
    assert "Be brief." in seen.instructions
    assert "user: I am vegetarian and I live in Lisbon" in seen.instructions
    assert "sardines" not in seen.instructions
    agent.run_sync("Any fish ideas? sardines maybe", deps=User("bob"))
    assert "user: I love grilled sardines" in seen.instructions
    assert "Lisbon" not in seen.instructions


def test_a_run_is_kept_once_prompts_and_replies_not_tool_mechanics(memory: Any) -> None:
    agent = Agent(TestModel(custom_output_text="Noted, Ann."),
                  capabilities=[TulvingMemory(memory, user_id="ann")])
    result = agent.run_sync("Remember that my sister is Maria")
    ann = memory.view(agent_id="assistant", user_id="ann")
    kept = [e.content for e in ann.list_entries().entries if e.type.value == "EPISODE"]
    assert kept == ["user: Remember that my sister is Maria", "assistant: Noted, Ann."]
    assert all("curate" not in k and "recall" not in k for k in kept)
    assert result.output == "Noted, Ann."


def test_the_model_remembers_and_recalls_through_its_tools(memory: Any) -> None:
    """A scripted model calls ``remember`` (under a key, twice: the second replaces the
    first) and, in a later run, ``recall``; what the tool returned is what it was sent."""
    step = {"n": 0}

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step["n"] += 1
        last = messages[-1]
        returned = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if returned:
            return ModelResponse(parts=[TextPart(content=f"tool said {returned[0].content}")])
        prompt = " ".join(str(getattr(p, "content", "")) for p in last.parts)
        if prompt.startswith("recall"):
            return ModelResponse(parts=[ToolCallPart("recall", {"query": "where does ann live"})])
        return ModelResponse(parts=[ToolCallPart("remember", {"text": prompt, "key": "home"})])

    agent = Agent(FunctionModel(script), capabilities=[
        TulvingMemory(memory, user_id="ann", record=False)])
    agent.run_sync("Ann lives in Porto")
    agent.run_sync("Ann moved to Lisbon")
    result = agent.run_sync("recall")
    assert result.output == "tool said ['Ann moved to Lisbon']"
    ann = memory.view(agent_id="assistant", user_id="ann")
    assert [e.content for e in ann.history("pydantic-ai/home")] == [
        "Ann moved to Lisbon", "Ann lives in Porto"]


def test_a_bad_key_is_sent_back_to_the_model_to_fix(memory: Any) -> None:
    told: list[str] = []

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answers = [p for p in messages[-1].parts if p.part_kind in ("retry-prompt",
                                                                     "tool-return")]
        if answers:
            told.append(str(getattr(answers[0], "content", "")))
            return ModelResponse(parts=[TextPart(content="fixed")])
        return ModelResponse(parts=[ToolCallPart("remember", {"text": "x", "key": "a b//c"})])

    agent = Agent(FunctionModel(script), capabilities=[TulvingMemory(memory, user_id="ann",
                                                                     record=False)])
    assert agent.run_sync("go").output == "fixed"
    assert "malformed key" in told[0]
    assert memory.view(agent_id="assistant", user_id="ann").list_entries().entries == ()


def test_whose_memory_must_be_said(memory: Any, make_memory: Any) -> None:
    with pytest.raises(ValidationError, match="whose memory"):
        TulvingMemory(memory)
    with pytest.raises(ValidationError):
        TulvingMemory(memory, user_id="ann", shared=True)
    with pytest.raises(ValidationError, match="acts for user 'ann'"):
        TulvingMemory(make_memory("bound.db", user_id="ann"), user_id="bob")
    with pytest.raises(ValidationError):
        TulvingMemory(memory, user_id="ann", token_budget=0)
    with pytest.raises(TypeError):
        TulvingMemory(memory, user_id="ann", budget=10)   # type: ignore[call-arg]
    TulvingMemory(make_memory("bound2.db", user_id="ann"))          # bound: its user
    TulvingMemory(memory, shared=True)


def test_streamed_and_async_runs_keep_the_turn(memory: Any) -> None:
    agent = Agent(TestModel(custom_output_text="Sure."),
                  capabilities=[TulvingMemory(memory, user_id="ann", tools=False)])

    async def scenario() -> None:
        await agent.run("first async turn")
        async with agent.run_stream("second streamed turn") as stream:
            assert await stream.get_output() == "Sure."

    asyncio.run(scenario())
    kept = [e.content for e in memory.view(agent_id="assistant", user_id="ann")
            .list_entries().entries]
    assert "user: first async turn" in kept and "user: second streamed turn" in kept
