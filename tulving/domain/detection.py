"""Finding sensitive spans in text with rules given as data, and masking them.

The engine is pure: a ``Rule`` is a kind, a function that yields ``(start, end)`` spans of
a text, and the literal fragments one of which the text must hold for the rule to be worth
running (a rule without fragments always runs). Where the rules come from is not this
module's business (see :mod:`rule_sets`): Tulving's own context rules live in
:mod:`redaction`, the vendor formats come from a maintained rule set loaded by an adapter.

A span is widened to the whole token it sits in, because rule sets often describe a
credential by its prefix and a minimum length (``sk_live_`` + 24 characters) while the
real value runs on: a mask must never leave the tail of a key visible.

Cost is linear in the text whatever it holds: a text made of one vendor prefix repeated
(``AKIAAKIA...``, ``xoxb-1-xoxb-1-...``) has a finding every few characters, all inside
one token, and widening each finding by walking its token made a 100 kB text cost
minutes. Tokens are found once per text (:class:`_Tokens`) and each finding widened by a
binary search; masks already in the text are searched the same way. A scan also stops
where its caller's time is up: :func:`pause` runs the :data:`checkpoint` the application
sets for the call (a server's ``--timeout``) between rules and between lines.
"""

from __future__ import annotations

import bisect
import contextvars
import re
from collections.abc import Callable, Iterable, Sequence

import attrs

MASK_PREFIX = "[REDACTED:"
_MASK = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
#: Characters a credential token may start with (not ``=``, ``/`` or ``+``: "key=", a URL
#: path), and those it runs on with (a dot only inside one, as in a JWT; base64's ``+/=``).
_TOKEN_HEAD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
#: Maximal runs of the characters above: a span is widened to the runs around its ends.
_HEAD_RUNS = re.compile(r"[A-Za-z0-9_\-]+")
_TAIL_RUNS = re.compile(r"(?:[A-Za-z0-9_\-+/=]|\.(?=[A-Za-z0-9_\-]))+")

#: What a long scan calls between its steps (between rules, between lines): set by the
#: application around a call that has a time limit, and raising when it has passed (the
#: domain knows no clock). A context variable, so each call's scan checks its own limit.
checkpoint: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "tulving_scan_checkpoint", default=None)


def pause() -> None:
    """A safe point of a scan: the caller's checkpoint, if it set one (it may raise)."""
    check = checkpoint.get()
    if check is not None:
        check()

#: Spans ``(start, end)`` of a text, or ``(start, end, kind)`` to name another kind.
Finder = Callable[[str], Iterable[tuple[int, int] | tuple[int, int, str]]]


def mask(kind: str) -> str:
    return f"{MASK_PREFIX}{kind}]"


@attrs.frozen
class Rule:
    """One kind of sensitive value. ``triggers`` are matched as they are written,
    ``itriggers`` (lower case) against the lower-cased text; with neither, the rule always
    runs. ``whole_token``: widen each span to the token around it (off for values that
    are not tokens, such as a PEM block or a number with spaces)."""

    kind: str
    find: Finder
    triggers: tuple[str, ...] = ()
    itriggers: tuple[str, ...] = ()
    whole_token: bool = True
    source: str = "tulving"
    #: A cheap necessary condition for the rule to match at all, tested after the
    #: triggers (such as "seven digits or more": see ``enough_digits``).
    gate: Callable[[str], bool] | None = None
    #: The fewest digits any match holds: a ``RuleBook`` counts a text's digits once and
    #: skips the rules that need more (before looking for their triggers when every
    #: rule of the book needs some). 0: no such bound.
    min_digits: int = 0
    #: The shortest run of token characters (letters, digits, ``_-+/=``) any match
    #: holds: a text whose longest run is shorter is skipped. 0: no such bound.
    min_run: int = 0

    def may_match(self, text: str, lowered: str) -> bool:
        if (self.triggers or self.itriggers) and not (
                any(t in text for t in self.triggers)
                or any(t in lowered for t in self.itriggers)):
            return False
        if self.min_run and longest_run(text, self.min_run) < self.min_run:
            return False
        if self.min_digits and digit_count(text) < self.min_digits:
            return False
        return self.gate is None or self.gate(text)


_RUNS = re.compile(r"[A-Za-z0-9_\-+/=]{8,}")


def longest_run(text: str, at_least: int = 8) -> int:
    """Length of the longest run of token characters in ``text`` if it is ``at_least``
    8 long, else 0 (prose has few runs that long, so this is one quick pass)."""
    return max(map(len, _RUNS.findall(text)), default=0)


def digit_count(text: str) -> int:
    return sum(map(text.count, "0123456789"))


def enough_digits(least: int) -> Callable[[str], bool]:
    """A gate: the text holds at least ``least`` digits (ten C-level counts, far cheaper
    than any pattern that could look for them)."""
    def gate(text: str) -> bool:
        return sum(map(text.count, "0123456789")) >= least
    return gate


@attrs.frozen
class Finding:
    kind: str
    start: int
    end: int


def regex_finder(pattern: re.Pattern[str], group: str | int = 0) -> Finder:
    """Spans of ``group`` of every match of ``pattern`` (skipped where it did not take part)."""
    def find(text: str) -> Iterable[tuple[int, int]]:
        for match in pattern.finditer(text):
            start, end = match.span(group)
            if start >= 0 and end > start:
                yield start, end
    return find


class _Runs:
    """The maximal runs of one pattern in a text, found in one pass, for widening any
    number of spans by binary search (a run is found once, however many findings it
    holds)."""

    def __init__(self, text: str, pattern: re.Pattern[str]) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        for match in pattern.finditer(text):
            self.starts.append(match.start())
            self.ends.append(match.end())

    def around(self, at: int) -> tuple[int, int] | None:
        """The run holding position ``at``, or None."""
        i = bisect.bisect_right(self.starts, at) - 1
        if i >= 0 and at < self.ends[i]:
            return self.starts[i], self.ends[i]
        return None


class _Tokens:
    """Widening of spans to their tokens in one text: ``_TOKEN_HEAD`` characters before
    a span's start, ``_TAIL_RUNS`` after its end (what a walk of the token found, in
    time linear in the text for all spans together)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._heads: _Runs | None = None
        self._tails: _Runs | None = None

    def widen(self, start: int, end: int) -> tuple[int, int]:
        text = self.text
        if start > 0 and text[start - 1] in _TOKEN_HEAD:
            if self._heads is None:
                self._heads = _Runs(text, _HEAD_RUNS)
            run = self._heads.around(start - 1)
            if run is not None:
                start = min(start, run[0])
        if end < len(text):
            if self._tails is None:
                self._tails = _Runs(text, _TAIL_RUNS)
            run = self._tails.around(end)
            if run is not None:
                end = max(end, run[1])
        return start, end


class _Masked:
    """The masks already in a text (sorted, disjoint): whether a span lies inside one."""

    def __init__(self, text: str) -> None:
        spans = [m.span() for m in _MASK.finditer(text)] if MASK_PREFIX in text else []
        self.starts = [s for s, _ in spans]
        self.ends = [e for _, e in spans]

    def holds(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self.starts, start) - 1
        return i >= 0 and end <= self.ends[i]


class RuleBook:
    """Rules compiled for scanning many texts: each trigger fragment is looked for once
    (not once per rule that names it), and only the rules whose fragments turned up (and
    whose gate, if any, opens) run their own patterns."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = tuple(rules)
        self._always = frozenset(i for i, r in enumerate(self.rules)
                                 if not r.triggers and not r.itriggers)
        exact: dict[str, list[int]] = {}
        folded: dict[str, list[int]] = {}
        for i, rule in enumerate(self.rules):
            for t in rule.triggers:
                exact.setdefault(t, []).append(i)
            for t in rule.itriggers:
                folded.setdefault(t.lower(), []).append(i)
        self._exact = tuple(exact.items())
        self._folded = tuple(folded.items())
        #: every rule needs this many digits at least: counted before anything else
        self._least_digits = min((r.min_digits for r in self.rules), default=0)

    def candidates(self, text: str) -> list[Rule]:
        """The rules worth running on ``text``, in their original order."""
        digits = -1
        if self._least_digits:
            digits = digit_count(text)
            if digits < self._least_digits:
                return []
        chosen = set(self._always)
        for fragment, owners in self._exact:
            if fragment in text:
                chosen.update(owners)
        if self._folded:
            lowered = text.lower()
            for fragment, owners in self._folded:
                if fragment in lowered:
                    chosen.update(owners)
        out = []
        longest = -1
        for i in sorted(chosen):
            rule = self.rules[i]
            if rule.min_digits:
                if digits < 0:
                    digits = digit_count(text)
                if digits < rule.min_digits:
                    continue
            if rule.min_run:
                if longest < 0:
                    longest = longest_run(text)
                if longest < rule.min_run:
                    continue
            if rule.gate is None or rule.gate(text):
                out.append(rule)
        return out

    def find(self, text: str) -> list[Finding]:
        return find_all(text, self.candidates(text), checked=True)


def find_all(text: str, rules: Sequence[Rule], *, checked: bool = False) -> list[Finding]:
    """Non-overlapping findings in position order; where spans overlap they are merged
    into one (the kind of the earliest, longest one). Spans inside an existing mask are
    ignored, so masking is idempotent. ``checked``: the rules' triggers were already
    tested (by a ``RuleBook``)."""
    lowered = "" if checked else text.lower()
    masks = _Masked(text)
    tokens = _Tokens(text)
    found: list[Finding] = []
    for rule in rules:
        if not checked and not rule.may_match(text, lowered):
            continue
        pause()
        for span in rule.find(text):
            start, end = span[0], span[1]
            kind = span[2] if len(span) > 2 else rule.kind
            if rule.whole_token:
                start, end = tokens.widen(start, end)
            if masks.holds(start, end):
                continue
            found.append(Finding(kind, start, end))
    return merge(found)


def merge(findings: Iterable[Finding]) -> list[Finding]:
    """Findings sorted by position, overlapping ones merged into one (the kind of the
    earliest, longest)."""
    found = sorted(findings, key=lambda f: (f.start, -(f.end - f.start)))
    if not found:
        return []
    merged = [found[0]]
    for item in found[1:]:
        last = merged[-1]
        if item.start < last.end:
            if item.end > last.end:
                merged[-1] = Finding(last.kind, last.start, item.end)
            continue
        merged.append(item)
    return merged


def apply_masks(text: str, findings: Sequence[Finding]) -> str:
    """``text`` with each finding replaced by ``[REDACTED:<kind>]`` (findings sorted and
    disjoint, as ``find_all`` returns them)."""
    if not findings:
        return text
    parts: list[str] = []
    last = 0
    for f in findings:
        parts.append(text[last:f.start])
        parts.append(mask(f.kind))
        last = f.end
    parts.append(text[last:])
    return "".join(parts)
