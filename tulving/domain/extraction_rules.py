"""Deterministic extraction: raw text -> turns -> typed memory candidates.

Why rules at all: extraction must work with no LLM (offline, no key, budget spent). The
rules are deliberately conservative: each one fires on an explicit first-person pattern
("I prefer", "my X is Y", "we decided") and produces a structured fact only where the
pattern fixes entity, attribute and value unambiguously. Anything the rules do not
understand is still kept, because every turn also becomes an EPISODE: a missed fact costs
precision, never data.
"""

from __future__ import annotations

import re

import attrs

from tulving.domain.types import MemoryType

#: A transcript line "Speaker: text"; a speaker is a short name-like prefix.
_SPEAKER = re.compile(r"^\s*([A-Z][\w.'\- ]{0,39}?)\s*:\s+(\S.*)$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'A-Z0-9])")
#: Longest episode kept in one piece; longer turns are split at sentence boundaries.
MAX_EPISODE_CHARS = 2_000
_STEP = re.compile(r"^\s*(?:\d+[.)]|[-*\u2022]|step \d+[:.)]?)\s+(\S.*)$", re.IGNORECASE)
_SEQUENCE_WORDS = re.compile(r"\b(first|then|after that|finally|lastly|second|third)\b",
                             re.IGNORECASE)
#: Objects and values that point back at the conversation ("I love how you ...", "my kids
#: are so cute") are reactions, not durable facts; first/second person would also read
#: wrongly once rewritten in the third person.
_DEICTIC = re.compile(
    r"^(that|how|what|when|where|why|it|its|this|these|those|them|seeing|hearing|being|"
    r"the way|all|their|his|her)\b|\b(i|me|my|myself|you|your|yours|we|us|our|ours)\b",
    re.IGNORECASE,
)
_EVALUATIVE = re.compile(
    r"^(so|really|very|such|too|always|just|pretty|quite|super|totally|such|a (?:great|good|"
    r"huge|big)|amazing|awesome|great|good|key|important|hard|tough|fun|the best)\b",
    re.IGNORECASE,
)

_OPINION = re.compile(
    r"\bI(?:'m| am)? (?:really |also |absolutely |just |still |totally )?"
    r"(prefer|like|love|enjoy|adore|hate|dislike|detest|can't stand|cannot stand)s?\s+"
    r"(.{2,120}?)(?:[.!?;](?=\s|$)|,? but\b|$)",
    re.IGNORECASE,
)
_MY_X_IS_Y = re.compile(
    r"\bmy ((?:favou?rite )?[a-z][a-z '\-]{0,40}?) (?:is|are|was) (?!not\b)(.{1,120}?)(?:[.!?;,](?=\s|$)|$)",
    re.IGNORECASE,
)
_I_AM = [
    (re.compile(r"\bI (?:work|am working) (?:at|for) (.{2,80}?)(?:[.!?;,](?=\s|$)|$)", re.I), "works at"),
    (re.compile(r"\bI (?:work|am working) as (?:an? )?(.{2,80}?)(?:[.!?;,](?=\s|$)|$)", re.I), "occupation"),
    (re.compile(r"\bI (?:live|am living) in (.{2,80}?)(?:[.!?;,](?=\s|$)|$)", re.I), "lives in"),
    (re.compile(r"\bI(?:'m| am) from (.{2,80}?)(?:[.!?;,](?=\s|$)|$)", re.I), "from"),
    (re.compile(r"\bmy name is (.{2,60}?)(?:[.!?;,](?=\s|$)|$)", re.I), "name"),
]
_DECISION = re.compile(
    r"\b(?:we|I|the team)(?:'ve| have)?(?: just| finally| also| all)? (decided|agreed|chose|"
    r"will use|are going with|went with|settled on|opted for)\b",
    re.IGNORECASE,
)
_PLAN = re.compile(
    r"\b(plan(?:ning)? to|going to|gonna|intend to|next (?:week|month|year|weekend)|"
    r"tomorrow|this weekend)\b",
    re.IGNORECASE,
)
_NOT_PLAN = re.compile(r"\b(was|were) going to\b", re.IGNORECASE)

_VERB_THIRD_PERSON = {
    "prefer": "prefers", "like": "likes", "love": "loves", "enjoy": "enjoys",
    "adore": "adores", "hate": "hates", "dislike": "dislikes", "detest": "detests",
    "can't stand": "can't stand", "cannot stand": "cannot stand",
}
_POSITIVE = {"prefer", "like", "love", "enjoy", "adore"}


@attrs.frozen
class Turn:
    """One speaker's contribution (``speaker`` is None for plain text)."""

    speaker: str | None
    text: str

    def render(self) -> str:
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


@attrs.frozen
class Candidate:
    """A typed memory the rules found; ``entity``/``attribute``/``value`` when structured."""

    type: MemoryType
    content: str
    entity: str | None = None
    attribute: str | None = None
    value: str | None = None
    importance: float = 0.5


def split_turns(text: str) -> list[Turn]:
    """Transcript lines ("Speaker: text") become turns; continuation lines join the turn
    above. Text without speaker lines becomes one turn per paragraph."""
    lines = text.replace("\r\n", "\n").split("\n")
    has_speakers = sum(1 for line in lines if _SPEAKER.match(line)) >= 1
    turns: list[Turn] = []
    if has_speakers:
        speaker: str | None = None
        buffer: list[str] = []
        for line in lines:
            match = _SPEAKER.match(line)
            if match and not _looks_like_step(line):
                if buffer:
                    turns.append(Turn(speaker, "\n".join(buffer)))
                speaker, buffer = match.group(1).strip(), [match.group(2).strip()]
            elif line.strip():
                buffer.append(line.strip())
        if buffer:
            turns.append(Turn(speaker, "\n".join(buffer)))
    else:
        for paragraph in re.split(r"\n\s*\n", text):
            if paragraph.strip():
                kept = paragraph.strip() if _is_step_list(paragraph) else " ".join(paragraph.split())
                turns.append(Turn(None, kept))
    out: list[Turn] = []
    for turn in turns:
        out.extend(Turn(turn.speaker, piece) for piece in chunk_text(turn.text))
    return out


def _looks_like_step(line: str) -> bool:
    return bool(re.match(r"^\s*step \d+\s*:", line, re.IGNORECASE))


def chunk_text(text: str, limit: int = MAX_EPISODE_CHARS) -> list[str]:
    """Pieces of at most ``limit`` characters, cut at sentence ends where possible."""
    if len(text) <= limit:
        return [text]
    pieces: list[str] = []
    current = ""
    for sentence in split_sentences(text):
        while len(sentence) > limit:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(sentence[:limit])
            sentence = sentence[limit:]
        if current and len(current) + 1 + len(sentence) > limit:
            pieces.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        pieces.append(current)
    return pieces


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def normalise_statement(text: str) -> str:
    """Lower-case words only: the form two restatements of one fact share."""
    return " ".join(re.findall(r"\w+", text.casefold()))


def _clean_value(value: str) -> str:
    value = value.strip().strip("\"'").strip()
    return re.sub(r"\s+", " ", value)


def _is_step_list(text: str) -> bool:
    steps = [line for line in text.split("\n") if _STEP.match(line)]
    return len(steps) >= 2


def extract_candidates(turn: Turn, default_subject: str = "user") -> list[Candidate]:
    """Typed candidates from one turn (never the EPISODE itself; callers add it)."""
    subject = turn.speaker or default_subject
    out: list[Candidate] = []
    sequence = {w.lower() for w in _SEQUENCE_WORDS.findall(turn.text)}
    if _is_step_list(turn.text) or len(sequence) >= 3:
        out.append(Candidate(MemoryType.PROCEDURE, _with_subject(subject, turn.text),
                             importance=0.6))
    for sentence in split_sentences(turn.text):
        out.extend(_sentence_candidates(sentence, subject))
    return out


def _with_subject(subject: str, text: str) -> str:
    return f"{subject}: {text}" if subject else text


def _sentence_candidates(sentence: str, subject: str) -> list[Candidate]:
    found: list[Candidate] = []
    for match in _OPINION.finditer(sentence):
        verb = match.group(1).lower()
        obj = _clean_value(match.group(2))
        if (not obj or _DEICTIC.search(obj) or len(obj.split()) > 10
                or re.fullmatch(r"to(?: \w+)?|every day", obj, re.IGNORECASE)):
            continue
        third = _VERB_THIRD_PERSON.get(verb, verb + "s")
        value = "positive" if verb in _POSITIVE else "negative"
        found.append(Candidate(
            MemoryType.PREFERENCE, f"{subject} {third} {obj}.",
            entity=subject, attribute=f"feeling about {obj.lower()}"[:200], value=value,
            importance=0.6,
        ))
    for match in _MY_X_IS_Y.finditer(sentence):
        attribute = _clean_value(match.group(1)).lower()
        value = _clean_value(match.group(2))
        if (not value or attribute in {"god", "goodness", "bad", "pleasure"}
                or len(attribute.split()) > 3 or len(value.split()) > 6
                or _DEICTIC.search(value) or _EVALUATIVE.search(value)
                or re.search(r"\b(i|me|you|we)\b", attribute, re.IGNORECASE)):
            continue
        found.append(Candidate(
            MemoryType.FACT, f"{subject}'s {attribute} is {value}.",
            entity=subject, attribute=attribute, value=value, importance=0.6,
        ))
    for pattern, attribute in _I_AM:
        for match in pattern.finditer(sentence):
            value = _clean_value(match.group(1))
            if value:
                found.append(Candidate(
                    MemoryType.FACT, f"{subject} {_FACT_PHRASE[attribute]} {value}.",
                    entity=subject, attribute=attribute, value=value, importance=0.6,
                ))
    if _DECISION.search(sentence):
        found.append(Candidate(MemoryType.DECISION, _with_subject(subject, sentence),
                               importance=0.7))
    elif _PLAN.search(sentence) and not _NOT_PLAN.search(sentence) and "?" not in sentence:
        found.append(Candidate(MemoryType.PLAN, _with_subject(subject, sentence),
                               importance=0.5))
    return found


_FACT_PHRASE = {
    "works at": "works at", "occupation": "works as", "lives in": "lives in",
    "from": "is from", "name": "is named",
}


def digest_line(text: str, limit: int = 160) -> str:
    """One line of at most ``limit`` characters (for digests and working-memory views)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "\u2026"
