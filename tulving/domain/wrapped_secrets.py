"""Credentials written so that no rule sees them whole: wrapped in base64 (a Kubernetes
secret's ``DATABASE_URL: cG9zdGdyZXNxbDovL...``), split by string concatenation
(``"ghp_aB3d" + "E5fG..."``, implicit concatenation over two lines), or wrapped over two
lines. Each candidate is unwrapped (decoded, or its parts joined), all of a text's
candidates are scanned together by the credential rules in one pass, and a candidate
whose unwrapped text holds a credential is masked: the whole base64 run, or every part
the credential runs through, with the credential's own kind.

Candidates are bounded in length and found by single passes, and the unwrapped texts
are at most as long as the text, so the cost stays linear in it. The inner scan does
not look for wrapped credentials again (one level of wrapping).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import contextvars
import re
from collections.abc import Callable, Iterable

from tulving.domain.detection import Finder, Finding, longest_run

_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/_\-]{24,8192}={0,2}"
                     r"(?![A-Za-z0-9+/=_\-])")
#: What a decoded credential-bearing text has: a URL, an assignment, a user:password.
_DECODED_HINTS = ("://", "=", ":", "@")
_LITERAL = re.compile(r"(?P<q>[\"'])(?P<c>[^\"'\n\\]{1,512})(?P=q)")
#: Between two literals of one concatenation: ``+``, a line continuation, a newline inside
#: parentheses, or spaces (Python's and C's implicit concatenation).
_JOINER = re.compile(r"\s{0,16}\+\s{0,32}|[ \t]{0,16}\\?\r?\n\s{0,32}|[ \t]{1,16}")
_TOKEN = r"A-Za-z0-9_\-+/="
_WRAPPED_LINE = re.compile(rf"(?<![{_TOKEN}])(?P<a>[{_TOKEN}]{{8,512}})\r?\n"
                           rf"(?P<b>[{_TOKEN}]{{4,512}})(?![{_TOKEN}])")

_inside: contextvars.ContextVar[bool] = contextvars.ContextVar("tulving_unwrapping",
                                                              default=False)
#: One candidate: the spans of its parts in the text, its unwrapped text, and whether a
#: credential in it masks the whole of every part (base64) or the parts it runs through.
Candidate = tuple[list[tuple[int, int]], str, bool]


def _decoded(text: str) -> Iterable[Candidate]:
    for match in _BASE64.finditer(text):
        run = match.group(0)
        padded = run + "=" * (-len(run) % 4)
        try:
            raw = (base64.urlsafe_b64decode(padded) if "-" in run or "_" in run
                   else base64.b64decode(padded, validate=True))
            decoded = raw.decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        if decoded.isprintable() and any(h in decoded for h in _DECODED_HINTS):
            yield [match.span()], decoded, True


def _concatenated(text: str) -> Iterable[Candidate]:
    parts: list[tuple[int, int]] = []
    last_end = -1
    for match in _LITERAL.finditer(text):
        if parts and not _JOINER.fullmatch(text, last_end, match.start()):
            if len(parts) > 1:
                yield parts, "".join(text[s:e] for s, e in parts), False
            parts = []
        parts.append(match.span("c"))
        last_end = match.end()
    if len(parts) > 1:
        yield parts, "".join(text[s:e] for s, e in parts), False


def _wrapped_lines(text: str) -> Iterable[Candidate]:
    for match in _WRAPPED_LINE.finditer(text):
        joined = match.group("a") + match.group("b")
        if any(c.isdigit() for c in joined):
            yield [match.span("a"), match.span("b")], joined, False


def may_hold_wrapped(text: str) -> bool:
    """A cheap gate: a quote, a line break, or a run long enough to be base64."""
    return "'" in text or '"' in text or "\n" in text or longest_run(text) >= 24


def wrapped_finder(scan: Callable[[str], list[Finding]]) -> Finder:
    """A finder of wrapped credentials, ``scan`` (the credential rules) reading the
    unwrapped candidates of a text in one call. The parts of a split candidate are read
    too: a credential the joined text shows is a split one only where it runs over two
    parts and no part holds a credential there by itself (``ghp_...`` at a line's end is
    found by the other rules, and the next line's first word is not part of it)."""

    def find(text: str) -> Iterable[tuple[int, int, str]]:
        if _inside.get():
            return
        candidates = [*_decoded(text), *_concatenated(text), *_wrapped_lines(text)]
        if not candidates:
            return
        pieces: list[str] = []
        starts: list[int] = []
        owners: list[tuple[int, int]] = []  # (candidate, -1 for the whole or part index)
        at = 0
        for i, (parts, unwrapped, whole) in enumerate(candidates):
            for j, piece in ((-1, unwrapped), *(() if whole else (
                    (j, text[s:e]) for j, (s, e) in enumerate(parts)))):
                starts.append(at)
                pieces.append(piece)
                owners.append((i, j))
                at += len(piece) + 1
        token = _inside.set(True)
        try:
            findings = scan("\n".join(pieces))
        finally:
            _inside.reset(token)
        alone: set[tuple[int, int]] = set()  # (candidate, part) holding a credential
        joined: list[tuple[int, int, int, str]] = []
        for finding in findings:
            k = bisect.bisect_right(starts, finding.start) - 1
            i, j = owners[k]
            if j >= 0:
                alone.add((i, j))
            else:
                joined.append((i, finding.start - starts[k], finding.end - starts[k],
                               finding.kind))
        for i, begin, end, kind in joined:
            parts, _unwrapped, whole = candidates[i]
            if whole:
                for start, stop in parts:
                    yield start, stop, kind
                continue
            offset, touched = 0, []
            for j, (start, stop) in enumerate(parts):
                if begin < offset + (stop - start) and end > offset:
                    touched.append(j)
                offset += stop - start
            if len(touched) > 1 and not any((i, j) in alone for j in touched):
                for j in touched:
                    yield parts[j][0], parts[j][1], kind
    return find
