"""LLM port: one chat completion call, optionally asked for JSON.

Callers never assume an LLM exists: with none configured, features fall back to a
deterministic path and say so once (loudly, never silently).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs


@attrs.frozen
class LLMReply:
    """One completion: its text and what it cost (counted into ``stats()["llm"]``)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""


@runtime_checkable
class LLM(Protocol):
    """A chat model for summaries, extraction, merges and query expansion. Optional:
    every caller has a deterministic path for when it is absent or fails."""

    model_id: str

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> LLMReply:
        """Raise ``LLMError`` on timeout, transport failure or refusal."""
        ...
