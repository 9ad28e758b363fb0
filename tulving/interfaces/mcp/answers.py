"""What an MCP tool answers: prompt-ready text, and structured content that mirrors it
without growing past it.

Why the structured content holds no texts: a client may put both parts of a result in its
model's context, so every byte the structured content repeats is paid twice (a curate of
a 3,000-memory store answered 66 KB of text and 147 KB of structured content, a
consolidation plan 76 bytes of text and 199 KB of structured content). So the rule at this
door: the text carries everything an agent needs (the memories' texts, and the facts about
them: ids, types, keys, dates, scores), and the structured content carries the same facts
as data, by id and in the text's order, but never the memories' texts, which are in the
text block only. ``tests/e2e/test_mcp_inspector.py`` checks that every tool's structured
content is no larger than its text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tulving.application.plumbing.rule_set_source import redact
from tulving.domain.entry import MemoryEntry
from tulving.domain.memory_reports import (
    ConsolidationReport,
    Profile,
    ProfileItem,
    StatsReport,
)
from tulving.domain.query import SearchResult
from tulving.domain.redaction import shown_key, shown_tags
from tulving.interfaces.render import Shown, entry_line, scrub


def entry_ref(entry: MemoryEntry) -> dict[str, Any]:
    """What ``entry_line`` shows of an entry but its text: id, type, key, date, tags and
    archive state (absent ones left out)."""
    ref: dict[str, Any] = {"id": entry.id, "type": entry.type.value,
                           "valid_from": entry.valid_from.date().isoformat()}
    if entry.key:
        ref["key"] = shown_key(entry)
    tags = list(shown_tags(entry))
    if tags:
        ref["tags"] = tags
    if entry.archived_at is not None:
        ref["archived"] = entry.archive_reason.value if entry.archive_reason else "archived"
    result: dict[str, Any] = scrub(ref)
    return result


def entry_brief(entry: MemoryEntry) -> dict[str, Any]:
    """One memory's facts as ``entry_text`` shows them: its reference and the fields
    that differ from a new entry's defaults (its text is in the text)."""
    brief = entry_ref(entry)
    for name, value in _details(entry):
        brief[name] = value
    result: dict[str, Any] = scrub(brief)
    return result


def _details(entry: MemoryEntry) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = [("scope", entry.scope.value),
                                  ("importance", entry.importance)]
    if entry.pinned:
        out.append(("pinned", True))
    for name in ("supersedes", "superseded_by", "entity", "attribute", "value"):
        value = getattr(entry, name)
        if value:
            out.append((name, value))
    if entry.valid_until is not None:
        out.append(("valid_until", entry.valid_until.date().isoformat()))
    if entry.metadata:
        out.append(("metadata", dict(entry.metadata)))
    return out


def entry_text(entry: MemoryEntry) -> str:
    """``entry_line`` and, on a line of its own, every detail ``entry_brief`` carries."""
    details = " · ".join(f"{name}: {_words(value)}" for name, value in _details(entry))
    return Shown(f"{entry_line(entry)}\n    {redact(details)}")


def _words(value: Any) -> str:
    if isinstance(value, dict):
        import json

        return json.dumps(scrub(value), ensure_ascii=False, sort_keys=True, default=str)
    return str(value)


def search_refs(results: Sequence[SearchResult]) -> list[dict[str, Any]]:
    """The hits in rank order: score, match type and reference (texts: in the text)."""
    return [{"score": round(r.score, 6), "match_type": r.match_type, **entry_ref(r.entry)}
            for r in results]


def curated_refs(curated: Any) -> dict[str, Any]:
    """A curated context's facts without its block (the text): the tokens it uses, the
    entries it shows by section, in order, by id (with their score, and how each was
    shown when not in full), how many it left out, and ``mode: orient`` for a briefing
    (which a call without a query gets). What the caller asked (budget, query, a query
    mode) is not repeated."""
    sections: dict[str, list[dict[str, Any]]] = {}
    for item in getattr(curated, "entries", ()) or ():
        entry = getattr(item, "entry", item)
        if isinstance(entry, MemoryEntry):
            shown: dict[str, Any] = {"id": entry.id}
            score = getattr(item, "score", None)
            if isinstance(score, float):
                shown["score"] = round(score, 4)
            disclosure = getattr(item, "disclosure", None)
            if disclosure not in (None, "full"):
                shown["disclosure"] = disclosure
            sections.setdefault(str(getattr(item, "section", None) or "memories"),
                                []).append(shown)
    out: dict[str, Any] = {"token_count": getattr(curated, "token_count", None),
                           "sections": sections}
    if getattr(curated, "mode", None) == "orient":  # a briefing: said, as no query was
        out["mode"] = "orient"
    omitted = getattr(curated, "omitted", 0) or 0
    if omitted:
        out["omitted"] = omitted if isinstance(omitted, int) else len(omitted)
    result: dict[str, Any] = scrub(out)
    return result


def stats_facts(stats: StatsReport) -> dict[str, Any]:
    """What ``render.stats_text`` says, as flat data: the counts, the top tags, the
    storage engine, the adapters, the LLM's use and the background work left (the
    store's path and size, an operator's details, are in the text only)."""
    vectors = stats.vectors
    facts: dict[str, Any] = {
        "agent_id": stats.agent_id, "active": stats.active, "archived": stats.archived,
        "by_type": {k: v for k, v in stats.by_type.items() if v},
        "tags": dict(sorted(stats.tags.items(), key=lambda kv: (-kv[1], kv[0]))[:10]),
        "storage": stats.storage.get("engine"),
        "embedder": stats.embedder, "tokenizer": stats.tokenizer,
        "vectors": vectors.adapter if vectors else None,
        "vector_count": vectors.count if vectors else 0,
        "llm": stats.llm.model, "jobs_pending": stats.llm.jobs_pending}
    if stats.llm.model:
        facts.update(llm_calls=stats.llm.calls, llm_fallbacks=stats.llm.fallbacks)
    backlog = {kind: {state: count for state, count in (("pending", b.pending),
                                                        ("running", b.running),
                                                        ("failed", b.failed)) if count}
               for kind, b in stats.enrichment.tasks.items()}
    backlog = {kind: states for kind, states in backlog.items() if states}
    if backlog:  # the text's "background work" line
        facts["enrichment"] = backlog
    result: dict[str, Any] = scrub(facts)
    return result


def profile_facts(profile: Profile) -> dict[str, Any]:
    """A profile as data without its texts (they are the text): each fact's and
    preference's entry, value, dispute and date; the other knowledge's entries."""

    def item(it: ProfileItem) -> dict[str, Any]:
        return {"id": it.id, "value": it.value, "disputed": it.disputed,
                "since": it.since.date().isoformat()}

    facts: dict[str, Any] = {"subject": profile.subject}
    if profile.facts:
        facts["facts"] = {k: item(v) for k, v in profile.facts.items()}
    if profile.preferences:
        facts["preferences"] = {k: item(v) for k, v in profile.preferences.items()}
    if profile.other:
        facts["other"] = [{"id": it.id, "type": it.type} for it in profile.other]
    if profile.items:  # the text's order (pinned, preferences, facts, the rest)
        facts["items"] = [
            {"id": it.id, "type": it.type, "since": it.since.date().isoformat(),
             **({"pinned": True} if it.pinned else {}),
             **({"evidence": it.evidence} if it.evidence > 1 else {})}
            for it in profile.items
        ]
    result: dict[str, Any] = scrub(facts)
    return result


def plan_text(report: ConsolidationReport, applied: bool) -> str:
    """A consolidation plan a person or an agent can review before ``apply``: each
    cluster's members and merged text, each lifted fact and its episodes."""
    verb = "Merged" if applied else "Would merge"
    lines = [f"{verb} {len(report.clusters)} clusters (similarity at least "
             f"{report.threshold:.2f}); {len(report.semantic)} facts lifted from episodes; "
             f"{report.archived} memories archived."]
    for n, plan in enumerate(report.clusters, 1):
        into = f" into {plan.merged_id}" if plan.merged_id else ""
        lines.append(f"{n}. {plan.type} x{len(plan.ids)} ({plan.method}){into}: "
                     f"{', '.join(plan.ids)}\n    {plan.proposed}")
    for lifted in report.semantic:
        made = f" as {lifted.id}" if lifted.id else ""
        lines.append(f"- lifted {lifted.type}{made} from {', '.join(lifted.source_entry_ids)}"
                     f"\n    {lifted.content}")
    return redact("\n".join(lines))


def plan_facts(report: ConsolidationReport) -> dict[str, Any]:
    """The plan as data: the clusters' members, method and merged entry; the lifted
    facts' episodes and new entry (their texts are in the text)."""
    facts: dict[str, Any] = {"dry_run": report.dry_run, "threshold": report.threshold,
                             "archived": report.archived}
    if report.clusters:
        facts["clusters"] = [{"type": p.type, "ids": list(p.ids), "method": p.method,
                              "merged_id": p.merged_id} for p in report.clusters]
    if report.semantic:
        facts["semantic"] = [{"type": s.type, "source_entry_ids": list(s.source_entry_ids),
                              "id": s.id} for s in report.semantic]
    result: dict[str, Any] = scrub(facts)
    return result
