"""Transcript text -> turns: who speaks where.

A line ``Name: text`` starts a new turn only at a turn boundary of the transcript's own
format, never because a reply happens to hold a line that looks like one: an assistant's
answer quotes logs (``INFO: started``), exceptions (``ValueError: bad``), examples
(``E.g.: ...``) and lists of named things (``Vivienne Westwood: punk``), and each of those
taken for a speaker used to split a reply into turns of made-up speakers (a median of 8.5
per LongMemEval history, up to 37). The rules:

* Chat format: when any label is a conversational role (``user``, ``assistant``,
  ``human``, ``AI``... in any case), only role labels are speakers.
* Named format (``Caroline: ...``, ``Melanie: ...``): a label is a speaker when it reads
  as a name (one to three capitalised words, a number allowed at a word's end or as a
  word: ``Ann2``, ``Speaker 1``), is not a word that introduces
  text (``Note``, ``Example``, ``Step``...), a log level or an exception class, and either
  labels the first line or labels two lines or more (the transcript's own speakers come
  back; a quoted name usually does not). When that leaves a single speaker, the next most
  frequent name-like label joins it (a two-line exchange).
* Nothing inside a fenced code block is a boundary.
"""

from __future__ import annotations

import re
from collections import Counter

import attrs

#: A line ``Label: text``; the label is a short prefix without sentence punctuation.
_LABELLED = re.compile(r"^\s*([A-Za-z][\w.'\- ]{0,39}?)\s*:\s+(\S.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
#: Conversational roles (a chat transcript's speakers), lower-case.
USER_ROLES = frozenset({"user", "human", "me", "customer", "client"})
ASSISTANT_ROLES = frozenset({"assistant", "ai", "bot", "chatbot", "agent", "model", "system",
                             "tool", "gpt", "chatgpt", "claude", "gemini", "copilot"})
ROLES = USER_ROLES | ASSISTANT_ROLES
_NAME = re.compile(r"^[A-Z][a-z'\-]*\d{0,4}(?: (?:[A-Z][a-z'\-]*\d{0,4}|van|von|de|da|del|di|le"
                   r"|la|bin|\d{1,4}))"
                   r"{0,2}$")
#: Labels that introduce text rather than name a speaker.
_NOT_SPEAKERS = frozenset("""
answer question q a note notes example examples e.g i.e tip tips hint warning caution
important step steps output input result results summary source sources title subject date
time update edit ps p.s reason option pros cons solution explanation description location
price total ingredients instructions directions method error exception traceback info debug
trace fatal critical notice definition meaning translation usage syntax response request
reply prompt query task goal objective conclusion introduction overview background context
key value name type status category role level score rating verdict bonus extra remember
fact facts follow-up followup alternatively additionally also however therefore example
day week month year part phase round chapter stage section version item point line page
""".split())
_EXCEPTION_CLASS = re.compile(r"(Error|Exception|Warning|Exit|Interrupt)$")
_LOG_LEVEL = re.compile(r"^[A-Z]{2,}$")


@attrs.frozen
class Turn:
    """One speaker's contribution (``speaker`` is None for plain text)."""

    speaker: str | None
    text: str

    def render(self) -> str:
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


def is_assistant(speaker: str | None) -> bool:
    """Whether ``speaker`` is a conversational role that is not a person (an assistant,
    a model, a tool): what it says is not what the user said."""
    return speaker is not None and speaker.casefold() in ASSISTANT_ROLES


def is_user_role(speaker: str | None) -> bool:
    """Whether ``speaker`` is the role name of the person the memory is about (``user``)."""
    return speaker is not None and speaker.casefold() in USER_ROLES


def _name_like(label: str) -> bool:
    folded = label.casefold()
    first_word = re.sub(r"\d+$", "", folded.split(" ")[0])
    if folded in _NOT_SPEAKERS or folded.rstrip(".") in _NOT_SPEAKERS or first_word in _NOT_SPEAKERS:
        return False
    if _EXCEPTION_CLASS.search(label) or _LOG_LEVEL.match(label):
        return False
    return bool(_NAME.match(label))


def _labels(lines: list[str]) -> list[tuple[int, str, str]]:
    """(line index, label, text) of the labelled lines outside code fences."""
    out: list[tuple[int, str, str]] = []
    fenced = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        match = _LABELLED.match(line)
        if match:
            out.append((i, match.group(1).strip(), match.group(2).strip()))
    return out


def speakers_of(lines: list[str]) -> frozenset[str]:
    """The labels that are speakers in this transcript (see the module doc)."""
    labelled = _labels(lines)
    if not labelled:
        return frozenset()
    roles = {label for _, label, _ in labelled if label.casefold() in ROLES}
    if roles:
        return frozenset(roles)
    first_line = next((i for i, line in enumerate(lines) if line.strip()), -1)
    counts = Counter(label for _, label, _ in labelled if _name_like(label))
    chosen = {label for label, n in counts.items() if n >= 2}
    chosen |= {label for i, label, _ in labelled if i == first_line and _name_like(label)}
    if len(chosen) < 2:
        rest = [label for label, _ in counts.most_common() if label not in chosen]
        chosen |= set(rest[: 2 - len(chosen)])
    return frozenset(chosen)


def split_transcript(text: str) -> list[Turn] | None:
    """The turns of ``text`` when it is a transcript (None when no line is a turn
    boundary): a speaker's line starts a turn, every other line continues the turn above
    (lines before the first speaker form a turn of their own, speaker None)."""
    lines = text.replace("\r\n", "\n").split("\n")
    speakers = speakers_of(lines)
    if not speakers:
        return None
    boundaries = {i: (label, rest) for i, label, rest in _labels(lines) if label in speakers}
    turns: list[Turn] = []
    speaker: str | None = None
    buffer: list[str] = []
    for i, line in enumerate(lines):
        if i in boundaries:
            if buffer:
                turns.append(Turn(speaker, "\n".join(buffer)))
            speaker, first = boundaries[i]
            buffer = [first]
        elif line.strip():
            buffer.append(line.rstrip() if _in_fence(buffer) else line.strip())
    if buffer:
        turns.append(Turn(speaker, "\n".join(buffer)))
    return turns


def _in_fence(buffer: list[str]) -> bool:
    """Whether the turn being read is inside an open code fence (indentation is kept)."""
    return sum(1 for line in buffer if _FENCE.match(line)) % 2 == 1
