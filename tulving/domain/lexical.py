"""Lexical normalisation shared by every adapter's full-text search.

The query parser treats words as words: a query becomes a set of terms that are ORed and
ranked by the engine (bm25 / ts_rank), not one phrase that must appear verbatim. Stop
words are dropped so "what did Caroline say about the adoption" searches for
"caroline", "say", "adoption". Stemming is left to the engine (FTS5 porter, PostgreSQL
english), so stored text and queries are stemmed alike.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have
    haven't having he he'd he'll he's her here here's hers herself him himself his how how's
    i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my
    myself no nor not of off on once only or other ought our ours ourselves out over own same
    shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this
    those through to too under until up very was wasn't we we'd we'll we're we've were weren't
    what what's when when's where where's which while who who's whom why why's will with won't
    would wouldn't you you'd you'll you're you've your yours yourself yourselves""".split()
)

MAX_QUERY_TERMS = 64


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` (letters and digits; inner apostrophes kept)."""
    return [w.replace("’", "'").casefold() for w in _WORD.findall(text)]


def query_terms(text: str) -> list[str]:
    """Distinct non-stop-word terms of a query, in order, at most ``MAX_QUERY_TERMS``.

    Possessives are reduced ("caroline's" -> "caroline") because FTS tokenizers split on
    the apostrophe. If every word is a stop word the words themselves are kept, so
    "what is it" still searches for something.
    """
    raw = [w.split("'")[0] if w.endswith("'s") else w for w in words(text)]
    kept = [w for w in raw if w not in STOP_WORDS] or raw
    seen: dict[str, None] = {}
    for term in kept:
        for part in term.split("'"):
            if part:
                seen.setdefault(part, None)
    return list(seen)[:MAX_QUERY_TERMS]


def searchable_text(
    content: str,
    key: str | None = None,
    tags: tuple[str, ...] = (),
    entity: str | None = None,
    attribute: str | None = None,
    value: str | None = None,
) -> str:
    """The text a full-text index holds for an entry: content plus its key split into
    words, its tags and its structured fact, so "auth/strategy" is found by "auth"."""
    parts = [content]
    if key:
        parts.append(re.sub(r"[._:/\-]+", " ", key))
    parts.extend(tags)
    parts.extend(p for p in (entity, attribute, value) if p)
    return "\n".join(parts)
