"""Through a second door: Pydantic AI's OpenAI model over HTTP to the local
OpenAI-compatible server (what the model was sent is what the server received), and what
a run kept read back by the ``tulving`` CLI in another process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai_tulving import TulvingMemory

from tulving.testing.openai_server import OpenAIStubServer


def test_over_http_each_user_is_sent_their_own_memory_and_the_cli_reads_it(
        make_memory: Any, tmp_path: Path) -> None:
    memory = make_memory("doors.db")
    with OpenAIStubServer() as llm:
        model = OpenAIChatModel("gpt-4o-mini",
                                provider=OpenAIProvider(base_url=llm.base_url, api_key="k"))
        agent = Agent(model, capabilities=[
            TulvingMemory(memory, user_id=lambda ctx: str(ctx.deps), tools=False)])

        def chat(user: str, text: str) -> str:
            llm.queue_reply("Noted.")
            agent.run_sync(text, deps=user)
            request = llm.requests_to("/chat/completions")[-1]
            assert request.bearer == "k"
            return json.dumps(request.body["messages"])

        chat("ann", "My cat is called Miso")
        chat("bob", "My dog is called Rex")
        assert "Miso" in chat("ann", "What is my cat called?")
        assert "Miso" not in chat("bob", "What is my cat called?")
    memory.close()

    def search(user: str) -> list[str]:
        out = subprocess.run(
            [sys.executable, "-m", "tulving.interfaces.cli.main", "search", "cat", "--json",
             "--path", str(tmp_path / "doors.db"), "--agent-id", "assistant",
             "--user-id", user, "--embedder", "hashing", "--vectors", "exact"],
            capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return [r["content"] for r in json.loads(out.stdout)["results"]]

    assert "user: My cat is called Miso" in search("ann")
    assert not any("Miso" in c for c in search("bob"))
