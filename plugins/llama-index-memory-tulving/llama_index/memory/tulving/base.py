"""``TulvingMemoryBlock``: a ``BaseMemoryBlock`` of ``llama_index.core.memory`` over Tulving.

Reading the block (``aget``) curates the user's memory for what the user asked (the
latest user message, or the ``query`` the caller passes to ``Memory.get``) into at most
``token_budget`` tokens (``Memory.curate``: the memories that matter, packed, secrets
masked); with nothing asked, the memory's cold-start briefing. Writing it (``aput``,
which the LlamaIndex ``Memory`` calls with the messages it flushes out of its short-term
queue) hands them to ``Memory.remember`` as one transcript, so each message is kept
verbatim as an episode and what the rules (or the configured LLM) read off it becomes
typed memories; acknowledgements ("Noted.", "ok thanks") are left out, and text Tulving
cannot keep (a NUL byte, a lone surrogate) is shown escaped instead of failing the put.

Every call acts for one user: ``user_id``, else the user the Memory is bound to, else
the LlamaIndex session (its ``session_id``), unless ``shared=True`` lets every session
read the Memory as it is. The blocking Memory calls run on worker threads with nothing
bound to an event loop (LlamaIndex's synchronous ``put``/``get`` run each call on a new
loop).
"""

from __future__ import annotations

import re
import threading
from typing import Any

import anyio.to_thread
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.memory.memory import BaseMemoryBlock

from tulving import AsyncMemory, Memory

#: The most characters of the user's words that form the curation query.
MAX_QUERY = 2000
#: Words that only acknowledge; a message made of them (or an assistant's short reply
#: opening with one) carries nothing worth remembering.
_ACK_WORDS = frozenset("""
ok okay k sure noted got it thanks thank you thx ty great cool nice lovely perfect
understood will do of course no problem sounds good alright all right yes yep yeah
no worries welcome you're youre done fine good awesome sweet hmm ah oh i see makes sense
cute name let me think that's thats right
""".split())
_ACK_OPENING = re.compile(
    r"^\s*(ok(ay)?|sure|noted|got it|thanks?|thank you|great|cool|nice|lovely|perfect|"
    r"understood|will do|of course|no problem|sounds good|alright|you'?re welcome|"
    r"cute|let me think)\b", re.IGNORECASE)
_WORD = re.compile(r"[\w']+")


def is_acknowledgement(role: str, text: str) -> bool:
    """A message that only acknowledges: every word an acknowledgement ("ok thanks!"),
    or, from the assistant, at most six words opening with one ("Noted, turn 9.")."""
    words = [w.lower() for w in _WORD.findall(text)]
    if not words:
        return True
    if all(w in _ACK_WORDS for w in words):
        return True
    return role != "user" and len(words) <= 6 and bool(_ACK_OPENING.match(text))


class TulvingMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory for a LlamaIndex ``Memory``, curated by Tulving into a budget.

    Args:
        memory: a ``tulving.Memory`` or ``AsyncMemory`` (not closed by the block).
        user_id: whose memory the block reads and writes. Default: the user the Memory
            is bound to, else the LlamaIndex ``Memory``'s ``session_id`` (each session
            private to itself). Give a user's sessions the same ``user_id`` to let them
            recall each other.
        shared: read and write the Memory as it is, for every session (a team memory,
            a single-user app).
        token_budget: the most tokens the block's content takes (counted by Tulving's
            tokenizer, ``cl100k_base`` by default, as LlamaIndex counts).
        curate_options: passed to ``Memory.curate`` (``types``, ``tags``, ``weights``,
            ``since``, ``until``).
    """

    name: str = Field(default="TulvingMemory", description="The name of the memory block.")
    memory: Any = Field(description="The tulving.Memory (or AsyncMemory) behind the block.",
                        exclude=True)
    user_id: str | None = Field(default=None, description="Whose memory the block holds.")
    shared: bool = Field(default=False, description="Every session reads the Memory as is.")
    token_budget: int = Field(default=1500, gt=0,
                              description="The most tokens the block's content takes.")
    curate_options: dict[str, Any] = Field(default_factory=dict,
                                           description="More arguments for curate().")

    _views: dict[str, Memory] = PrivateAttr(default_factory=dict)
    _views_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _last_query: str | None = PrivateAttr(default=None)
    _last_user: str | None = PrivateAttr(default=None)

    @field_validator("memory", mode="before")
    @classmethod
    def _check_memory(cls, value: Any) -> Any:
        if not isinstance(value, Memory | AsyncMemory):
            raise ValueError("memory must be a tulving.Memory or tulving.AsyncMemory")
        return value.memory if isinstance(value, AsyncMemory) else value

    def model_post_init(self, context: Any, /) -> None:
        if self.shared and self.user_id is not None:
            raise ValueError("give user_id or shared=True, not both")
        bound = self.memory.identity.user_id
        if self.user_id is not None and bound is not None and self.user_id != bound:
            raise ValueError(f"this Memory acts for user {bound!r}; it cannot act for "
                             f"{self.user_id!r}")

    # whose memory ------------------------------------------------------------------------
    def _for(self, session_id: Any) -> Memory:
        base: Memory = self.memory
        if self.shared:
            return base
        user = self.user_id or base.identity.user_id or (
            session_id if isinstance(session_id, str) and session_id.strip() else None)
        if user is None:
            raise ValueError("whose memory? give the block a user_id, use it inside a "
                             "LlamaIndex Memory (its session_id), or pass shared=True")
        if user == base.identity.user_id:
            return base
        with self._views_lock:
            view = self._views.get(user)
            if view is None:
                view = base.view(agent_id=base.identity.agent_id, user_id=user,
                                 workspace_id=base.identity.workspace_id)
                self._views[user] = view
            return view

    # the block ---------------------------------------------------------------------------
    async def _aget(self, messages: list[ChatMessage] | None = None,
                    **block_kwargs: Any) -> str:
        """The curated block for what the user asked: ``query`` (a keyword LlamaIndex
        passes on from ``Memory.get(..., query=...)``), else the latest user message;
        nothing asked: the cold-start briefing. Empty when the memory holds nothing."""
        memory = self._for(block_kwargs.get("session_id"))
        given = block_kwargs.get("query")
        query = given.strip()[:MAX_QUERY] if isinstance(given, str) and given.strip() \
            else _latest_user_text(messages or [])
        self._last_query, self._last_user = query, memory.identity.user_id
        return await self._curate(memory, query, self.token_budget)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Remember flushed messages (acknowledgements and tool results left out): one
        ``Role: text`` turn each, one transcript, as the user of their session, waiting
        until it is searchable by meaning and its facts are read off. A tool's
        output is the framework's record of a call, not something the user said: kept,
        it would crowd recall with JSON (LlamaIndex's own chat store keeps it)."""
        turns = [f"{_speaker(m)}: {text}" for m in messages
                 if _role(m) != "tool" and (text := _text(m))
                 and not is_acknowledgement(_role(m), text)]
        if not turns:
            return
        memory = self._for(messages[0].additional_kwargs.get("session_id"))
        # wait=True: the flush returns when the turns' vectors and what is read off them
        # are written, so the next get() (the very next turn) can find them by meaning
        await anyio.to_thread.run_sync(
            lambda: memory.remember("\n".join(turns), wait=True))

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Curate again, into what is left of the budget once ``tokens_to_truncate`` are
        given back (None when nothing is left)."""
        if not content:
            return None
        used = self.memory.count_tokens(content)          # tiktoken: microseconds
        budget = used - max(0, tokens_to_truncate)
        if budget <= 0:
            return None
        memory = self._for(self._last_user)
        return await self._curate(memory, self._last_query, budget) or None

    async def _curate(self, memory: Memory, query: str | None, budget: int) -> str:
        options = dict(self.curate_options)
        if not query:
            options.setdefault("mode", "orient")
        block = await anyio.to_thread.run_sync(
            lambda: memory.curate(query or None, token_budget=budget, **options))
        return block.content


def _role(message: ChatMessage) -> str:
    return str(getattr(message.role, "value", message.role))


def _text(message: ChatMessage) -> str:
    """The message's text as Tulving can keep it (NUL shown as ``\\0``, lone surrogates
    replaced)."""
    text = (message.content or "").strip()
    return text.replace("\x00", "\\0").encode("utf-8", "replace").decode("utf-8")


def _speaker(message: ChatMessage) -> str:
    return _role(message).capitalize()


def _latest_user_text(messages: list[ChatMessage]) -> str | None:
    for message in reversed(messages):
        if _role(message) == "user" and (text := _text(message)):
            return text[-MAX_QUERY:]
    return None
