"""A session's digest without an LLM: what is new and durable in it, never its turns again.

The turns of a session are kept as their own memories (and replayed by frameworks), so a
digest that copies them says everything twice. The digest keeps instead, each line naming
the memories it comes from (``DigestLine.sources``, the back-links):

- what was kept on purpose, as it was stored: decisions (quoted), facts and preferences
  (what extraction or the agent stated), plans and procedures, and the agent's working
  notes the summary replaces (archived, so the digest is the one place they still show);
- of the turns, what a reader needs to find them again: the topics (content words said in
  more than one turn), the named entities and the dates they mention, who spoke, and an
  open question (the user's question the session ended on). None of these is a copy of a
  sentence: a topic is a word, a name is a name, a question is its content words.

Length: what was kept on purpose is kept whole (it is short by nature: one statement
each); what is read off the turns takes at most ``RATIO`` of the turns' characters (at
least ``MIN_CHARS``), because a digest longer than a quarter of what it digests saves too
little over replaying it; in practice the digest of small talk is a few lines. Pure string work: no I/O, no clock.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import attrs

from tulving.domain.entry import MemoryEntry
from tulving.domain.types import MemoryType

#: A digest is at most this share of its sources' characters ...
RATIO = 0.25
#: ... but may always take this many (a header and a line or two).
MIN_CHARS = 240
#: Ids a line names at most (its first sources).
MAX_LINE_SOURCES = 8
TOPICS = 8
NAMES = 10
DATES = 6
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+){0,2})\b")
_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
          r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_DATE = re.compile(
    rf"\b(?:\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}\s+{_MONTH}(?:\s+\d{{4}})?|{_MONTH}\s+\d{{1,2}}"
    rf"(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?|{_MONTH}\s+\d{{4}}|(?:last|next)\s+(?:week|month|"
    rf"year|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)|(?:19|20)\d{{2}})\b")
_SPEAKER = re.compile(r"^\s*([\w .'-]{1,40}):\s")
_STOP = frozenset("""the and for are but not you your with this that have has had was were
will would could should can its it's i'm i've i'd i'll they them their there here what when
where which who whom how why about from into onto over under than then also just very
really much many more most some any all each every other another such only own same too
yes yeah okay sure thanks thank please hello well good great nice cool like love know think
want need going got get make made take took say said tell told see saw look looks feel
felt one two lot lots thing things something anything nothing everything way ways day days
time times today yesterday tomorrow been being did does doing done don't didn't doesn't
isn't wasn't aren't can't won't let let's our ours ourselves we're we've you're you've
he's she's that's what's there's it'll glad happy sounds sound maybe actually definitely
probably pretty quite kind sort still even ever always never again back new old
user assistant""".split())
_NOT_NAMES = frozenset("""I The A An And But Or So If When While What Why How Where Who
Which That This These Those It Its My Your Our Their We You He She They Me Him Her Us Them
Yes No Not Thanks Thank Hello Hi Hey Well Oh Okay Ok Sure Great Good Nice Also Just Really
Maybe Please Let Here There Today Tomorrow Yesterday User Assistant""".split())
_KNOWN = (MemoryType.FACT, MemoryType.PREFERENCE)
_PLANS = (MemoryType.PLAN, MemoryType.PROCEDURE)
_TURNS = (MemoryType.EPISODE, MemoryType.OBSERVATION)


@attrs.frozen
class DigestLine:
    text: str
    sources: tuple[str, ...] = ()


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "\u2026"


def _body(text: str) -> str:
    """A turn's text without its ``Speaker:`` label."""
    match = _SPEAKER.match(text)
    return text[match.end():] if match else text


def _speaker(entry: MemoryEntry) -> str | None:
    speaker = entry.metadata.get("speaker") if isinstance(entry.metadata, dict) else None
    if isinstance(speaker, str) and speaker.strip():
        return speaker.strip()
    match = _SPEAKER.match(entry.content)
    return match.group(1).strip() if match else None


def _ids(entries: Sequence[MemoryEntry]) -> tuple[str, ...]:
    return tuple(e.id for e in entries[:MAX_LINE_SOURCES])


def _kept(title: str, entries: Sequence[MemoryEntry], width: int, quote: bool) -> list[DigestLine]:
    if not entries:
        return []
    lines = [DigestLine(f"{title}:", _ids(entries))]
    for e in entries:
        text = _one_line(e.content, width)
        lines.append(DigestLine(f'- "{text}"' if quote else f"- {text}", (e.id,)))
    return lines


def _topics(turns: Sequence[MemoryEntry]) -> DigestLine | None:
    """Content words said in at least two turns, most turns first."""
    spread: Counter[str] = Counter()
    where: dict[str, list[MemoryEntry]] = {}
    for turn in turns:
        words = {w.casefold() for w in _WORD.findall(_body(turn.content))}
        for word in words - _STOP:
            spread[word] += 1
            where.setdefault(word, []).append(turn)
    common = [(w, n) for w, n in spread.most_common() if n >= 2][:TOPICS]
    if not common:
        return None
    text = "Topics: " + ", ".join(f"{w} ({n} turns)" for w, n in common)
    return DigestLine(text, tuple(dict.fromkeys(
        e.id for w, _ in common for e in where[w][:2]))[:MAX_LINE_SOURCES])


def _names(turns: Sequence[MemoryEntry], speakers: set[str]) -> DigestLine | None:
    seen: Counter[str] = Counter()
    where: dict[str, MemoryEntry] = {}
    for turn in turns:
        for name in _NAME.findall(_body(turn.content)):
            first = name.split()[0]
            if first in _NOT_NAMES or name in speakers:
                continue
            seen[name] += 1
            where.setdefault(name, turn)
    if not seen:
        return None
    names = [n for n, _ in seen.most_common(NAMES)]
    return DigestLine("Named: " + ", ".join(names), tuple(where[n].id for n in names))


def _dates(turns: Sequence[MemoryEntry]) -> DigestLine | None:
    found: dict[str, MemoryEntry] = {}
    for turn in turns:
        for match in _DATE.finditer(_body(turn.content)):
            found.setdefault(" ".join(match.group(0).split()), turn)
    if not found:
        return None
    dates = list(found)[:DATES]
    return DigestLine("Dates mentioned: " + ", ".join(dates), tuple(found[d].id for d in dates))


def _open_question(turns: Sequence[MemoryEntry]) -> DigestLine | None:
    """The question the session ended on, as its content words (not a copy of it)."""
    if not turns:
        return None
    last = turns[-1]
    body = _body(last.content).strip()
    if not body.endswith("?"):
        return None
    question = re.split(r"(?<=[.!?])\s+", body)[-1]
    words = [w for w in _WORD.findall(question) if w.casefold() not in _STOP][:8]
    if not words:
        return None
    who = _speaker(last) or "someone"
    return DigestLine(f"Left open ({who} asked about): {' '.join(words)}", (last.id,))


def distil(entries: Sequence[MemoryEntry], header: str,
           replaced: frozenset[str] = frozenset()) -> list[DigestLine]:
    """The digest of a session's ``entries`` (in the order written), ``header`` first,
    bounded by ``RATIO`` of the sources (see the module doc). The ids in ``replaced`` are
    working notes the digest replaces (they leave search): their text is kept, one line
    each, since nothing else will show it."""
    notes = [e for e in entries if e.id in replaced]
    turns = [e for e in entries if e.type in _TURNS and e.id not in replaced]
    speakers = {s for s in (_speaker(t) for t in turns) if s}
    lines = [DigestLine(header)]
    if turns:
        who = ", ".join(sorted(speakers)) if speakers else "unlabelled turns"
        lines.append(DigestLine(f"Turns: {len(turns)} ({who})", _ids(turns)))
    lines += _kept("Decided", [e for e in entries if e.type is MemoryType.DECISION], 300, True)
    lines += _kept("Known", [e for e in entries if e.type in _KNOWN], 200, False)
    lines += _kept("Plans and procedures", [e for e in entries if e.type in _PLANS], 200, False)
    lines += _kept("Notes", notes, 160, False)
    kept = sum(len(line.text) + 1 for line in lines)
    of_turns = [line for line in (_topics(turns), _names(turns, speakers), _dates(turns),
                                  _open_question(turns)) if line is not None]
    # What was kept on purpose is kept whole; what is read off the turns is bounded by
    # their length (the ratio).
    turn_chars = sum(len(t.content) for t in turns)
    return bounded(lines + of_turns, kept + max(MIN_CHARS, int(RATIO * turn_chars)))


def bounded(lines: list[DigestLine], limit: int) -> list[DigestLine]:
    """The first lines whose text fits in ``limit`` characters, a count of the rest last."""
    out: list[DigestLine] = []
    used = 0
    for n, line in enumerate(lines):
        cost = len(line.text) + 1
        if used + cost > limit and n > 0:
            rest = len(lines) - n
            tail = DigestLine(f"(+{rest} more lines not shown)")
            while out and used + len(tail.text) > limit and len(out) > 1:
                used -= len(out.pop().text) + 1
                tail = DigestLine(f"(+{len(lines) - len(out)} more lines not shown)")
            out.append(tail)
            return out
        out.append(line)
        used += cost
    return out
