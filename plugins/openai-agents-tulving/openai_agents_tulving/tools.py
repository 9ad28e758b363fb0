"""Memory as function tools an agent can call: ``remember``, ``recall``, ``curate``; and
curated memory as dynamic instructions.

The developer fixes what the model may not choose: whose memory it is (``user_id``, or
a function of the run context that names the user), the token budget of ``curate``, the
key prefix under which ``remember`` writes (so a model can supersede its own notes,
never another part of the memory), the most ``recall`` returns and how weak a match it
leaves out. When a call is refused for bad input (a key outside Tulving's grammar, an
unknown type), the model is told why, so it can correct itself; any other failure gives
the SDK's generic tool error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio.to_thread
from agents import Agent, FunctionTool, RunContextWrapper, function_tool
from agents.tool import default_tool_error_function

from tulving import AsyncMemory, Memory, ValidationError

from .users import UserId, UserMemories

MemoryKind = Literal["FACT", "DECISION", "PREFERENCE", "PLAN", "PROCEDURE", "OBSERVATION"]


def _tool_error(ctx: RunContextWrapper[Any], error: Exception) -> str:
    if isinstance(error, ValidationError):
        return f"Refused: {error}"
    return default_tool_error_function(ctx, error)


def memory_tools(memory: Memory | AsyncMemory, *, user_id: UserId | None = None,
                 shared: bool = False, token_budget: int = 1500, key_prefix: str = "agent",
                 recall_limit: int = 10, min_score: float | None = None,
                 tags: tuple[str, ...] = ("openai-agents",)) -> list[FunctionTool]:
    """``[remember, recall, curate]`` over ``memory``, for ``Agent(tools=...)``.

    Args:
        user_id: whose memory the tools read and write: a user id, or a function of the
            run's ``RunContextWrapper`` that returns one (``lambda run:
            run.context["user_id"]``). Not needed when ``memory`` is bound to a user.
        shared: read and write ``memory`` as it is, for every user of the agent.
        token_budget: the most tokens ``curate`` returns (the model cannot change it).
        key_prefix: ``remember`` writes keys under ``<key_prefix>/``.
        recall_limit: the most hits ``recall`` returns.
        min_score: ``recall`` leaves out hits scoring under it (``Memory.search``'s
            ``min_score``).
        tags: tags of every memory ``remember`` writes.
    """
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 1:
        raise ValidationError("token_budget must be a positive integer")
    if isinstance(recall_limit, bool) or not isinstance(recall_limit, int) \
            or not 1 <= recall_limit <= 100:
        raise ValidationError("recall_limit must be an integer in 1..100")
    if min_score is not None and (isinstance(min_score, bool)
                                  or not isinstance(min_score, int | float)):
        raise ValidationError("min_score must be a number or None")
    users = UserMemories(memory, user_id, shared)
    prefix = key_prefix.strip("/")

    @function_tool(failure_error_function=_tool_error)
    async def remember(ctx: RunContextWrapper[Any], content: str, key: str | None = None,
                       type: MemoryKind = "FACT", importance: float = 0.5) -> str:
        """Store something worth remembering across conversations.

        Args:
            content: the memory, one self-contained statement.
            key: a stable name (letters, digits, `. _ : / -`) for something that can
                change, like `user/city`: storing under the same key again replaces the
                old version (which is kept in history). Leave empty for a one-off note.
            type: FACT, DECISION, PREFERENCE, PLAN, PROCEDURE or OBSERVATION.
            importance: 0..1, how much this should count when memories compete for room.
        """
        mem = users.for_run(ctx)
        full_key = f"{prefix}/{key.strip('/')}" if key and prefix else (key or None)

        def write() -> str:
            superseded = bool(full_key) and full_key in mem.list_keys(full_key or "")
            entry = mem.store(content, type=type, key=full_key, tags=list(tags),
                              importance=importance, source_type="agent_run")
            where = f" under key {entry.key}" if entry.key else ""
            replaced = " (replacing the previous version)" if superseded else ""
            return f"Stored {entry.type.name}{where}{replaced}."

        return await anyio.to_thread.run_sync(write)

    @function_tool(failure_error_function=_tool_error)
    async def recall(ctx: RunContextWrapper[Any], query: str, limit: int = 5) -> str:
        """Search memory for what is relevant to the query; returns the best matches.

        Args:
            query: what you are looking for, in plain words.
            limit: how many matches at most.
        """
        mem = users.for_run(ctx)
        hits = await anyio.to_thread.run_sync(
            lambda: mem.search(query, max(1, min(limit, recall_limit)), min_score=min_score))
        if not hits:
            return "No memories match."
        return "\n".join(
            f"- [{h.entry.type.name.lower()}{' · ' + h.entry.key if h.entry.key else ''}"
            f" · {h.score:.2f}] {h.entry.content}" for h in hits)

    @function_tool(failure_error_function=_tool_error)
    async def curate(ctx: RunContextWrapper[Any], query: str) -> str:
        """Gather the memories that matter for a task into one compact briefing.

        Args:
            query: the task or question the briefing is for.
        """
        mem = users.for_run(ctx)
        block = await anyio.to_thread.run_sync(
            lambda: mem.curate(query, token_budget=token_budget))
        return block.content or "Nothing in memory yet."

    return [remember, recall, curate]


def curated_instructions(
    memory: Memory | AsyncMemory, instructions: str, *, user_id: UserId | None = None,
    shared: bool = False, token_budget: int = 1000,
) -> Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]:
    """Dynamic instructions for ``Agent(instructions=...)``: yours, followed by Tulving's
    cold-start briefing of the run's user's memory (``curate(mode="orient")``) in at
    most ``token_budget`` tokens, built again at each run. ``user_id`` and ``shared``
    choose whose memory, as for :func:`memory_tools`."""
    users = UserMemories(memory, user_id, shared)

    async def build(ctx: RunContextWrapper[Any], agent: Agent[Any]) -> str:
        mem = users.for_run(ctx)
        block = await anyio.to_thread.run_sync(
            lambda: mem.curate(mode="orient", token_budget=token_budget))
        if not block.content:
            return instructions
        return f"{instructions}\n\n# What you remember\n{block.content}"

    return build
