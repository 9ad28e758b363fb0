"""The one door every LLM-using feature goes through, and where it degrades.

Why one door: extraction, summaries and consolidation must all behave the same when the
model is missing, failing, slow, malformed or out of budget: take the deterministic path,
say so once, lose nothing. Counting calls, tokens and fallbacks here makes
``stats().llm`` true for every feature at once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from tulving.application.plumbing.llm_budget import BudgetedLLM
from tulving.application.plumbing.warnings_once import warn_once
from tulving.domain.errors import LLMError, ValidationError
from tulving.domain.memory_reports import LLMUsage
from tulving.ports.llm import LLM

#: Calls one Memory may make unless ``options={"llm": {"max_calls": ...}}`` says otherwise.
DEFAULT_MAX_CALLS = 1_000


class LLMGateway:
    def __init__(
        self, llm: LLM | None, *, max_calls: int | None = DEFAULT_MAX_CALLS,
        max_tokens: int | None = None,
    ) -> None:
        usable = llm is not None and getattr(llm, "model_id", "none") != "none"
        self.llm: BudgetedLLM | None = (
            BudgetedLLM(llm, max_calls, max_tokens) if usable and llm is not None else None
        )
        self._lock = threading.Lock()
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.fallbacks = 0
        self.failures = 0

    @property
    def available(self) -> bool:
        return self.llm is not None and not self.llm.exhausted

    def fallback(self, feature: str) -> None:
        """Record that ``feature`` ran deterministically because no LLM is configured."""
        with self._lock:
            self.fallbacks += 1
        if self.llm is None:
            warn_once(
                "no-llm",
                "no LLM configured: extraction, summaries and consolidation run "
                "deterministically (rules and digests)",
            )

    def complete_json(
        self,
        feature: str,
        messages: Sequence[Mapping[str, str]],
        schema: Mapping[str, Any],
        *,
        max_tokens: int | None = None,
    ) -> Any | None:
        """The parsed JSON reply, or ``None`` after a warning when the caller must fall
        back (no LLM, budget spent, transport failure, malformed output)."""
        if self.llm is None:
            self.fallback(feature)
            return None
        try:
            reply = self.llm.complete(messages, json_schema=schema, max_tokens=max_tokens)
            value = json.loads(reply.text)
        except (LLMError, ValidationError, ValueError) as exc:
            with self._lock:
                self.fallbacks += 1
                self.failures += 1
            reason = "budget" if "budget exhausted" in str(exc) else "failed"
            warn_once(
                f"llm-{reason}:{feature}",
                f"LLM {feature} {'skipped' if reason == 'budget' else 'failed'} ({exc}); "
                "using the deterministic path instead, nothing is lost",
            )
            return None
        with self._lock:
            self.prompt_tokens += max(0, reply.prompt_tokens)
            self.completion_tokens += max(0, reply.completion_tokens)
        return value

    def stats(self) -> LLMUsage:
        llm = self.llm
        with self._lock:
            return LLMUsage(
                model=llm.model_id if llm is not None else None,
                calls=llm.calls_used if llm is not None else 0,
                prompt_tokens=self.prompt_tokens,
                completion_tokens=self.completion_tokens,
                budget_calls_left=llm.remaining_calls if llm is not None else None,
                budget_tokens_left=llm.remaining_tokens if llm is not None else None,
                fallbacks=self.fallbacks,
                failures=self.failures,
            )
