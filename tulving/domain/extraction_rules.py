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

from tulving.domain.self_statements import REACTION, self_statements
from tulving.domain.transcripts import Turn, is_assistant, is_user_role, split_transcript
from tulving.domain.types import MemoryType

__all__ = ["Candidate", "Turn", "chunk_text", "extract_candidates", "is_assistant",
           "split_sentences", "split_turns", "subject_of"]

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
#: Whose plan it is: "I'm planning to", "we're going to", "I'll ... next week" (not "you're
#: planning to", nor "the store opens tomorrow").
_MY_PLAN = re.compile(
    r"\b(?:I|we)(?:'m| am|'re| are|'ll| will)?(?: (?:also|really|definitely|finally|still|"
    r"actually|just|now|probably))? (?:plan(?:ning)? to|going to|gonna|intend(?:ing)? to)\b"
    r"|\b(?:I|we)(?:'ll| will| am| are|'m|'re)\b.*\b(?:next (?:week|month|year|weekend)|"
    r"tomorrow|this weekend)\b",
    re.IGNORECASE,
)
#: An assistant stating what the user decided: "You decided to ...", "So you chose ...".
_YOU_DECIDED = re.compile(
    r"^(?:(?:so|ok(?:ay)?|great|noted|got it|perfect|understood)[,:!.]?\s+)*you(?:'ve| have)?"
    r"(?: just| finally| now)? (decided|agreed|chose|settled on|opted for|went with)\b",
    re.IGNORECASE,
)
#: What introduces a list of steps as a way to do something.
_HOW_TO = re.compile(r"\b(?:to [a-z]+|how to|steps?|procedure|process|routine|recipe|"
                     r"instructions|checklist|workflow)\b", re.IGNORECASE)
#: A text that asks for something rather than says how something is done.
_REQUEST = re.compile(r"^\s*(?:please |can you|could you|would you|will you|write|create|"
                      r"make|generate|give|list|describe|explain|tell|help|suggest|"
                      r"provide|draft|compose|summari[sz]e|rewrite|translate)\b",
                      re.IGNORECASE)
_SHORT_SEQUENCE_CHARS = 600
#: "my X is Y" where X is a word of the conversation itself, not an attribute of the
#: speaker ("my question is ...", "my word is clown" in a word game).
_NOT_ATTRIBUTES = frozenset("""god goodness bad pleasure word question point answer guess
concern problem issue idea suggestion understanding assumption thought opinion hope worry
request task fault mistake turn apologies apology intention bet impression take feedback
response reply main first second next last only one ones""".split())
#: "my X is going well", "my father is a strict": a state or a cut-off phrase, not a value.
_NOT_A_VALUE = re.compile(r"^(?:\w+ing\b|(?:a|an|the)\s+\w+$|(?:a|an|the)$)", re.IGNORECASE)
#: Importance of a self-statement that names nothing specific (a structured fact has 0.6);
#: each number or proper name it holds adds ``SPECIFIC_BONUS``, twice at most.
STATEMENT_IMPORTANCE = 0.5
SPECIFIC_BONUS = 0.05

_VERB_THIRD_PERSON = {
    "prefer": "prefers", "like": "likes", "love": "loves", "enjoy": "enjoys",
    "adore": "adores", "hate": "hates", "dislike": "dislikes", "detest": "detests",
    "can't stand": "can't stand", "cannot stand": "cannot stand",
}
_POSITIVE = {"prefer", "like", "love", "enjoy", "adore"}


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
    """Transcript lines ("Speaker: text", a speaker only at a turn boundary of the
    transcript's format: :mod:`tulving.domain.transcripts`) become turns; continuation
    lines join the turn above. Text without speakers becomes one turn per paragraph."""
    turns = split_transcript(text)
    if turns is None:
        turns = []
        for paragraph in re.split(r"\n\s*\n", text):
            if paragraph.strip():
                kept = paragraph.strip() if _is_step_list(paragraph) else " ".join(paragraph.split())
                turns.append(Turn(None, kept))
    out: list[Turn] = []
    for turn in turns:
        out.extend(Turn(turn.speaker, piece) for piece in chunk_text(turn.text))
    return out


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
    """Typed candidates from one turn (never the EPISODE itself; callers add it).

    The subject is the turn's speaker, or ``default_subject`` for plain text and for a
    chat's user role. An assistant's turn is not the user speaking: its numbered lists are
    answers, not the user's procedures, its "I" is the assistant, and its "Yes, I
    acknowledge" is no decision of the user's. From it only a decision it states the user
    made ("You decided to use Postgres.") is kept, about the user.
    """
    if is_assistant(turn.speaker):
        return _adopted_decisions(turn.text, default_subject)
    subject = subject_of(turn, default_subject)
    out: list[Candidate] = []
    if _is_procedure(turn.text):
        out.append(Candidate(MemoryType.PROCEDURE, _with_subject(subject, turn.text),
                             importance=0.6))
    # What the memory's own user says about themselves (a chat's user role, plain text) is
    # restated: it sits inside long messages. Named people talking to each other (a
    # transcript of "Caroline:" and "Melanie:") keep to the structured patterns: their
    # turns are short, a restatement would be a second copy of the turn competing with
    # it for the budget (LoCoMo dev: curate coverage -0.6 points with it, level without).
    restate = turn.speaker is None or is_user_role(turn.speaker)
    for sentence in split_sentences(turn.text):
        out.extend(_sentence_candidates(sentence, subject, restate))
    return out


def subject_of(turn: Turn, default_subject: str) -> str:
    """Who a turn's first person is: its speaker, or ``default_subject`` for plain text
    and for a chat's user role."""
    if turn.speaker is None or is_user_role(turn.speaker):
        return default_subject
    return turn.speaker


def _is_procedure(text: str) -> bool:
    """Steps someone follows: a list of two steps or more that is the whole text or is
    introduced as a way to do something ("To deploy the site:"), or a short text that walks
    through an order ("First ..., then ..., finally ..."). A request that lists what it
    wants ("Write an essay with: 1. ...") and a question are not procedures."""
    lines = [line for line in text.split("\n") if line.strip()]
    first_step = next((i for i, line in enumerate(lines) if _STEP.match(line)), None)
    if _is_step_list(text) and first_step is not None:
        intro = " ".join(lines[:first_step])
        if not intro or (_HOW_TO.search(intro) and not _REQUEST.match(intro)
                         and "?" not in intro):
            return True
    sequence = {w.lower() for w in _SEQUENCE_WORDS.findall(text)}
    return len(sequence) >= 3 and len(text) <= _SHORT_SEQUENCE_CHARS and "?" not in text \
        and not _REQUEST.match(text)


def _adopted_decisions(text: str, subject: str) -> list[Candidate]:
    out = []
    for sentence in split_sentences(text):
        match = _YOU_DECIDED.match(sentence)
        if match and "?" not in sentence:
            out.append(Candidate(MemoryType.DECISION,
                                 f"{subject} {match.group(1)}{sentence[match.end():]}".rstrip(),
                                 entity=subject, importance=0.7))
    return out


def _with_subject(subject: str, text: str) -> str:
    return f"{subject}: {text}" if subject else text


def _sentence_candidates(sentence: str, subject: str, restate: bool = True) -> list[Candidate]:
    found: list[Candidate] = []
    asks = "?" in sentence
    for match in _OPINION.finditer(sentence):
        verb = match.group(1).lower()
        obj = _clean_value(match.group(2))
        if (asks or not obj or _DEICTIC.search(obj) or len(obj.split()) > 10
                or REACTION.match(obj)
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
        if (asks or not value or attribute.split()[-1] in _NOT_ATTRIBUTES
                or len(attribute.split()) > 4 or len(value.split()) > 8
                or _DEICTIC.search(value) or _EVALUATIVE.search(value)
                or _NOT_A_VALUE.match(value)
                or re.search(r"\b(i|me|you|we)\b", attribute, re.IGNORECASE)):
            continue
        found.append(Candidate(
            MemoryType.FACT, f"{subject}'s {attribute} is {value}.",
            entity=subject, attribute=attribute, value=value, importance=0.6,
        ))
    for pattern, attribute in _I_AM:
        for match in pattern.finditer(sentence):
            value = _clean_value(match.group(1))
            if value and not asks:
                found.append(Candidate(
                    MemoryType.FACT, f"{subject} {_FACT_PHRASE[attribute]} {value}.",
                    entity=subject, attribute=attribute, value=value, importance=0.6,
                ))
    if restate and not asks:
        found += _statements(sentence, subject, found)
    if _DECISION.search(sentence) and not asks:
        found.append(Candidate(MemoryType.DECISION, _with_subject(subject, sentence),
                               importance=0.7))
    elif (_PLAN.search(sentence) and not _NOT_PLAN.search(sentence) and not asks
          and _MY_PLAN.search(sentence)):
        found.append(Candidate(MemoryType.PLAN, _with_subject(subject, sentence),
                               importance=0.5))
    return found


def _statements(sentence: str, subject: str, structured: list[Candidate]) -> list[Candidate]:
    """What the speaker says about themselves beyond the structured patterns
    (:mod:`tulving.domain.self_statements`); a clause a structured candidate already
    holds is not restated."""
    held = [normalise_statement(c.content) for c in structured]
    out = []
    for statement in self_statements(sentence, subject):
        words = normalise_statement(statement.content)
        if any(h in words or words in h for h in held):
            continue
        kind = MemoryType.PREFERENCE if statement.preference else MemoryType.FACT
        importance = STATEMENT_IMPORTANCE + SPECIFIC_BONUS * min(2, statement.specific)
        out.append(Candidate(kind, statement.content, entity=subject, importance=importance))
    return out


_FACT_PHRASE = {
    "works at": "works at", "occupation": "works as", "lives in": "lives in",
    "from": "is from", "name": "is named",
}


def digest_line(text: str, limit: int = 160) -> str:
    """One line of at most ``limit`` characters (for digests and working-memory views)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "\u2026"
