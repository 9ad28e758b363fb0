"""``TulvingMemory``: a Pydantic AI capability that gives an agent a memory of each user.

A capability is Pydantic AI's unit of reusable agent behaviour (instructions, tools and
run hooks together), so one ``capabilities=[TulvingMemory(memory, user_id=...)]`` does
what a memory needs, for the user the run is for:

- **instructions**: before each run, the memories that matter for the run's prompt,
  curated by Tulving into at most ``token_budget`` tokens (no prompt: the cold-start
  briefing), so the model starts from what it knows;
- **tools**: ``remember`` (keep a fact, under a key to replace an older one), ``recall``
  (search), ``curate`` (a budgeted block for a question the model asks itself);
- **after the run**: the run's user prompts and model replies are kept as episodes of
  that user, once each, in one transaction, so the next run (any door: the CLI, MCP,
  HTTP) finds them.

Tulving is synchronous (SQLite, the embedding model): every call runs on a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.run import AgentRunResult
from pydantic_ai.toolsets import FunctionToolset

from tulving import ContentError, KeyFormatError, Memory, ValidationError

from .users import UserId, UserMemories

#: Metadata field of the episodes this package writes.
META = "pydantic_ai"
#: The most characters of text one episode carries (Tulving keeps at most 100,000).
PART = 40_000
PREAMBLE = "What you remember about this user (from earlier conversations):"


@dataclass
class TulvingMemory(AbstractCapability[Any]):
    """Memory of each user for an agent (see the module docstring).

    Args:
        memory: the ``tulving.Memory`` (not closed by the capability).
        user_id: whose memory a run reads and writes: a user id, or a function of the
            run's ``RunContext`` (``lambda ctx: ctx.deps.user_id``). Without it, a Memory
            bound to a user acts for that user; any other Memory needs ``shared=True``.
        shared: read and write ``memory`` as it is, for every user (a team's memory).
        token_budget: the most tokens the instructions' memory block (and ``curate``'s
            default) may take.
        tools: add the ``remember`` / ``recall`` / ``curate`` tools.
        record: keep each run's prompts and replies as the user's episodes.
        min_score: ``recall`` leaves out hits scoring under it (``Memory.search``'s).
    """

    memory: Memory
    user_id: UserId | None = None
    shared: bool = False
    token_budget: int = 500
    tools: bool = True
    record: bool = True
    min_score: float | None = None
    _users: UserMemories = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.token_budget, bool) or not isinstance(self.token_budget, int) \
                or self.token_budget < 1:
            raise ValidationError(f"token_budget must be a positive integer, "
                                  f"got {self.token_budget!r}")
        for name in ("tools", "record"):
            if not isinstance(getattr(self, name), bool):
                raise ValidationError(f"{name} must be True or False")
        if self.min_score is not None and (isinstance(self.min_score, bool)
                                           or not isinstance(self.min_score, int | float)):
            raise ValidationError("min_score must be a number or None")
        self._users = UserMemories(self.memory, self.user_id, self.shared)

    def for_user(self, ctx: RunContext[Any]) -> Memory:
        """The Memory the run whose context is ``ctx`` reads and writes."""
        return self._users.for_run(ctx)

    # AbstractCapability ------------------------------------------------------------------
    def get_instructions(self) -> Any:
        async def remembered(ctx: RunContext[Any]) -> str:
            mine = self.for_user(ctx)
            query = _prompt_text(ctx.prompt) or None
            block = await asyncio.to_thread(mine.curate, query, token_budget=self.token_budget)
            return f"{PREAMBLE}\n{block.content}" if block.entries else ""
        return remembered

    def get_toolset(self) -> FunctionToolset[Any] | None:
        return _toolset(self) if self.tools else None

    async def after_run(self, ctx: RunContext[Any], *,
                        result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        if self.record:
            batch = _episodes(result.new_messages(), ctx.run_id, ctx.conversation_id)
            if batch:
                await asyncio.to_thread(self.for_user(ctx).store_many, batch)
        return result

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None                              # holds a Memory: not spec-serializable


def _toolset(capability: TulvingMemory) -> FunctionToolset[Any]:
    toolset: FunctionToolset[Any] = FunctionToolset()

    @toolset.tool
    async def remember(ctx: RunContext[Any], text: str, key: str | None = None) -> str:
        """Keep a fact about the user for later conversations. Give a key (such as
        "diet" or "home/city") to replace what was kept under it before."""
        mine = capability.for_user(ctx)
        try:
            await asyncio.to_thread(mine.store, text, type="FACT",
                                    key=f"pydantic-ai/{key}" if key else None)
        except (ValidationError, ContentError, KeyFormatError) as exc:
            raise ModelRetry(str(exc)) from None
        return "Remembered."

    @toolset.tool
    async def recall(ctx: RunContext[Any], query: str, limit: int = 5) -> list[str]:
        """Search what is known about the user; the best matches first."""
        mine = capability.for_user(ctx)
        hits = await asyncio.to_thread(mine.search, query, max(1, min(limit, 20)),
                                       min_score=capability.min_score)
        return [h.entry.content for h in hits]

    @toolset.tool
    async def curate(ctx: RunContext[Any], query: str, token_budget: int | None = None) -> str:
        """What matters about the user for a question, packed into a token budget."""
        mine = capability.for_user(ctx)
        budget = max(1, min(token_budget or capability.token_budget, 4 * capability.token_budget))
        block = await asyncio.to_thread(mine.curate, query or None, token_budget=budget)
        return block.content

    return toolset


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence):
        return " ".join(p for p in prompt if isinstance(p, str))
    return ""


def _episodes(messages: Sequence[ModelMessage], run_id: str | None,
              conversation_id: str | None) -> list[dict[str, Any]]:
    """The ``store_many`` fields of a run's new prompts and replies (tool calls and their
    results are the run's mechanics, not memories)."""
    batch: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if isinstance(message, ModelRequest):
            role = "user"
            texts = [_prompt_text(p.content) for p in message.parts
                     if isinstance(p, UserPromptPart)]
        elif isinstance(message, ModelResponse):
            role = "assistant"
            texts = [p.content for p in message.parts if isinstance(p, TextPart)]
        else:
            continue
        text = "\n".join(t for t in texts if t and t.strip()).replace("\x00", " ")
        if not text:
            continue
        run = message.run_id or run_id
        for part in range(0, len(text), PART):
            key = f"pydantic-ai/{run}/{index}" + (f"/{part // PART}" if part else "") \
                if run else None
            batch.append({"content": f"{role}: {text[part:part + PART]}", "type": "EPISODE",
                          "key": key, "dedup": False,
                          "metadata": {META: {"role": role, "run_id": run,
                                              "conversation_id": conversation_id}}})
    return batch
