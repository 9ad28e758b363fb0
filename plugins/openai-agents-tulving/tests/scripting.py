"""Steps for the SDK's own scripted model (``agents.testing.ScriptedModel``): replies and
tool calls, and what the SDK fed back to the model."""

from __future__ import annotations

import itertools
from typing import Any

from agents.testing import assistant_message, function_call

_ids = itertools.count()


def reply(text: str) -> list[Any]:
    """A model step that answers ``text``."""
    return [assistant_message(text, item_id=f"msg_{next(_ids)}")]


def calls(*tool_calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """A model step that calls each ``(tool name, arguments)``."""
    return [function_call(name, arguments, call_id=f"call_{next(_ids)}")
            for name, arguments in tool_calls]


def tool_outputs(model: Any) -> list[str]:
    """The tool outputs the SDK fed back to the model, in order, once each."""
    seen: dict[str, str] = {}
    for call in model.calls:
        for item in call.input if isinstance(call.input, list) else ():
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                seen.setdefault(item["call_id"], item["output"])
    return list(seen.values())


def user_texts(model_input: Any) -> list[str]:
    """The user messages' texts of one model call's input."""
    if isinstance(model_input, str):
        return [model_input]
    return [i["content"] for i in model_input
            if isinstance(i, dict) and i.get("role") == "user" and isinstance(
                i.get("content"), str)]
