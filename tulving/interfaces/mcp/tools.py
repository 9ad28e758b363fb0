"""The MCP tools: one per intent, few required arguments, descriptions that say when.

Each tool validates nothing itself beyond what its signature states: the Memory does the
real validation and raises a typed ``TulvingError``, which becomes a tool error
(``is_error``) with that message, so an agent can correct itself and the server keeps
serving. Each result carries context-ready text and the same facts as structured
content; both are redacted (see ``render``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.types import CallToolResult, TextContent
from pydantic import Field

from tulving.application.plumbing.rule_set_source import redact
from tulving.domain.errors import NotFoundError, NotVisibleError, TulvingError, ValidationError
from tulving.domain.input_limits import MIN_SCORE, QUERY, TOKEN_BUDGET, TOP_K
from tulving.interfaces import render
from tulving.interfaces.mcp.answers import (
    curated_refs,
    entry_brief,
    entry_text,
    search_refs,
    stats_facts,
)
from tulving.interfaces.mcp.service import MemoryService
from tulving.interfaces.mcp.tool_hints import LOWER, STRICT, UPPER

if TYPE_CHECKING:
    from tulving.application.memory import Memory

MemoryTypeName = Annotated[
    Literal["FACT", "DECISION", "OBSERVATION", "PLAN", "SUMMARY", "PREFERENCE", "PROCEDURE",
            "EPISODE"],
    UPPER,
]
ScopeName = Annotated[
    Literal["agent", "session", "personal", "shared", "workspace", "model_specific"], LOWER]
Types = Annotated[
    list[MemoryTypeName] | None, Field(description="Only these memory types (default: all).")
]
Tags = Annotated[list[str] | None, Field(description="Only memories with any of these tags.")]
IdOrKey = Annotated[
    str,
    Field(
        description="The memory's id (from a previous result) or its key.",
        min_length=1,
        max_length=300,
    ),
]


def ok(text: str, data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=redact(text))], structured_content=render.scrub(data)
    )


def error(exc: BaseException) -> CallToolResult:
    if isinstance(exc, NotVisibleError):  # as a missing id: ids elsewhere cannot be probed
        exc = NotFoundError(exc.as_missing)
    kind = type(exc).__name__
    return failure(kind, redact(f"{kind}: {exc}"))


def failure(kind: str, message: str) -> CallToolResult:
    """A tool error: the message in the text, its kind as data (the text holds both)."""
    return CallToolResult(content=[TextContent(type="text", text=message)],
                          structured_content={"error": {"type": kind}}, is_error=True)


def _parse_time(name: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ValidationError(
            f"{name} must be an ISO-8601 date or datetime, got {value!r}"
        ) from exc
    if parsed.tzinfo is None:
        from datetime import UTC

        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def runner(service: MemoryService) -> Callable[[Callable[[Any], CallToolResult]], Any]:
    """``run(fn)``: call ``fn(memory)`` through ``service``, a TulvingError becoming a
    tool error the agent can read and correct."""

    async def run(fn: Callable[[Any], CallToolResult]) -> CallToolResult:
        try:
            return await service.call(fn)
        except TulvingError as exc:
            return error(exc)

    return run


def build_tools(service: MemoryService) -> list[tuple[Callable[..., Any], str]]:
    """(async tool function, description) pairs bound to ``service``."""
    run = runner(service)

    async def memory_store(
        content: Annotated[
            str, Field(description="The memory itself, as a self-contained sentence or paragraph.")
        ],
        type: Annotated[
            MemoryTypeName,
            Field(
                description="FACT (true about the world/project), DECISION (a choice and why; never decays), OBSERVATION (something seen now), PLAN, PREFERENCE (how the user likes things), PROCEDURE (how to do something), EPISODE (what happened), SUMMARY."
            ),
        ],
        key: Annotated[
            str | None,
            Field(
                description="Optional stable name like 'deploy/strategy'. Storing again with the same key supersedes the old version (kept in history)."
            ),
        ] = None,
        tags: Annotated[
            list[str] | None, Field(description="Optional labels for filtering.")
        ] = None,
        importance: Annotated[
            float | None, STRICT, Field(ge=0, le=1, description="0..1, default 0.5.")
        ] = None,
        pinned: Annotated[
            bool | None, STRICT,
            Field(description="Pinned memories never decay or get evicted. Storing a key "
                  "again keeps its tags, importance, pinned flag and metadata unless given."),
        ] = None,
        valid_from: Annotated[
            str | None,
            Field(description="ISO date or datetime when this became true or happened "
                  "(default: now).", max_length=40),
        ] = None,
        metadata: Annotated[
            dict[str, Any] | None,
            Field(description="Optional JSON object kept with the memory (small).")
        ] = None,
        scope: Annotated[
            ScopeName,
            Field(description="Who may read it: agent (default, only you), session, personal "
                  "(every agent of this user), shared or workspace (every agent here), "
                  "model_specific."),
        ] = "agent",
    ) -> CallToolResult:
        def do(memory: Any) -> CallToolResult:
            extra: dict[str, Any] = {"scope": scope}
            if importance is not None:
                extra["importance"] = importance
            if valid_from is not None:
                extra["valid_from"] = _parse_time("valid_from", valid_from)
            if metadata is not None:
                extra["metadata"] = metadata
            done = memory.store(
                content, type=type, key=key, tags=tags, pinned=pinned, report=True, **extra
            )
            entry = done.entry
            if done.outcome == "reinforced":
                said = entry.metadata.get("evidence", {}).get("count", 2)
                return ok(f"Reinforced {entry.type.value} {entry.id}: it restates what was "
                          f"already known (said {said} times); no new memory "
                          f"(outcome: reinforced):\n{entry_text(entry)}",
                          {"stored": entry_brief(entry), **done.as_dict()})
            note = f" (supersedes {entry.supersedes})" if entry.supersedes else ""
            superseded = (f", superseded: {done.superseded}" if done.superseded else "")
            return ok(
                f"Stored {entry.type.value} {entry.id}{note} (outcome: {done.outcome}"
                f"{superseded}):\n{entry_text(entry)}",
                {"stored": entry_brief(entry), **done.as_dict()},
            )

        return await run(do)

    async def memory_get(id_or_key: IdOrKey) -> CallToolResult:
        def do(memory: Any) -> CallToolResult:
            entry = memory.get(id_or_key)
            return ok(f"Memory {entry.id}, in full:\n{entry_text(entry)}",
                      {"entry": entry_brief(entry)})

        return await run(do)

    async def memory_search(
        query: Annotated[
            str,
            Field(
                description="What you are looking for, in plain words.",
                min_length=QUERY.low,
                max_length=QUERY.high,
            ),
        ],
        top_k: Annotated[
            int, STRICT, Field(ge=TOP_K.low, le=TOP_K.high,
                               description="How many results (default 10).")
        ] = 10,
        types: Types = None,
        tags: Tags = None,
        mode: Annotated[
            Literal["hybrid", "semantic", "lexical", "key"],
            LOWER,
            Field(description="hybrid (default) combines meaning and exact words."),
        ] = "hybrid",
        min_score: Annotated[
            float | None,
            STRICT,
            Field(ge=MIN_SCORE.low, le=MIN_SCORE.high, description=(
                "Only results scoring at least this. In hybrid mode a score is a "
                "calibrated probability that the memory answers the query, comparable "
                "across queries: 0.04 keeps about 80% of answers and drops about 60% of "
                "the hits of questions whose answer is not stored.")),
        ] = None,
    ) -> CallToolResult:
        def do(memory: Any) -> CallToolResult:
            results = memory.search(query, top_k, mode=mode, types=types, tags=tags,
                                    min_score=min_score)
            return ok(render.search_text(query, results), {"results": search_refs(results)})

        return await run(do)

    async def memory_curate(
        query: Annotated[
            str | None,
            Field(description="The task at hand. Omit it for the briefing (mode='orient').",
                  max_length=QUERY.high),
        ] = None,
        token_budget: Annotated[
            int,
            STRICT,
            Field(
                ge=TOKEN_BUDGET.low,
                le=TOKEN_BUDGET.high,
                description="Hard cap on the returned context's tokens (default 2000).",
            ),
        ] = 2000,
        mode: Annotated[
            Literal["query", "orient"] | None,
            LOWER,
            Field(
                description="'query' (the default with a query): memories relevant to `query`. 'orient' (the default without one): a cold-start briefing (what is known about the user, pinned memories, decisions, plans, procedures, recent sessions and turns) when starting or resuming work."
            ),
        ] = None,
        types: Types = None,
        tags: Tags = None,
        since: Annotated[
            str | None, Field(description="ISO date: only memories valid from this time on.")
        ] = None,
        until: Annotated[
            str | None, Field(description="ISO date: only memories valid up to this time.")
        ] = None,
    ) -> CallToolResult:
        def do(memory: Any) -> CallToolResult:
            if mode == "query" and not query:
                raise ValidationError("memory_curate(mode='query') needs a query; omit the "
                                      "query (or use mode='orient') for the briefing")
            curated = memory.curate(
                query,
                token_budget=token_budget,
                mode=mode,
                types=types,
                tags=tags,
                since=_parse_time("since", since),
                until=_parse_time("until", until),
            )
            return ok(curated.content or "(no memories to show)", curated_refs(curated))

        return await run(do)

    async def memory_forget(id_or_key: IdOrKey) -> CallToolResult:
        def do(memory: Any) -> CallToolResult:
            entry = memory.forget(id_or_key)
            return ok(f"Forgot {entry.id} (archived; its history is kept):\n"
                      f"{entry_text(entry)}", {"forgotten": entry_brief(entry)})

        return await run(do)

    async def memory_list_keys(
        prefix: Annotated[
            str, Field(description="Only keys starting with this, e.g. 'deploy/'.", max_length=200)
        ] = "",
    ) -> CallToolResult:
        def do(memory: Any) -> CallToolResult:
            keys = memory.list_keys(prefix)
            under = f" under {prefix!r}" if prefix else ""
            text = (f"{len(keys)} key(s) stored{under}:\n" + "\n".join(f"- {k}" for k in keys)
                    if keys else f"No keys{under}.")
            return ok(text, {"keys": keys})

        return await run(do)

    async def memory_correct(
        id_or_key: IdOrKey,
        content: Annotated[
            str, Field(description="The corrected memory, complete (it replaces the old text).")
        ],
        reason: Annotated[
            str | None, Field(description="Why the old version was wrong.", max_length=2000)
        ] = None,
    ) -> CallToolResult:
        def do(memory: Any) -> CallToolResult:
            entry = correct(memory, id_or_key, content, reason)
            return ok(f"Corrected: {entry.id} now supersedes {entry.supersedes}:\n"
                      f"{entry_text(entry)}", {"corrected": entry_brief(entry)})

        return await run(do)

    async def memory_stats() -> CallToolResult:
        def do(memory: Memory) -> CallToolResult:
            stats = memory.stats()
            return ok(render.stats_text(stats), {"stats": stats_facts(stats)})

        return await run(do)

    return [
        (
            memory_store,
            "Store a memory — a fact, decision, observation, plan, preference or "
            "procedure — that you or a later session will need. Use it when you learn something "
            "durable about the user or project, make a decision, or finish a step. Give a key "
            "to keep one current version of a changing fact.",
        ),
        (
            memory_get,
            "Fetch one memory by its id or key, in full. Use it when you know exactly "
            "which memory you need (a key like 'deploy/strategy' or an id from a search).",
        ),
        (
            memory_search,
            "Search memories by meaning and words; returns ranked matches with "
            "scores. Use it to look something up before answering or acting.",
        ),
        (
            memory_curate,
            "Build a prompt-ready context of the most useful memories that fits a "
            "token budget. Call it with no query (mode='orient') at the start of a session, "
            "after a break or when you do not yet know what to ask: it briefs you on the user (their "
            "preferences and facts), pinned memories, decisions, plans, procedures and recent "
            "sessions. Use a query when starting a specific task.",
        ),
        (
            memory_forget,
            "Forget a memory that is wrong or no longer wanted (it is archived, "
            "not destroyed). To fix a memory instead, use memory_correct.",
        ),
        (
            memory_list_keys,
            "List the keys of stored memories, optionally under a prefix. Use "
            "it to see which named facts exist before storing or fetching one.",
        ),
        (
            memory_correct,
            "Correct a memory that turned out wrong: the new content supersedes "
            "the old one (by id or key), keeping the history chain. Use it instead of storing "
            "a contradicting memory.",
        ),
        (
            memory_stats,
            "Counts of memories by type and tag, storage size and adapters. Use it "
            "to see what this memory holds.",
        ),
    ]


def correct(memory: Any, id_or_key: str, content: str, reason: str | None) -> Any:
    """``Memory.correct``; a reason is kept in the correction's metadata."""
    fields: dict[str, Any] = {}
    if reason:
        current = memory.get(id_or_key)
        fields["metadata"] = {**dict(current.metadata), "correction_reason": reason}
    return memory.correct(id_or_key, content, **fields)


def allowed_arguments(fn: Callable[..., Any]) -> frozenset[str]:
    return frozenset(inspect.signature(fn).parameters)


def names(tools: Sequence[tuple[Callable[..., Any], str]]) -> list[str]:
    return [fn.__name__ for fn, _ in tools]
