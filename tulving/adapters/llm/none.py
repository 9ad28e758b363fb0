"""The "no LLM" adapter: the explicit absence of a model.

Features that would use an LLM (extraction, summarisation, consolidation) check
``llm.model_id == "none"`` (or catch the ``LLMError``) and take their deterministic
fallback, warning once that they did so; nothing degrades silently. ``complete`` raising
instead of returning an empty reply is deliberate: an empty string would look like an
answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tulving.domain.errors import LLMError
from tulving.ports.llm import LLMReply

if TYPE_CHECKING:
    from tulving.plugins.registry import AdapterContext

NONE_MODEL_ID = "none"


class NoLLM:
    model_id = NONE_MODEL_ID

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> LLMReply:
        raise LLMError("no LLM configured")

    def __repr__(self) -> str:
        return "NoLLM()"


def create(context: AdapterContext | None = None) -> NoLLM:
    return NoLLM()
