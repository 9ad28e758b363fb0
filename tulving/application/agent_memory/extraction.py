"""``remember(text)``: raw conversation text in, typed memories out.

Every turn is kept verbatim whatever else happens (as an EPISODE; without an LLM, a turn
the rules recognise as a decision, procedure or plan keeps its text and takes that type),
so retrieval over the raw conversation never depends on extraction quality. On top of that,
typed memories come from the LLM with a JSON schema when one is configured and answers,
else from the deterministic rules in ``tulving.domain.extraction_rules`` (structured
preferences and facts with entity/attribute/value). A chunk whose LLM call fails (timeout, HTTP 500,
malformed JSON, budget spent) falls back to the rules for that chunk only, with one warning.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import attrs

from tulving.application.plumbing import deadline
from tulving.application.plumbing.llm_gateway import LLMGateway
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ValidationError
from tulving.domain.extraction_rules import (
    Candidate,
    Turn,
    extract_candidates,
    split_sentences,
    split_turns,
    subject_of,
)
from tulving.domain.types import MemoryType, SourceType
from tulving.domain.validation import MAX_CONTENT_CHARS

MAX_REMEMBER_CHARS = 2_000_000
#: Field of an extracted item naming the turns (indices into the episodes) it came from.
SOURCE_TURNS = "_source_turns"
#: Transcript characters per LLM extraction call.
LLM_CHUNK_CHARS = 6_000
EXTRACTED_TYPES = ("PREFERENCE", "FACT", "DECISION", "PROCEDURE", "PLAN")
EPISODE_IMPORTANCE = 0.4
_TURN_TYPES = (MemoryType.DECISION, MemoryType.PROCEDURE, MemoryType.PLAN)
#: Candidates read off one sentence: in a long turn they become entries of their own.
_SENTENCE_TYPES = (MemoryType.DECISION, MemoryType.PLAN)
#: A turn up to this long (or of at most two sentences and ``SHORT_TWO_SENTENCES_CHARS``)
#: is what it decides or plans.
SHORT_TURN_CHARS = 300
SHORT_TWO_SENTENCES_CHARS = 500
#: Importance of a turn that is itself a decision, procedure or plan.
PROMOTED_IMPORTANCE = 0.6

EXTRACTION_SCHEMA: dict[str, Any] = {
    "title": "extracted_memories",
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    # no enum: one odd item must not discard a whole reply (it is dropped)
                    "type": {"type": "string"},
                    "content": {"type": "string"},
                    "entity": {"type": ["string", "null"]},
                    "attribute": {"type": ["string", "null"]},
                    "value": {"type": ["string", "null"]},
                    "importance": {"type": ["number", "null"]},
                },
                "required": ["type", "content"],
            },
        }
    },
    "required": ["memories"],
}

_SYSTEM = (
    "You extract durable memories from a conversation for an AI agent. Return JSON "
    '{"memories": [...]}, each item with "type" (one of PREFERENCE, FACT, DECISION, '
    "PROCEDURE, PLAN), a self-contained third-person \"content\" naming who it is about, and "
    'for preferences and facts "entity" (the person or thing), "attribute" and "value". '
    "Extract at most 8 items per request; extract nothing that is small talk."
)


def check_text(text: object) -> str:
    if not isinstance(text, str):
        raise ValidationError(f"remember() takes text (str), got {type(text).__name__}")
    if not text.strip():
        raise ValidationError("remember() needs non-empty text")
    if len(text) > MAX_REMEMBER_CHARS:
        raise ValidationError(f"remember() text is over {MAX_REMEMBER_CHARS} characters")
    return text


def extract_fields(
    llm: LLMGateway,
    text: str,
    *,
    source_type: SourceType,
    valid_from: datetime | None,
    subject: str,
) -> list[dict[str, Any]]:
    """``store`` fields for every episode and extracted memory of ``text``, in order."""
    turns = split_turns(text)
    fields = turn_fields(turns, source_type=source_type, valid_from=valid_from)
    promoted, derived = read_off(llm, turns, subject=subject, source_type=source_type,
                                 valid_from=valid_from)
    for index, kind in promoted.items():
        fields[index]["type"] = kind
        fields[index]["importance"] = PROMOTED_IMPORTANCE
    return fields + derived


def turn_fields(turns: Sequence[Turn], *, source_type: SourceType,
                valid_from: datetime | None, extra: dict[str, Any] | None = None
                ) -> list[dict[str, Any]]:
    """``store`` fields of each turn kept verbatim (an EPISODE), in order."""
    common: dict[str, Any] = {"source_type": source_type}
    if valid_from is not None:
        common["valid_from"] = valid_from
    fields: list[dict[str, Any]] = []
    for i, turn in enumerate(turns):
        meta: dict[str, Any] = {"turn": i, "extracted_by": "remember", **(extra or {})}
        if turn.speaker:
            meta["speaker"] = turn.speaker
        fields.append({**common, "content": turn.render(), "type": MemoryType.EPISODE,
                       "importance": EPISODE_IMPORTANCE, "metadata": meta, "dedup": False})
    return fields


def read_off(llm: LLMGateway, turns: Sequence[Turn], *, subject: str,
             source_type: SourceType, valid_from: datetime | None
             ) -> tuple[dict[int, MemoryType], list[dict[str, Any]]]:
    """What ``turns`` say beyond their text: the turns that are themselves a decision,
    procedure or plan (index -> type), and the ``store`` fields of what was read off them,
    each naming its turns (indices) under ``SOURCE_TURNS``."""
    common: dict[str, Any] = {"source_type": source_type}
    if valid_from is not None:
        common["valid_from"] = valid_from
    promoted: dict[int, MemoryType] = {}
    fields: list[dict[str, Any]] = []
    start = 0
    for chunk in _chunks(list(turns)):
        deadline.check("remember")
        chunk_turns = tuple(range(start, start + len(chunk)))
        llm_found = _llm_candidates(llm, chunk, subject)
        method = "llm"
        # (candidate, the turns it was read from): one turn for the rules, the whole chunk
        # for the LLM, which reads turns together.
        found: list[tuple[Candidate, tuple[int, ...]]] = []
        if llm_found is not None:
            found = [(cand, chunk_turns) for cand in llm_found]
        else:
            method = "rules"
            for offset, turn in enumerate(chunk):
                cands = extract_candidates(turn, subject)
                # A turn that *is* a decision, procedure or plan is kept verbatim with that
                # type instead of gaining a near-copy that would crowd it out of retrieval;
                # in a longer turn the one sentence that decides or plans becomes an entry
                # of its own (the turn is not a plan because one of its sentences is).
                kinds = {c.type for c in cands if c.entity is None}
                kind = next((t for t in _TURN_TYPES if t in kinds), None)
                if kind is not None and (kind is MemoryType.PROCEDURE
                                         or is_short_turn(turn.text)):
                    promoted[start + offset] = kind
                else:
                    cands = [attrs.evolve(c, entity=c.entity or subject_of(turn, subject))
                             if c.type in _SENTENCE_TYPES else c for c in cands]
                found += [(c, (start + offset,)) for c in cands if c.entity is not None]
        start += len(chunk)
        for cand, sources in found:
            item: dict[str, Any] = {**common, "content": cand.content, "type": cand.type,
                                    "importance": cand.importance,
                                    "metadata": {"extracted_by": method,
                                                 **({"about": cand.entity} if cand.entity
                                                    else {})},
                                    SOURCE_TURNS: sources}
            if cand.entity and cand.attribute:
                item.update(entity=cand.entity, attribute=cand.attribute, value=cand.value)
            fields.append(item)
    return promoted, fields


def is_short_turn(text: str) -> bool:
    return len(text) <= SHORT_TURN_CHARS or (
        len(text) <= SHORT_TWO_SENTENCES_CHARS and len(split_sentences(text)) <= 2)


def link_sources(
    fields: list[dict[str, Any]], write: Callable[[list[dict[str, Any]]], list[MemoryEntry]]
) -> list[MemoryEntry]:
    """Write the turns, then what was extracted from them with ``source_entry_ids`` naming
    the turns' entries: a fact stays traceable to what was said, and search can show the
    turn in the fact's place when both match (see ``SearchOptions.fold_derived``)."""
    turns = [f for f in fields if SOURCE_TURNS not in f]
    derived = [dict(f) for f in fields if SOURCE_TURNS in f]
    written = write(turns)
    for item in derived:
        item["source_entry_ids"] = [written[i].id for i in item.pop(SOURCE_TURNS)]
    return written + (write(derived) if derived else [])


def _chunks(turns: Sequence[Turn]) -> list[list[Turn]]:
    chunks: list[list[Turn]] = []
    current: list[Turn] = []
    size = 0
    for turn in turns:
        length = len(turn.render()) + 1
        if current and size + length > LLM_CHUNK_CHARS:
            chunks.append(current)
            current, size = [], 0
        current.append(turn)
        size += length
    if current:
        chunks.append(current)
    return chunks


def _llm_candidates(llm: LLMGateway, chunk: Sequence[Turn], subject: str) -> list[Candidate] | None:
    if llm.llm is None:
        llm.fallback("extraction")
        return None
    transcript = "\n".join(t.render() for t in chunk)
    messages = [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": f"Default subject: {subject}\n\n{transcript}"},
    ]
    reply = llm.complete_json("extraction", messages, EXTRACTION_SCHEMA, max_tokens=1_200)
    if not isinstance(reply, dict) or not isinstance(reply.get("memories"), list):
        return None
    out: list[Candidate] = []
    for item in reply["memories"]:
        cand = _candidate(item)
        if cand is not None:
            out.append(cand)
    return out


def _candidate(item: Any) -> Candidate | None:
    """A well-formed candidate from one LLM item, or None (bad items are dropped: the
    episodes already hold the text)."""
    if not isinstance(item, dict) or item.get("type") not in EXTRACTED_TYPES:
        return None
    content = item.get("content")
    if not isinstance(content, str) or not content.strip() or len(content) > MAX_CONTENT_CHARS:
        return None
    entity, attribute, value = (item.get(k) for k in ("entity", "attribute", "value"))
    structured = all(isinstance(v, str) and v.strip() for v in (entity, attribute))
    importance = item.get("importance")
    if not isinstance(importance, int | float) or isinstance(importance, bool) \
            or not 0 <= importance <= 1:
        importance = 0.6
    return Candidate(
        MemoryType[item["type"]], content.strip(),
        entity=str(entity).strip()[:200] if structured else None,
        attribute=str(attribute).strip()[:200] if structured else None,
        value=str(value).strip()[:2000] if structured and isinstance(value, str) else None,
        importance=float(importance),
    )
