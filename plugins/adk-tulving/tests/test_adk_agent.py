"""Agents on ADK's own Runner remember across sessions, each user apart, through this service.

Two models: ADK's ``ApigeeLlm`` in its OpenAI-compatible mode, talking HTTP to
``tulving.testing``'s OpenAI-compatible server (the real client path: what the model was
sent is what the server received), and a scripted ``BaseLlm`` (ADK's model interface) for
the turn where the model calls the ``load_memory`` tool, which the stub server cannot
script. What an agent stored is read back through the CLI in another process too.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from adk_tulving import TulvingMemoryService
from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.apigee_llm import ApigeeLlm
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import load_memory, preload_memory
from google.genai import types
from pydantic import Field

from tulving.testing.openai_server import OpenAIStubServer

APP = "kitchen"


def _say(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def _turn(runner: Runner, sessions: InMemorySessionService, user: str, text: str,
                session_id: str | None = None) -> tuple[str, list[str]]:
    """One turn in a session (a new one unless named); its id and the replies' texts."""
    if session_id is None:
        session_id = (await sessions.create_session(app_name=APP, user_id=user)).id
    replies = [p.text async for ev in runner.run_async(
        user_id=user, session_id=session_id, new_message=_say(text))
        if ev.content and ev.content.parts for p in ev.content.parts if p.text]
    return session_id, replies


async def _save(callback_context: CallbackContext) -> None:
    """What an app does to remember each turn: ADK's own after-agent hook."""
    await callback_context.add_session_to_memory()


def _sent(server: OpenAIStubServer) -> str:
    return json.dumps(server.requests[-1].body["messages"], ensure_ascii=False)


def test_a_later_session_is_preloaded_with_what_that_user_said(memory: Any) -> None:
    with OpenAIStubServer() as server:
        model = ApigeeLlm(model="apigee/openai/gpt-4o-mini", proxy_url=server.base_url)
        agent = LlmAgent(name="chef", model=model, instruction="You are a chef.",
                         tools=[preload_memory], after_agent_callback=_save)
        sessions = InMemorySessionService()
        runner = Runner(app_name=APP, agent=agent, session_service=sessions,
                        memory_service=TulvingMemoryService(memory))
        server.queue_reply("Noted.", "Noted.", "Try a chickpea curry.", "Grilled sardines!")

        async def scenario() -> None:
            await _turn(runner, sessions, "ann", "I am vegetarian and I love chickpeas")
            await _turn(runner, sessions, "bob", "I love grilled sardines")
            _, replies = await _turn(runner, sessions, "ann", "What should I cook tonight? "
                                     "Something with chickpeas")
            assert replies == ["Try a chickpea curry."]
            assert "I am vegetarian and I love chickpeas" in _sent(server)
            assert "sardines" not in _sent(server)
            await _turn(runner, sessions, "bob", "Any ideas for sardines?")
            assert "I love grilled sardines" in _sent(server)
            assert "chickpeas" not in _sent(server)

        asyncio.run(scenario())


class ScriptedModel(BaseLlm):
    """Calls ``load_memory`` with the user's question, then answers with what it got."""

    model: str = "scripted"
    seen: list[str] = Field(default_factory=list)

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False
                                     ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        response = next((p.function_response for p in last.parts or []
                         if p.function_response), None)
        if response is None:
            question = " ".join(p.text or "" for p in last.parts or [])
            call = types.FunctionCall(name="load_memory", args={"query": question})
            yield LlmResponse(content=types.Content(role="model",
                                                    parts=[types.Part(function_call=call)]))
            return
        found = json.dumps(response.response, ensure_ascii=False,
                           default=lambda model: model.model_dump(mode="json"))
        self.seen.append(found)
        yield LlmResponse(content=types.Content(role="model",
                                                parts=[types.Part(text=f"I found: {found}")]))


def test_the_load_memory_tool_reads_the_users_memory(memory: Any) -> None:
    service = TulvingMemoryService(memory)
    model = ScriptedModel(seen=[])
    agent = LlmAgent(name="chef", model=model, tools=[load_memory])
    sessions = InMemorySessionService()
    runner = Runner(app_name=APP, agent=agent, session_service=sessions,
                    memory_service=service)

    async def scenario() -> None:
        stored = await sessions.create_session(app_name=APP, user_id="ann")
        await _turn(runner, sessions, "ann", "My sister Maria is allergic to peanuts",
                    stored.id)
        done = await sessions.get_session(app_name=APP, user_id="ann", session_id=stored.id)
        assert done is not None
        await service.add_session_to_memory(done)
        await _turn(runner, sessions, "ann", "Who is allergic to peanuts?")
        await _turn(runner, sessions, "bob", "Who is allergic to peanuts?")

    asyncio.run(scenario())
    ann_sees, bob_sees = model.seen[1], model.seen[2]
    assert "My sister Maria is allergic to peanuts" in ann_sees
    assert "Maria" not in bob_sees


def test_what_an_agent_stored_is_read_back_through_the_cli(make_memory: Any,
                                                          tmp_path: Path) -> None:
    memory = make_memory("door.db")
    with OpenAIStubServer() as server:
        model = ApigeeLlm(model="apigee/openai/gpt-4o-mini", proxy_url=server.base_url)
        agent = LlmAgent(name="chef", model=model, after_agent_callback=_save)
        sessions = InMemorySessionService()
        runner = Runner(app_name=APP, agent=agent, session_service=sessions,
                        memory_service=TulvingMemoryService(memory))
        server.queue_reply("Noted: no cilantro.")
        asyncio.run(_turn(runner, sessions, "ann@example.com", "I hate cilantro"))
    memory.close()

    def search(user: str) -> list[dict[str, Any]]:
        out = subprocess.run(
            [sys.executable, "-m", "tulving.interfaces.cli.main", "search", "cilantro",
             "--json", "--path", str(tmp_path / "door.db"), "--agent-id", APP,
             "--user-id", user, "--embedder", "hashing", "--vectors", "exact"],
            capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        results: list[dict[str, Any]] = json.loads(out.stdout)["results"]
        return results

    contents = {r["content"] for r in search("ann@example.com")}
    assert contents == {"I hate cilantro", "Noted: no cilantro."}
    assert search("bob@example.com") == []
