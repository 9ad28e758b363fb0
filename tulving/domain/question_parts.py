"""The parts of a question that say where, inside one long memory, its answer is.

Questions about an earlier conversation usually restate its topic before they ask
("going back to our conversation about X, can you remind me what Y was"). The memory
that answers them (an assistant's long answer about X) restates X as well, in its opening
and its closing; the answer is one item of a list in between. Choosing the passage by the
question's words alone then finds the opening. Three parts of the question point past it:

- the **ask**: the clause that asks (it holds a wh-word, or follows "remind me"), as
  against the **preamble** that names the conversation ("going back to our chat about X",
  "on the list you gave me", "from our X conversation");
- the **focus**: the content words right after the wh-word ("which *headphones* did you
  recommend", "how many *skeins*"), the kind of thing the answer is;
- an **ordinal**: "the fifth one", "the 27th parameter", "number 8", "the last tip",
  "day 5", "step six" (an item of a list by its position or its label).

Read with regular expressions; no model. It can be wrong (a preamble without a
conversation word stays in the ask); every use weighs the parts, none depends on one.
"""

from __future__ import annotations

import re

import attrs

from tulving.domain.lexical import STOP_WORDS, query_terms, words
from tulving.domain.list_items import LAST_ITEM

_ORDINAL_WORDS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
    "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12,
    "thirteenth": 13, "fourteenth": 14, "fifteenth": 15, "sixteenth": 16,
    "seventeenth": 17, "eighteenth": 18, "nineteenth": 19, "twentieth": 20,
}
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20,
}
#: The position of a list's last item.
LAST = LAST_ITEM
_ORD = (r"(?P<ord>" + "|".join(_ORDINAL_WORDS) + r"|\d{1,3}(?:st|nd|rd|th)|last|final)")
#: "the fifth one", "your 27th", "that last tip"; not "my first year", "the March 15th"
#: nor "the first-night bag".
_ORDINAL = re.compile(r"\b(?:the|that|your|this)\s+(?:very\s+)?" + _ORD + r"\b(?!-)",
                      re.IGNORECASE)
#: "number 8", "#3", "no. 4".
_NUMBERED = re.compile(r"(?:\bnumber\s+|#|\bno\.\s*)(?P<num>\d{1,3}|"
                       + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)
#: "day 5", "step six", "week 10": a labelled item ("Day 5: ...").
_LABELLED = re.compile(r"\b(?P<label>[a-z]{3,12})\s+(?P<num>\d{1,3}|"
                       + "|".join(_NUMBER_WORDS) + r")\b(?!\s*(?:%|percent|[a-z]*s\b))",
                       re.IGNORECASE)
_LABELS = frozenset("""day week step part stage phase tip item point option idea rule
    chapter lesson round level question method principle strategy example section
    exercise session month act scene episode""".split())

#: Where a question's clauses meet: sentence ends, commas, dashes, and the words that
#: start an ask after a preamble ("..., can you remind me ...").
_CLAUSE = re.compile(r"[.?!;:]+\s+|,\s+|\s+[-–—]+\s+|\s+(?=(?:can|could|would|will)\s+you\b)"
                     r"|\s+(?=and\s+i\s+(?:was|wanted|am)\b)", re.IGNORECASE)
#: Inside an ask, where a trailing preamble begins ("what was the sixth painter | on the
#: list of Venetian painters you gave me").
_TRAILING = re.compile(r"\s+(?=(?:on|in|from|of|for)\s+(?:the|that|your|our|this|those)\s+"
                       r"(?:list|previous|earlier|last|conversation|chat|discussion|plan|"
                       r"comparison|checklist|schedule|talk)\b"
                       r"|(?:in|from)\s+our\b|for\s+my\b|when\s+we\s+(?:talked|spoke|discussed|chatted)\b)",
                       re.IGNORECASE)
_REFERENCE = re.compile(r"\b(?:conversations?|chats?|discussions?|talked|talking|spoke|"
                        r"discussed|chatted|going\s+back|previous(?:ly)?|earlier|"
                        r"remember|recall|follow(?:ing)?\s+up|looking\s+(?:back|at)|"
                        r"going\s+through|re-?reading|you\s+(?:gave|provided|made|wrote|"
                        r"listed|shared|told|created|put\s+together))\b", re.IGNORECASE)
_WH = re.compile(r"\b(?:what|which|who|whom|whose|where|when|why|how)\b|\bremind\s+me\b",
                 re.IGNORECASE)
#: After a wh-word, the words that come before the thing asked about.
_FOCUS_SKIP = frozenset("""the a an name names kind kinds type types sort sorts one ones
    was were is are exactly again of your my that this those these other specific
    particular many much long often far big old""".split()) | frozenset(_ORDINAL_WORDS) \
    | {"last", "final"}
_FOCUS_WH = re.compile(r"\b(?:what|which|whose|how)\b", re.IGNORECASE)
FOCUS_WORDS = 2


@attrs.frozen
class QuestionParts:
    """A question read for passage choice: every term, and which of them ask."""

    terms: tuple[str, ...]
    """The question's terms (``query_terms``), in order."""
    ask: frozenset[str] = frozenset()
    """Terms of the clauses that ask (all terms when no preamble was found)."""
    focus: tuple[str, ...] = ()
    """The content words right after the wh-word, at most ``FOCUS_WORDS``."""
    ordinal: int | None = None
    """The list position asked for (1-based; ``LAST`` for the last), if any."""
    label: str | None = None
    """The label of a labelled item asked for ("day" of "day 5"), if any."""

    @property
    def preamble(self) -> frozenset[str]:
        """Terms only the preamble holds (the restated topic)."""
        return frozenset(self.terms) - self.ask


def _position(token: str) -> int | None:
    token = token.casefold()
    if token in ("last", "final"):
        return LAST
    if token in _ORDINAL_WORDS:
        return _ORDINAL_WORDS[token]
    if token in _NUMBER_WORDS:
        return _NUMBER_WORDS[token]
    digits = re.match(r"\d+", token)
    return int(digits.group()) if digits else None


def _ordinal(text: str) -> tuple[int | None, str | None]:
    found = _ORDINAL.search(text)
    if found is not None:
        return _position(found.group("ord")), None
    found = _NUMBERED.search(text)
    if found is not None:
        return _position(found.group("num")), None
    for found in _LABELLED.finditer(text):
        if found.group("label").casefold() in _LABELS:
            return _position(found.group("num")), found.group("label").casefold()
    return None, None


def _focus(clause: str) -> tuple[str, ...]:
    found = _FOCUS_WH.search(clause)
    if found is None:
        return ()
    out: list[str] = []
    for word in words(clause[found.end():]):
        if word in _FOCUS_SKIP:
            if out:
                break
            continue
        if word in STOP_WORDS or len(out) >= FOCUS_WORDS:
            break
        out.append(word.split("'")[0])
    return tuple(out)


def _clauses(question: str) -> list[tuple[str, bool]]:
    """The question's clauses, each with whether it is a preamble: a clause that names
    the conversation and does not ask, or what trails an ask ("... on the list you gave
    me", "... from our chat about X")."""
    clauses: list[tuple[str, bool]] = []
    for part in _CLAUSE.split(question):
        if not part or not part.strip():
            continue
        head, *tails = _TRAILING.split(part)
        clauses.append((head, bool(_REFERENCE.search(head)) and not _WH.search(head)))
        clauses.extend((tail, True) for tail in tails)
    return clauses


def question_parts(question: str) -> QuestionParts:
    """Read ``question`` (see the module's docstring)."""
    terms = tuple(query_terms(question))
    clauses = _clauses(question)
    asking = [c for c, preamble in clauses if not preamble]
    ask_terms = {t for c in asking for t in query_terms(c)} & set(terms)
    focus: tuple[str, ...] = ()
    for clause in asking:
        focus = _focus(clause)
        if focus:
            break
    ordinal, label = _ordinal(question)
    return QuestionParts(terms, frozenset(ask_terms or terms),
                         tuple(f for f in focus if f in terms), ordinal, label)
