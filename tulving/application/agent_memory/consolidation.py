"""Consolidation: merge near-duplicate memories, and turn recurring episodes into knowledge.

Clustering is greedy leader clustering over the stored vectors (no re-embedding): entries
in creation order join the first cluster of the same type whose leader has cosine >=
``CLUSTER_THRESHOLD`` (0.90: below the write-time UPDATE threshold of 0.95, so it catches
paraphrases that write-time dedup let through, above the 0.85 conflict threshold). Each
cluster of two or more becomes one entry (an LLM merge when one is configured and answers,
else the newest text kept verbatim) with ``source_entry_ids`` naming the originals, which
are archived with reason ``consolidated``. DECISIONs, SUMMARYs, EPISODEs, pinned and keyed
entries are not merged unless ``types`` asks for them (decisions are kept verbatim; keys
and structured facts have their own supersede rules).

Episodic -> semantic (seed 004): the same structured fact (entity, attribute, value) found
by the extraction rules in at least ``RECURRENCE`` episodes, or the same normalised
statement in that many episodes, yields a PREFERENCE or FACT entry linked to the episodes,
unless it is already known. Episodes stay active: they are the record, the new entry the
knowledge. ``dry_run=True`` (the default) returns the plan and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import attrs
import numpy as np

from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.llm_gateway import LLMGateway
from tulving.domain.entry import MemoryEntry, content_hash
from tulving.domain.extraction_rules import Turn, extract_candidates, normalise_statement
from tulving.domain.memory_reports import ConsolidationReport, LiftedKnowledge, MergePlan
from tulving.domain.query import EntryFilter
from tulving.domain.types import ArchiveReason, MemoryType, SourceType
from tulving.ports.storage import Archival

CLUSTER_THRESHOLD = 0.90
RECURRENCE = 2
MAX_CANDIDATES = 10_000
DEFAULT_TYPES = (MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.OBSERVATION,
                 MemoryType.PLAN, MemoryType.PROCEDURE)
_MERGE_SCHEMA: dict[str, Any] = {
    "title": "merged_memory", "type": "object",
    "properties": {"content": {"type": "string"}}, "required": ["content"],
}

Writer = Callable[[dict[str, Any]], MemoryEntry]


def _own(ctx: MemoryContext, types: Sequence[MemoryType], tags: Sequence[str] | None
         ) -> list[MemoryEntry]:
    flt = EntryFilter(partitions=ctx.visible_partitions(), types=tuple(types),
                      tags=tuple(tags) if tags else None)
    entries = ctx.storage.query(flt, limit=MAX_CANDIDATES, newest_first=True)
    return [e for e in reversed(entries) if e.agent_id == ctx.identity.agent_id]


def find_clusters(ctx: MemoryContext, entries: Sequence[MemoryEntry],
                  threshold: float = CLUSTER_THRESHOLD) -> list[list[MemoryEntry]]:
    pool = [e for e in entries if not e.pinned and e.key is None and e.entity is None]
    vectors = ctx.storage.vectors_for([e.id for e in pool])
    leaders: dict[MemoryType, list[tuple[np.ndarray, list[MemoryEntry]]]] = {}
    for entry in pool:
        vector = vectors.get(entry.id)
        if vector is None:
            continue
        v = np.asarray(vector, dtype=np.float32).reshape(-1)
        groups = leaders.setdefault(entry.type, [])
        for leader, members in groups:
            if members[0].partition == entry.partition and float(leader @ v) >= threshold:
                members.append(entry)
                break
        else:
            groups.append((v, [entry]))
    return [m for groups in leaders.values() for _, m in groups if len(m) >= 2]


def _merge_text(llm: LLMGateway, members: Sequence[MemoryEntry], use_llm: bool) -> tuple[str, str]:
    newest = max(members, key=lambda e: e.created_at)
    if use_llm:
        if llm.llm is None:
            llm.fallback("consolidation")
        else:
            listing = "\n".join(f"- {m.content[:1000]}" for m in members)
            reply = llm.complete_json("consolidation", [
                {"role": "system", "content": (
                    "Merge these memories of one AI agent into one self-contained memory that "
                    "keeps every distinct detail; prefer the newest where they disagree. Reply "
                    "as JSON {\"content\": ...}.")},
                {"role": "user", "content": listing},
            ], _MERGE_SCHEMA, max_tokens=500)
            if isinstance(reply, dict) and isinstance(reply.get("content"), str) \
                    and reply["content"].strip():
                return reply["content"].strip()[:20_000], "llm"
    return newest.content, "keep-newest"


def recurring_knowledge(ctx: MemoryContext, subject: str) -> list[dict[str, Any]]:
    """Semantic entries that recurring episodes support and that are not yet known."""
    episodes = _own(ctx, (MemoryType.EPISODE,), None)
    facts: dict[tuple[str, str, str], list[MemoryEntry]] = {}
    proto: dict[tuple[str, str, str], Any] = {}
    statements: dict[str, list[MemoryEntry]] = {}
    for ep in episodes:
        speaker = ep.metadata.get("speaker")
        text = ep.content
        if isinstance(speaker, str) and text.startswith(f"{speaker}: "):
            text = text[len(speaker) + 2:]
        seen: set[tuple[str, str, str]] = set()
        for cand in extract_candidates(Turn(speaker if isinstance(speaker, str) else None, text),
                                       subject):
            if cand.entity is None or cand.attribute is None:
                continue
            key = (cand.entity.casefold(), cand.attribute.casefold(),
                   normalise_statement(cand.value or ""))
            if key not in seen:
                seen.add(key)
                facts.setdefault(key, []).append(ep)
                proto.setdefault(key, cand)
        norm = normalise_statement(text)
        if len(norm.split()) >= 3:
            statements.setdefault(norm, []).append(ep)
    visible = ctx.visible_partitions()
    out: list[dict[str, Any]] = []
    for key, eps in facts.items():
        if len(eps) < RECURRENCE:
            continue
        cand = proto[key]
        known = ctx.storage.query(EntryFilter(partitions=visible, entity=cand.entity,
                                              attribute=cand.attribute), limit=5)
        if any(normalise_statement(k.value or "") == key[2] for k in known):
            continue
        out.append({"type": cand.type, "content": cand.content, "entity": cand.entity,
                    "attribute": cand.attribute, "value": cand.value,
                    "source_entry_ids": [e.id for e in eps]})
    covered = {i for item in out for i in item["source_entry_ids"]}
    for eps in statements.values():
        if len(eps) < RECURRENCE or all(e.id in covered for e in eps):
            continue
        newest = max(eps, key=lambda e: e.created_at)
        text = f"Recurring ({len(eps)} episodes): {newest.content}"
        if ctx.storage.count(EntryFilter(partitions=visible, content_hash=content_hash(text))):
            continue
        out.append({"type": MemoryType.FACT, "content": text, "entity": None,
                    "attribute": None, "value": None,
                    "source_entry_ids": [e.id for e in eps]})
    return out


def consolidate(
    ctx: MemoryContext,
    llm: LLMGateway,
    write: Writer,
    now: datetime,
    *,
    dry_run: bool,
    types: Sequence[MemoryType] | None,
    tags: Sequence[str] | None,
    subject: str,
) -> ConsolidationReport:
    chosen = tuple(types) if types else DEFAULT_TYPES
    clusters = find_clusters(ctx, _own(ctx, chosen, tags))
    plans: list[MergePlan] = []
    lifted: list[LiftedKnowledge] = []
    archived = 0
    for members in clusters:
        text, method = _merge_text(llm, members, use_llm=not dry_run)
        item = MergePlan(members[0].type.value, tuple(m.id for m in members), text,
                         method if not dry_run else
                         ("llm" if llm.available else "keep-newest"))
        if not dry_run:
            merged = write({
                "content": text, "type": members[0].type,
                "tags": sorted({t for m in members for t in m.tags})[:32],
                "importance": max(m.importance for m in members),
                "confidence": max(m.confidence for m in members),
                "valid_from": min(m.valid_from for m in members),
                "source_entry_ids": [m.id for m in members],
                "source_type": SourceType.SUMMARY,
                "metadata": {"consolidated_from": len(members), "merge": method},
                "dedup": False,
            })
            ctx.storage.archive([Archival(m.id, ArchiveReason.CONSOLIDATED, now,
                                          superseded_by=merged.id) for m in members])
            if ctx.vectors is not None:
                ctx.vectors.remove([m.id for m in members])
            item = attrs.evolve(item, merged_id=merged.id)
            archived += len(members)
        plans.append(item)
    if types is None or MemoryType.EPISODE in chosen or MemoryType.FACT in chosen \
            or MemoryType.PREFERENCE in chosen:
        for fields in recurring_knowledge(ctx, subject):
            entry_fields = {k: v for k, v in fields.items() if v is not None}
            shown = LiftedKnowledge(fields["type"].value, fields["content"],
                                    tuple(fields["source_entry_ids"]), fields["entity"],
                                    fields["attribute"], fields["value"])
            if not dry_run:
                entry = write({**entry_fields, "source_type": SourceType.SUMMARY,
                               "importance": 0.6,
                               "metadata": {"from_episodes": len(fields["source_entry_ids"])}})
                shown = attrs.evolve(shown, id=entry.id)
            lifted.append(shown)
    return ConsolidationReport(dry_run, CLUSTER_THRESHOLD, tuple(plans), tuple(lifted),
                               archived)
