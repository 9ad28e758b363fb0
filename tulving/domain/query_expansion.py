"""Query expansion by an LLM: the words and the kind of memory a question is looking for.

A question and the memory that answers it often share no words ("What activities does
Melanie do?" against "I'm off to go swimming with the kids") and sit apart in a small
embedding model's space. An LLM knows that swimming is an activity: asked for the words
such a memory would use and for one memory that would answer (HyDE, Gao et al. 2022),
it gives the lexical engine new terms and the dense engine a vector shaped like an
answer rather than a question. Both are extra candidate lists: the original query's lists
stay, so a poor expansion adds noise at a lower weight and never removes a hit.

This module holds the prompt, the reply's schema and the rules a reply must pass; the
call itself goes through the LLM gateway (``tulving.application.retrieval.expansion``),
which degrades to plain search when the model is missing, failing or out of budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from tulving.domain.errors import ConfigError

#: At most this many keywords are used (the first ones: the prompt asks for the likeliest
#: first), each at most ``MAX_KEYWORD_CHARS`` long; a longer reply is cut, not refused.
MAX_KEYWORDS = 12
MAX_KEYWORD_CHARS = 40
#: The hypothetical answer is embedded; past this many characters it is cut (one memory's
#: worth: the prompt asks for one or two sentences).
MAX_ANSWER_CHARS = 600
#: Completion tokens one expansion may use.
MAX_EXPANSION_TOKENS = 200
#: Weight of the expansion's lists relative to the query's own (each engine's weight is
#: multiplied by it). Lower than 1: the question is what the user asked.
EXPANSION_WEIGHT = 0.5
MAX_EXPANSION_WEIGHT = 2.0

EXPANSION_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "keywords": {"type": "array", "items": {"type": "string"}},
        "answer": {"type": "string"},
    },
    "required": ["keywords", "answer"],
    "additionalProperties": False,
}

_SYSTEM = (
    "You help search an agent's memory store. Memories are short notes and conversation "
    "turns. Given a question, reply in JSON with:\n"
    '- "keywords": up to 8 single words or short phrases that a memory answering the '
    "question would likely contain and the question does not (synonyms, specific "
    "examples of what is asked for), likeliest first;\n"
    '- "answer": one or two sentences written as such a memory would be written. Invent '
    "plausible details if you must: the text is only used to find similar memories."
)


@attrs.frozen
class Expansion:
    keywords: tuple[str, ...]
    answer: str

    @property
    def empty(self) -> bool:
        return not self.keywords and not self.answer


def expansion_messages(query: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": _SYSTEM},
            {"role": "user", "content": f"Question: {query}"}]


def parse_expansion(reply: object) -> Expansion | None:
    """The usable part of a model's reply, or None if there is none.

    A reply is untrusted input: items of the wrong type are dropped, overlong ones cut,
    duplicates removed; a reply with nothing left is None (the caller searches plainly).
    """
    if not isinstance(reply, Mapping):
        return None
    raw_keywords = reply.get("keywords")
    keywords: dict[str, None] = {}
    if isinstance(raw_keywords, list):
        for item in raw_keywords:
            if not isinstance(item, str):
                continue
            word = " ".join(item.split())[:MAX_KEYWORD_CHARS].strip()
            if word:
                keywords.setdefault(word, None)
            if len(keywords) >= MAX_KEYWORDS:
                break
    raw_answer = reply.get("answer")
    answer = " ".join(raw_answer.split())[:MAX_ANSWER_CHARS] if isinstance(raw_answer,
                                                                          str) else ""
    expansion = Expansion(keywords=tuple(keywords), answer=answer)
    return None if expansion.empty else expansion


#: ``options["search"]`` keys of the strong tier (``parse_strong_settings``).
STRONG_KEYS = ("strong", "strong_options", "strong_depth", "strong_compute")


def parse_strong_settings(options: object) -> tuple[object, dict[str, object], dict[str, object]]:
    """``options={"search": {"strong": NAME | None, "strong_options": {...},
    "strong_depth": n, "strong_compute": n}}``: the strong tier's
    encoder (an embedder adapter's name or instance; None or absent: no strong tier),
    its adapter options, and the knobs of the re-scoring stage (checked here)."""
    if not isinstance(options, dict):
        raise ConfigError("options['search'] must be a mapping")
    choice = options.get("strong")
    if choice is not None and not isinstance(choice, str) and not hasattr(choice, "embed"):
        raise ConfigError(f"search.strong must name an embedder (e.g. 'mpnet'), got {choice!r}")
    adapter = options.get("strong_options") or {}
    if not isinstance(adapter, dict):
        raise ConfigError("search.strong_options must be a mapping")
    knobs: dict[str, object] = {}
    for name in ("strong_depth", "strong_compute"):
        value = options.get(name)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 200:
                raise ConfigError(f"search.{name} must be an integer in 0..200, got {value!r}")
            knobs[name] = value
    return choice, dict(adapter), knobs


def parse_search_settings(options: object) -> tuple[bool, float, str]:
    """``options={"search": {"llm_expansion": bool, "expansion_weight": float,
    "ranker": "fused" | "learned"}}`` (the ranker's name is checked by ``SearchOptions``)."""
    if not isinstance(options, dict):
        raise ConfigError("options['search'] must be a mapping")
    unknown = set(options) - {"llm_expansion", "expansion_weight", "ranker", *STRONG_KEYS}
    if unknown:
        raise ConfigError(f"unknown search options: {', '.join(sorted(map(str, unknown)))}")
    enabled = options.get("llm_expansion", False)
    if not isinstance(enabled, bool):
        raise ConfigError(f"search.llm_expansion must be true or false, got {enabled!r}")
    weight = options.get("expansion_weight", EXPANSION_WEIGHT)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not (
            0 < weight <= MAX_EXPANSION_WEIGHT):
        raise ConfigError(
            f"search.expansion_weight must be a number in (0, {MAX_EXPANSION_WEIGHT}], "
            f"got {weight!r}")
    ranker = options.get("ranker", "fused")
    if not isinstance(ranker, str):
        raise ConfigError(f"search.ranker must be a name, got {ranker!r}")
    return enabled, float(weight), ranker
