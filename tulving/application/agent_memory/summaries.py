"""End-of-session summaries (ADR-009): a bounded digest that archives, never deletes.

What a summary replaces: the session's own working notes, i.e. episodic entries
(OBSERVATION, EPISODE) that the agent or its tools wrote (``source_type`` agent_run or
tool_output), unpinned and without a key. They are archived with reason ``summarized`` and
stay reachable through ``source_entry_ids``. Everything else stays active: DECISIONs are
kept verbatim (and quoted in the digest), facts, preferences, plans and procedures are
knowledge rather than working notes, and conversation episodes from ``remember()`` are the
record of what others said, which retrieval needs.

Why bounded: a session may hold huge entries (143 KB markers); the digest is at most
``MAX_SUMMARY_CHARS`` whatever the input, with or without an LLM, and without one at most
a quarter of its sources (``tulving.domain.distill``). Why distilled: the turns stay
memories of their own, so a digest that copied them would say everything twice; the
no-LLM digest keeps what was kept on purpose (decisions, facts, preferences, plans) and
of the turns only topics, names, dates and an open question, each line naming its
sources in ``metadata["sources_by_line"]`` (the back-links; ``source_entry_ids`` holds
every entry of the session). Why idempotent: ending,
shutting down and abandoned-session recovery may all reach the same session; a session has
at most one active summary (found by ``metadata.summary_of_session``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.llm_gateway import LLMGateway
from tulving.domain.distill import bounded, distil
from tulving.domain.entry import MemoryEntry
from tulving.domain.extraction_rules import digest_line
from tulving.domain.query import EntryFilter
from tulving.domain.records import SessionRecord
from tulving.domain.types import ArchiveReason, MemoryType, SourceType
from tulving.ports.storage import Archival

MAX_SUMMARY_CHARS = 2_000
#: A session with fewer entries than this gets no summary (nothing worth compressing).
MIN_ENTRIES = 2
ARCHIVED_TYPES = (MemoryType.OBSERVATION, MemoryType.EPISODE)
ARCHIVED_SOURCES = (SourceType.AGENT_RUN, SourceType.TOOL_OUTPUT)
_LLM_INPUT_CHARS = 12_000
_SCHEMA: dict[str, Any] = {
    "title": "session_summary",
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
}

#: ``write(fields, session_id) -> entry``: the Memory's own write path.
Writer = Callable[[dict[str, Any], str], MemoryEntry]


def summarised(entry: MemoryEntry) -> bool:
    """Whether a session summary archives ``entry`` (see module doc)."""
    return (
        entry.type in ARCHIVED_TYPES and entry.source_type in ARCHIVED_SOURCES
        and not entry.pinned and entry.key is None
    )


def session_entries(ctx: MemoryContext, session_id: str) -> list[MemoryEntry]:
    flt = EntryFilter(partitions=ctx.identity.visible_partitions(session_id), session_id=session_id)
    return ctx.storage.query(flt, newest_first=False)


def existing_summary(ctx: MemoryContext, record: SessionRecord) -> MemoryEntry | None:
    if record.summary_id:
        found = ctx.storage.get(record.summary_id)
        if found is not None and found.is_active:
            return found
    flt = EntryFilter(partitions=ctx.identity.visible_partitions(record.id),
                      session_id=record.id, types=(MemoryType.SUMMARY,))
    for entry in ctx.storage.query(flt):
        if entry.metadata.get("summary_of_session") == record.id:
            return entry
    return None


def summarise_session(
    ctx: MemoryContext, llm: LLMGateway, record: SessionRecord, write: Writer, now: datetime
) -> MemoryEntry | None:
    """Write (or find) the summary of ``record``; archive what it replaces."""
    done = existing_summary(ctx, record)
    if done is not None:
        return done
    entries = [e for e in session_entries(ctx, record.id) if e.type is not MemoryType.SUMMARY]
    if len(entries) < MIN_ENTRIES:
        return None
    archived = [e for e in entries if summarised(e)]
    text = _llm_digest(llm, record, entries)
    by_line: list[list[str]] | None = None
    if text is None:
        text, by_line = deterministic_digest(record, entries, archived)
    summary = write(
        {
            "content": text[:MAX_SUMMARY_CHARS],
            "type": MemoryType.SUMMARY,
            "source_type": SourceType.SUMMARY,
            "importance": 0.6,
            "source_entry_ids": [e.id for e in entries],
            "valid_from": record.started_at,
            "tags": ["session-summary"],
            "metadata": {
                "summary_of_session": record.id,
                "goal": record.goal,
                "archived_ids": len(archived),
                "end_reason": record.end_reason,
                "method": "llm" if by_line is None else "rules",
                **({"sources_by_line": by_line} if by_line is not None else {}),
            },
            "dedup": False,
        },
        record.id,
    )
    if archived:
        ctx.storage.archive(
            [Archival(e.id, ArchiveReason.SUMMARIZED, now, superseded_by=summary.id)
             for e in archived]
        )
        if ctx.vectors is not None:
            ctx.vectors.remove([e.id for e in archived])
    return summary


def _llm_digest(
    llm: LLMGateway, record: SessionRecord, entries: Sequence[MemoryEntry]
) -> str | None:
    if llm.llm is None:
        llm.fallback("summary")
        return None
    lines: list[str] = []
    used = 0
    for e in entries:
        line = f"- [{e.type.value}] {digest_line(e.content, 300)}"
        if used + len(line) > _LLM_INPUT_CHARS:
            lines.append(f"- ... {len(entries) - len(lines)} more entries")
            break
        lines.append(line)
        used += len(line)
    messages = [
        {"role": "system", "content": (
            "Summarise an AI agent's work session for its future self in at most 1500 "
            "characters. Quote every DECISION verbatim. Reply as JSON {\"summary\": ...}.")},
        {"role": "user", "content": f"Goal: {record.goal or 'none'}\nEntries:\n" + "\n".join(lines)},
    ]
    reply = llm.complete_json("summary", messages, _SCHEMA, max_tokens=600)
    if not isinstance(reply, dict):
        return None
    text = str(reply.get("summary", "")).strip()
    if not text:
        return None
    decisions = [e for e in entries if e.type is MemoryType.DECISION
                 and digest_line(e.content, 60)[:40] not in text]
    quoted = "".join(f"\nDecision: \"{digest_line(d.content, 300)}\"" for d in decisions)
    return _bounded(text + quoted)


def deterministic_digest(
    record: SessionRecord, entries: Sequence[MemoryEntry], archived: Sequence[MemoryEntry]
) -> tuple[str, list[list[str]]]:
    """The no-LLM digest (``tulving.domain.distill``: what was kept on purpose, then the
    turns' topics, names, dates and open question, never the turns themselves) and, for
    each of its lines, the ids of the memories it comes from."""
    start = record.started_at.strftime("%Y-%m-%d %H:%M")
    header = (f"Session summary{f' (goal: {digest_line(record.goal, 200)})' if record.goal else ''}"
              f", started {start} UTC: {len(entries)} memories, {len(archived)} archived here.")
    lines = distil(entries, header, frozenset(e.id for e in archived))
    text = "\n".join(line.text for line in lines)
    if len(text) > MAX_SUMMARY_CHARS:
        lines = bounded(lines, MAX_SUMMARY_CHARS)
        text = "\n".join(line.text for line in lines)
    return text, [list(line.sources) for line in lines]


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1] + "\u2026"
