"""The MCP tools for an agent's own memory work: remember, profile, consolidate, list,
erase (seed 004's ``/memory`` set beside the basic tools in ``tools``).

Destructive ones ask for what a careless call cannot supply by accident: consolidation
only plans unless ``apply`` is true, and erasure needs the confirmation phrase that
names the subject (``erase user <id>``), as the CLI asks a person to type it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.types import CallToolResult
from pydantic import Field

from tulving.domain.errors import ValidationError
from tulving.interfaces import render
from tulving.interfaces.mcp.answers import entry_ref, plan_facts, plan_text, profile_facts
from tulving.interfaces.mcp.tool_hints import LOWER, STRICT
from tulving.interfaces.mcp.tools import Tags, Types, ok
from tulving.interfaces.render import erase_phrase

if TYPE_CHECKING:
    from tulving.application.memory import Memory

Run = Callable[[Callable[[Any], CallToolResult]], Awaitable[CallToolResult]]
ToolList = list[tuple[Callable[..., Any], str]]


def build_agent_tools(run: Run) -> ToolList:
    async def memory_remember(
        text: Annotated[
            str,
            Field(description="What was said or happened, verbatim: a message or a "
                  "'Speaker: text' transcript.", min_length=1, max_length=200_000),
        ],
        subject: Annotated[
            str | None,
            Field(description="Who 'I'/'my' refers to (default: the user).", max_length=200),
        ] = None,
        wait: Annotated[
            bool,
            Field(description="Answer only once the facts and preferences read off the "
                  "turns are written too (default: answer as soon as the turns are kept)."),
        ] = False,
    ) -> CallToolResult:
        def do(memory: Any) -> CallToolResult:
            entries = memory.remember(text, subject=subject, wait=True if wait else None)
            kinds: dict[str, int] = {}
            for e in entries:
                kinds[e.type.value] = kinds.get(e.type.value, 0) + 1
            summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "nothing new"
            later = "" if wait else (" What is read off the turns (facts, preferences, "
                                     "decisions) follows in the background; memory_stats "
                                     "shows what is left.")
            lines = [f"Remembered: {summary}.{later}", *(render.entry_line(e) for e in entries)]
            return ok("\n".join(lines), {"entries": [entry_ref(e) for e in entries]})

        return await run(do)

    async def memory_profile(
        subject: Annotated[
            str,
            Field(description="The person or thing, e.g. 'user' or a name (any case).",
                  min_length=1, max_length=200),
        ] = "user",
    ) -> CallToolResult:
        def do(memory: Memory) -> CallToolResult:
            profile = memory.profile(subject)
            return ok(profile.text, {"profile": profile_facts(profile)})

        return await run(do)

    async def memory_consolidate(
        apply: Annotated[
            bool,
            STRICT,
            Field(description="False (default): only show the plan. True: merge and archive."),
        ] = False,
        types: Types = None,
        tags: Tags = None,
    ) -> CallToolResult:
        def do(memory: Memory) -> CallToolResult:
            report = memory.consolidate(dry_run=not apply, types=types, tags=tags)
            return ok(plan_text(report, apply), {"report": plan_facts(report),
                                                 "applied": apply})

        return await run(do)

    async def memory_list(
        limit: Annotated[int, STRICT,
                         Field(ge=1, le=200, description="Page size (default 50).")] = 50,
        cursor: Annotated[
            str | None,
            Field(description="next_cursor of the previous page; omit for the first.",
                  max_length=40),
        ] = None,
        types: Types = None,
        tags: Tags = None,
    ) -> CallToolResult:
        def do(memory: Any) -> CallToolResult:
            page = memory.list_entries(limit, cursor, types=types, tags=tags)
            lines = [render.entry_line(e) for e in page.entries] or ["No memories."]
            if page.next_cursor:
                lines.append(f"(more: call memory_list again with cursor={page.next_cursor})")
            data: dict[str, Any] = {"entries": [entry_ref(e) for e in page.entries]}
            if page.next_cursor:
                data["next_cursor"] = page.next_cursor
            return ok("\n".join(lines), data)

        return await run(do)

    async def memory_erase(
        subject: Annotated[
            Literal["user", "agent"],
            LOWER,
            Field(description="'user': every memory of this memory's user, in every "
                  "workspace. 'agent': every memory of this agent in this tenant."),
        ],
        confirm: Annotated[
            str,
            Field(description="Type exactly 'erase user <user_id>' or 'erase agent "
                  "<agent_id>' for this memory's own user or agent.", max_length=600),
        ],
    ) -> CallToolResult:
        def do(memory: Any) -> CallToolResult:
            me = memory.identity
            name = me.user_id if subject == "user" else me.agent_id
            if name is None:
                raise ValidationError("this memory has no user_id: there is no user to erase")
            if confirm != erase_phrase(subject, name):
                raise ValidationError(
                    f"not erased: confirm must be exactly {erase_phrase(subject, name)!r}")
            report = memory.erase(**{f"{subject}_id": name})
            return ok(f"Erased {report.deleted} memories of {subject} {name} for good "
                      f"({report.derived} of them derived from others; subject: "
                      f"{report.subject}).", {"erased": report})

        return await run(do)

    return [
        (memory_remember,
         "Remember what was said: raw conversation text in, each turn kept verbatim and "
         "searchable at once; typed memories (facts, preferences, decisions) are read off "
         "the turns in the background (wait=true to answer after that). Use it after an "
         "exchange worth keeping when you do not want to pick types yourself."),
        (memory_profile,
         "What is known about a person or thing (default: the user): current facts and "
         "preferences, disputed ones marked. Use it before personalising an answer."),
        (memory_consolidate,
         "Tidy memory: merge near-duplicate memories and lift recurring episodes into "
         "facts. Shows the plan unless apply=true; run the plan first."),
        (memory_list,
         "List memories page by page, with or without keys, oldest first. Use it to "
         "browse what is stored; use memory_search to find something."),
        (memory_erase,
         "Erase every memory of this user or this agent for good (not archived: gone). "
         "Only on an explicit request of the person concerned; needs the confirmation "
         "phrase."),
    ]
