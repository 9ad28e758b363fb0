"""A scripted model for the tests: the SDK's ``Model`` interface playing back tool calls
and replies (``tulving.testing``'s stub server speaks no tool calls)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A scripted tool call."""
    return {"call": name, "arguments": arguments}


class ScriptedModel:
    """The SDK's ``Model`` interface, answering from a script: each step is a reply text
    or a list of tool calls; ``seen`` keeps each request's (instructions, input)."""

    def __new__(cls, script: list[Any]) -> Any:
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.usage import Usage
        from openai.types.responses import (
            ResponseFunctionToolCall,
            ResponseOutputMessage,
            ResponseOutputText,
        )

        class _Scripted(Model):
            def __init__(self) -> None:
                self.script = list(script)
                self.seen: list[tuple[str | None, list[dict[str, Any]]]] = []
                self.calls = 0

            async def get_response(self, system_instructions: str | None, input: Any,
                                   *args: Any, **kwargs: Any) -> ModelResponse:
                items = [{"role": "user", "content": input}] if isinstance(input, str) \
                    else [dict(i) for i in input]
                self.seen.append((system_instructions, items))
                step = self.script.pop(0)
                self.calls += 1
                if isinstance(step, str):
                    output: list[Any] = [ResponseOutputMessage(
                        id=f"msg_{self.calls}", type="message", role="assistant",
                        status="completed",
                        content=[ResponseOutputText(type="output_text", text=step,
                                                    annotations=[])])]
                else:
                    output = [ResponseFunctionToolCall(
                        type="function_call", id=f"fc_{self.calls}_{i}",
                        call_id=f"call_{self.calls}_{i}", name=c["call"],
                        arguments=json.dumps(c["arguments"])) for i, c in enumerate(step)]
                return ModelResponse(output=output, usage=Usage(), response_id=None)

            def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
                raise NotImplementedError("the tests run without streaming")

        return _Scripted()
