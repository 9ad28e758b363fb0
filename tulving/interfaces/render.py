"""Turning application results into redacted text and JSON-ready data.

Both interfaces print the same shapes, and every string that leaves the process passes
through ``redact`` here, in one place, so no command or tool can forget it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from tulving.application.plumbing.rule_set_source import redact
from tulving.domain.curated import CuratedContext
from tulving.domain.enrichment import EnrichmentReport
from tulving.domain.entry import MemoryEntry
from tulving.domain.memory_reports import StatsReport
from tulving.domain.query import SearchResult
from tulving.domain.redaction import (
    Shown,
    shown_content,
    shown_key,
    shown_tags,
    shown_value,
)
from tulving.domain.reports import Report


def scrub(value: Any) -> Any:
    """``value`` with every string in it redacted and made JSON-ready (recursively); a
    typed report (``domain.reports``) is sent as its ``as_dict()``."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Report):
        return scrub(value.as_dict())
    if isinstance(value, enum.Enum):
        return scrub(value.value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):  # a key of metadata is shown too
        return {redact(str(k)): scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [scrub(v) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return redact(str(value))


def entry_dict(entry: MemoryEntry, *, raw: bool = False) -> dict[str, Any]:
    data = {
        "id": entry.id,
        "type": entry.type.value,
        "key": entry.key,
        "content": entry.content,
        "tags": list(entry.tags),
        "importance": entry.importance,
        "pinned": entry.pinned,
        "scope": entry.scope.value,
        "agent_id": entry.agent_id,
        "source_type": entry.source_type.value,
        "trust": entry.trust,
        "created_at": entry.created_at,
        "valid_from": entry.valid_from,
        "valid_until": entry.valid_until,
        "access_count": entry.access_count,
        "supersedes": entry.supersedes,
        "superseded_by": entry.superseded_by,
        "archived_at": entry.archived_at,
        "archive_reason": entry.archive_reason.value if entry.archive_reason else None,
        "session_id": entry.session_id,
        "confidence": entry.confidence,
        "review_status": entry.review_status.value,
        "related_to": list(entry.related_to),
        "source_entry_ids": list(entry.source_entry_ids),
        "conflict_ids": list(entry.conflict_ids),
        "entity": entry.entity,
        "attribute": entry.attribute,
        "value": entry.value,
        "metadata": dict(entry.metadata),
    }
    if raw:
        return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in data.items()}
    # the entry's own texts with the masks kept since it was written (no scan), then the
    # rest scrubbed (the texts above pass through it as they are)
    data["content"] = shown_content(entry)
    data["value"] = shown_value(entry)
    data["key"] = shown_key(entry)
    data["tags"] = list(shown_tags(entry))
    result: dict[str, Any] = scrub(data)
    return result


def entry_line(entry: MemoryEntry) -> str:
    """One line: ``[TYPE] key · date · id`` then the content."""
    head = f"[{entry.type.value}]"
    if entry.key:
        head += f" {shown_key(entry)}"
    state = ""
    if entry.archived_at is not None:
        reason = entry.archive_reason.value if entry.archive_reason else "archived"
        state = f" ({reason})"
    date = entry.valid_from.date().isoformat()
    shown = shown_tags(entry)
    tags = f" #{' #'.join(shown)}" if shown else ""
    content = shown_content(entry)
    # every part is shown already (the entry's texts masked, the rest ours)
    return Shown(f"{head} · {date} · {redact(entry.id)}{state}{tags}\n    {content}")


def search_text(query: str, results: Sequence[SearchResult]) -> str:
    if not results:
        return redact(f"No memories match {query!r}.")
    lines = [redact(f"{len(results)} memories for {query!r}:")]
    for i, r in enumerate(results, 1):
        lines.append(f"{i}. ({r.score:.3f} {r.match_type}) {entry_line(r.entry)}")
    return "\n".join(lines)


def search_dicts(results: Sequence[SearchResult]) -> list[dict[str, Any]]:
    return [
        {"score": round(r.score, 6), "match_type": r.match_type, **entry_dict(r.entry)}
        for r in results
    ]


def curated_dict(curated: Any) -> dict[str, Any]:
    """A ``CuratedContext`` as data; fields read by name so a new field does not break it."""
    out: dict[str, Any] = {}
    for name in (
        "content",
        "token_count",
        "token_budget",
        "budget_remaining",
        "sources_consulted",
        "mode",
        "query",
    ):
        if hasattr(curated, name):
            out[name] = getattr(curated, name)
    if isinstance(curated, CuratedContext):
        # the curator built the block from masked texts, keys and its own labels
        out["content"] = Shown(curated.content)
    entries = getattr(curated, "entries", ()) or ()
    out["entries"] = [_curated_item(e) for e in entries]
    omitted = getattr(curated, "omitted", ()) or ()
    out["omitted"] = (
        [_curated_item(e) for e in omitted] if not isinstance(omitted, int) else omitted
    )
    candidates = getattr(curated, "candidates", ()) or ()
    if candidates:
        out["candidates"] = [attrs.asdict(c) for c in candidates]
    result: dict[str, Any] = scrub(out)
    return result


def _curated_item(item: Any) -> Any:
    if isinstance(item, MemoryEntry):
        return {"id": item.id, "type": item.type.value, "key": item.key}
    entry = getattr(item, "entry", None)
    if isinstance(entry, MemoryEntry):
        extra = {
            k: getattr(item, k) for k in ("score", "disclosure", "section") if hasattr(item, k)
        }
        return {"id": entry.id, "type": entry.type.value, "key": entry.key, **extra}
    if isinstance(item, str):
        return item
    return str(item)


def stats_text(stats: StatsReport) -> str:
    """``stats()`` for a person: words and numbers, never a Python dict or list."""
    lines = [f"agent: {stats.agent_id}   active: {stats.active}   archived: {stats.archived}"]
    if stats.by_type:
        counted = [f"{k}={v}" for k, v in stats.by_type.items() if v]
        lines.append("by type: " + (", ".join(counted) or "none"))
    if stats.tags:
        top = sorted(stats.tags.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        lines.append("top tags: " + ", ".join(f"{k}({v})" for k, v in top))
    storage = stats.storage
    if storage:
        size = storage.get("bytes")
        lines.append(
            f"storage: {storage.get('engine')} {storage.get('path', '')}".rstrip()
            + (f" ({human_bytes(size)})" if isinstance(size, int) else "")
        )
    vectors = stats.vectors
    vectors_text = "none" if vectors is None else f"{vectors.adapter} ({vectors.count} vectors)"
    lines.append(
        f"embedder: {stats.embedder or 'none (lexical search only)'}   "
        f"vectors: {vectors_text}   tokenizer: {stats.tokenizer}"
    )
    llm = stats.llm
    if llm.model:
        lines.append(f"llm: {llm.model}, {llm.calls} calls, {llm.fallbacks} fallbacks, "
                     f"{llm.jobs_pending} jobs pending")
    else:
        lines.append(f"llm: none (deterministic paths), {llm.jobs_pending} jobs pending")
    backlog = enrichment_text(stats.enrichment)
    if backlog:
        lines.append(f"background work: {backlog}")
    return redact("\n".join(lines))


def enrichment_text(report: EnrichmentReport) -> str:
    """What background work is left, per kind and state ("" when there is none)."""
    text = ", ".join(f"{kind} {count} {state}" for kind, backlog in report.tasks.items()
                     for state, count in (("pending", backlog.pending),
                                          ("running", backlog.running),
                                          ("failed", backlog.failed)) if count)
    return text if report.durable or not text else text + " (kept in this process only)"


def words(value: Any) -> str:
    """A value as words: mappings as ``k=v, ...``, sequences comma-separated."""
    if isinstance(value, Report):
        return words(value.as_dict())
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={words(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(words(v) for v in value) or "none"
    return str(value)


def omitted_count(curated: Any) -> int:
    """How many memories a curated context left out (a count or a list of them)."""
    omitted = getattr(curated, "omitted", 0) or 0
    return omitted if isinstance(omitted, int) else len(omitted)


def human_bytes(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def erase_phrase(kind: str, name: str) -> str:
    """What a person (CLI) or an agent (MCP) types to confirm erasing ``kind`` (user or
    agent) ``name``: the same phrase at both doors."""
    return f"erase {kind} {name}"
