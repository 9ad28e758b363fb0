"""A per-Memory ceiling on LLM spending, as a wrapper that is itself an LLM.

Why a wrapper: every feature that calls the model (extraction, summaries, consolidation)
goes through the same object, so one counter sees all of them and no feature can forget
to check. The check happens before a call (an exhausted budget never makes a request);
tokens are added after it from the reply's usage, so one call may overshoot the token
ceiling by its own size, never more. Failed calls count as calls: they were attempted.
When exhausted, ``complete`` raises ``LLMError``, which callers already treat as "no LLM"
and answer with their deterministic fallback.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from tulving.domain.errors import ConfigError, LLMError
from tulving.ports.llm import LLM, LLMReply


class BudgetedLLM:
    """``max_calls``/``max_tokens`` of ``None`` mean unlimited. Thread-safe."""

    def __init__(self, llm: LLM, max_calls: int | None, max_tokens: int | None) -> None:
        for name, value in (("max_calls", max_calls), ("max_tokens", max_tokens)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise ConfigError(f"{name} must be an integer >= 0 or None, got {value!r}")
        self._llm = llm
        self._max_calls = max_calls
        self._max_tokens = max_tokens
        self._calls = 0
        self._tokens = 0
        self._lock = threading.Lock()
        self.model_id = llm.model_id

    @property
    def inner(self) -> LLM:
        return self._llm

    @property
    def calls_used(self) -> int:
        with self._lock:
            return self._calls

    @property
    def tokens_used(self) -> int:
        with self._lock:
            return self._tokens

    @property
    def remaining_calls(self) -> int | None:
        with self._lock:
            return None if self._max_calls is None else max(0, self._max_calls - self._calls)

    @property
    def remaining_tokens(self) -> int | None:
        with self._lock:
            if self._max_tokens is None:
                return None
            return max(0, self._max_tokens - self._tokens)

    @property
    def exhausted(self) -> bool:
        with self._lock:
            return self._exhausted_reason() is not None

    def _exhausted_reason(self) -> str | None:
        if self._max_calls is not None and self._calls >= self._max_calls:
            return f"{self._calls} of {self._max_calls} calls used"
        if self._max_tokens is not None and self._tokens >= self._max_tokens:
            return f"{self._tokens} of {self._max_tokens} tokens used"
        return None

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> LLMReply:
        with self._lock:
            reason = self._exhausted_reason()
            if reason is not None:
                raise LLMError(f"LLM budget exhausted: {reason}")
            self._calls += 1
        reply = self._llm.complete(messages, json_schema=json_schema, max_tokens=max_tokens)
        with self._lock:
            self._tokens += max(0, reply.prompt_tokens) + max(0, reply.completion_tokens)
        return reply
