"""``TulvingMemoryBlock``: a ``BaseMemoryBlock`` of ``llama_index.core.memory`` over Tulving.

Reading the block (``aget``) curates the memory for the latest messages into at most
``token_budget`` tokens (``Memory.curate``: the memories that matter, packed, secrets
masked); writing it (``aput``, which the LlamaIndex ``Memory`` calls with the messages it
flushes out of its short-term queue) hands them to ``Memory.remember`` as one transcript,
so each message is kept verbatim as an episode and what the rules (or the configured LLM)
read off it becomes typed memories. When the LlamaIndex ``Memory`` is over its token limit
and the block's ``priority`` allows truncation, ``atruncate`` curates again into the
smaller budget instead of dropping the block.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.memory.memory import BaseMemoryBlock

from tulving import AsyncMemory, Memory

#: The most characters of recent messages that form the curation query.
MAX_QUERY = 2000


class TulvingMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory for a LlamaIndex ``Memory``, curated by Tulving into a budget.

    Args:
        memory: a ``tulving.Memory`` or ``AsyncMemory`` (not closed by the block).
        token_budget: the most tokens the block's content takes (counted by Tulving's
            tokenizer, ``cl100k_base`` by default, as LlamaIndex counts).
        query_messages: how many of the latest messages form the curation query (no text
            in them: the memory's cold-start briefing instead).
        curate_options: passed to ``Memory.curate`` (``types``, ``tags``, ``weights``,
            ``since``, ``until``).
    """

    name: str = Field(default="TulvingMemory", description="The name of the memory block.")
    memory: Any = Field(description="The tulving.Memory (or AsyncMemory) behind the block.",
                        exclude=True)
    token_budget: int = Field(default=1500, gt=0,
                              description="The most tokens the block's content takes.")
    query_messages: int = Field(default=3, gt=0,
                                description="How many latest messages form the query.")
    curate_options: dict[str, Any] = Field(default_factory=dict,
                                           description="More arguments for curate().")

    _async: AsyncMemory = PrivateAttr()
    _last_query: str | None = PrivateAttr(default=None)

    @field_validator("memory", mode="before")
    @classmethod
    def _check_memory(cls, value: Any) -> Any:
        if not isinstance(value, Memory | AsyncMemory):
            raise ValueError("memory must be a tulving.Memory or tulving.AsyncMemory")
        return value

    def model_post_init(self, context: Any, /) -> None:
        self._async = self.memory if isinstance(self.memory, AsyncMemory) \
            else AsyncMemory.wrapping(self.memory)

    async def _aget(self, messages: list[ChatMessage] | None = None,
                    **block_kwargs: Any) -> str:
        """The curated block for the latest messages (empty when memory is empty)."""
        query = _query(messages or [], self.query_messages)
        self._last_query = query
        return await self._curate(query, self.token_budget)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Remember flushed messages: one ``Role: text`` turn each, one transcript."""
        turns = [f"{_speaker(m)}: {text}" for m in messages if (text := _text(m))]
        if turns:
            await self._async.remember("\n".join(turns))

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Curate again, into what is left of the budget once ``tokens_to_truncate`` are
        given back (None when nothing is left)."""
        if not content:
            return None
        used = self._async.memory.count_tokens(content)       # tiktoken: microseconds
        budget = used - max(0, tokens_to_truncate)
        if budget <= 0:
            return None
        return await self._curate(self._last_query, budget) or None

    async def _curate(self, query: str | None, budget: int) -> str:
        options = dict(self.curate_options)
        if not query:
            options.setdefault("mode", "orient")
        block = await self._async.curate(query or None, token_budget=budget, **options)
        return block.content


def _text(message: ChatMessage) -> str:
    return (message.content or "").strip()


def _speaker(message: ChatMessage) -> str:
    role = getattr(message.role, "value", message.role)
    return str(role).capitalize()


def _query(messages: list[ChatMessage], count: int) -> str | None:
    texts = [t for m in messages[-count:] if (t := _text(m))]
    query = " ".join(texts)[-MAX_QUERY:]
    return query or None
