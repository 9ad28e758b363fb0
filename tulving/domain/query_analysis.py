"""What a query says about the memories it wants, read without an LLM.

Two signals that plain rank fusion ignores and that hold for any agent memory:
- named things: a capitalised word inside the query ("What did *Caroline* research?")
  names an entity; memories that mention it are far likelier to answer than memories
  that only share the other words;
- time: "when ..." questions want memories that place an event in time.
"""

from __future__ import annotations

import re

import attrs

from tulving.domain.lexical import STOP_WORDS, words
from tulving.domain.temporal import asks_when

_CAPITALISED = re.compile(r"\b([A-Z][\w'’-]*)")
_QUESTION_WORDS = frozenset(
    "what when where who whom whose which why how did does do is are was were would could "
    "should can will has have had tell list name describe give show find".split()
)


@attrs.frozen
class QueryAnalysis:
    text: str
    entities: tuple[str, ...]  # lower-cased names, possessives stripped
    asks_when: bool


def _names(text: str) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for match in _CAPITALISED.finditer(text):
        start = match.start()
        before = text[:start].rstrip()
        sentence_start = not before or before[-1] in ".?!:;\"(["
        word = words(match.group(1))
        if not word:
            continue
        name = word[0].split("'")[0]
        if sentence_start or name in STOP_WORDS or name in _QUESTION_WORDS or len(name) < 2:
            continue
        found.setdefault(name, None)
    return tuple(found)


def analyse(query: str) -> QueryAnalysis:
    return QueryAnalysis(text=query, entities=_names(query), asks_when=asks_when(query))


def mentions(text_words: frozenset[str], entity: str) -> bool:
    return entity in text_words
