"""Credential formats from betterleaks (a secret scanner of the gitleaks lineage with
460+ maintained rules), through its Python binding, as one rule of the domain's rule set.

The engine runs in-process (a Go library behind ctypes) and does its own keyword
prefilter, so a text is handed to it whole: about 10 µs for a line of conversation, a few
hundred µs for a text full of key/token/password words (measured by
``benchmarks/redaction.py``). It never validates what it finds: its rules' ``validate``
blocks (which would send the secret to its vendor) run only under its CLI's
``--validate``, which the binding does not offer, and ``tests/unit`` checks that a scan
opens no socket.

Each finding's secret (``match.value``: the credential itself, not the ``KEY=`` around
it) is masked where the engine found it (its line and UTF-8 byte column, turned into a
character offset), and the first ``EVERYWHERE`` distinct values wherever else they occur.

The engine's cost grows faster than the text on a run of one vendor prefix (100 kB of
``glpat-`` took 1.9 s, 1 MB 91 s): a long text is handed to it in pieces of at most
``PIECE`` characters, cut at a line end or a space where there is one and overlapping by
``OVERLAP`` where there is not, so its cost is linear in the text
(``benchmarks/redaction.py --worst-case``). A credential has no whitespace and is
shorter than the overlap, so a cut never hides one.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

from tulving.domain.detection import MASK_PREFIX, Rule, pause

#: The engine's configuration: its own rules less the generic ones (read the file).
CONFIG = Path(__file__).with_name("betterleaks.toml")
#: Rule families whose findings are left to Tulving's own rules: the generic ones
#: (``generic-api-key``, ``generic-password``, ``generic-credential-uri``...) judge a value
#: by the name it is assigned to, as Tulving's assignment rule does with checks tuned on
#: agent memory (``password = password``, ``token: 2000`` and references are code, not
#: secrets; betterleaks masks the first). Measured on the corpus: leaving them out loses
#: no example, keeping them masks code lines of the unit tests' negatives. They are
#: switched off in ``CONFIG`` too; this filter stays for an engine that ignores it.
LEFT_OUT_PREFIXES: tuple[str, ...] = ("generic-",)
#: The shortest secret the engine may report that Tulving masks (no vendor format is
#: shorter; a shorter value is some rule's fragment, not a credential).
MIN_SECRET = 8
#: The longest text handed to the engine at once, and how much pieces cut inside a
#: token overlap (measured: the engine is linear up to about 16 kB).
PIECE = 8192
OVERLAP = 512
#: Distinct values looked for beyond where the engine found them (each costs one search
#: of the text, so their number is bounded).
EVERYWHERE = 64


def kind_of(rule_id: str) -> str:
    """``"digitalocean-pat"`` -> ``"digitalocean_pat"``; a rule's variant suffix
    (``abuseipdb-api-key.1``) is dropped."""
    return re.sub(r"[^a-z0-9]+", "_", rule_id.split(".", 1)[0].lower()).strip("_")


def pieces(text: str) -> Iterator[tuple[int, str]]:
    """``(offset, piece)`` covering ``text``: pieces of at most ``PIECE`` characters, cut
    after a newline or a space in their last quarter, else overlapping by ``OVERLAP``."""
    at, size = 0, len(text)
    while at < size:
        limit = at + PIECE
        if limit >= size:
            yield at, text[at:]
            return
        floor = limit - PIECE // 4
        cut = text.rfind("\n", floor, limit)
        if cut < 0:
            cut = max(text.rfind(" ", floor, limit), text.rfind("\t", floor, limit))
        if cut >= 0:
            yield at, text[at:cut + 1]
            at = cut + 1
        else:
            yield at, text[at:limit]
            at = limit - OVERLAP


class _Columns:
    """Character offsets of the engine's (line, UTF-8 byte column) positions in a piece."""

    def __init__(self, piece: str) -> None:
        self.piece = piece
        self.ascii = piece.isascii()
        self.lines = [0, *(m.end() for m in re.finditer("\n", piece))]
        self._bytes: dict[int, list[int]] = {}

    def offset(self, line: int, column: int) -> int:
        begin = self.lines[min(max(line, 1), len(self.lines)) - 1]
        if self.ascii:
            return begin + max(column - 1, 0)
        ends = self._bytes.get(begin)
        if ends is None:
            stop = self.piece.find("\n", begin)
            text = self.piece[begin: stop if stop >= 0 else len(self.piece)]
            ends = list(itertools.accumulate(len(c.encode("utf-8", "surrogatepass"))
                                             for c in text))
            self._bytes[begin] = ends
        return begin + bisect.bisect_right(ends, max(column - 1, 0))


def _located(piece: str, columns: _Columns, finding: Any, value: str) -> int:
    """Where ``value`` of ``finding`` starts in ``piece`` (-1 if it is not there)."""
    location = finding.location
    guess = columns.offset(location.start_line, location.start_column)
    if piece.startswith(value, guess):
        return guess
    window = len(finding.match.full or value) + len(value)
    return piece.find(value, max(0, guess - window), guess + 2 * window)


def _scan(text: str) -> Iterator[tuple[str, str, int]]:
    """(rule id, secret, offset) of each finding worth masking, piece by piece."""
    import betterleaks

    for offset, piece in pieces(text):
        pause()
        columns = _Columns(piece)
        for finding in betterleaks.scan_string(piece, config_path=str(CONFIG)):
            value = finding.match.value or finding.match.full
            if (finding.rule_id.startswith(LEFT_OUT_PREFIXES) or len(value) < MIN_SECRET
                    or value.startswith(MASK_PREFIX)):
                continue
            at = _located(piece, columns, finding, value)
            if at < 0:
                at = piece.find(value)  # not where it said: anywhere in the piece
            if at >= 0:
                yield finding.rule_id, value, offset + at


def _find(text: str) -> Iterable[tuple[int, int, str]]:
    values: dict[str, str] = {}
    for rule_id, value, at in _scan(text):
        kind = kind_of(rule_id)
        yield at, at + len(value), kind
        if len(values) < EVERYWHERE:
            values.setdefault(value, kind)
    for value, kind in values.items():  # the same value where the engine did not say
        at = text.find(value)
        while at >= 0:
            yield at, at + len(value), kind
            at = text.find(value, at + len(value))


def available() -> bool:
    """Whether the engine loads here (its wheels cover Linux and Windows)."""
    try:
        import betterleaks

        betterleaks.scan_string("")
    except Exception:  # not installed, or its library does not load on this platform
        return False
    return True


def engine_version() -> str:
    return f"betterleaks {version('betterleaks-py')}" if available() else \
        "betterleaks not installed"


def secret_rules() -> tuple[Rule, ...]:
    """The engine's vendor formats as one rule (it chooses among its own rules by keyword
    itself), or none where it is not installed. Spans are widened to the whole token, as
    for every rule set: a mask never leaves a tail."""
    return (Rule("secret", _find, source="betterleaks"),) if available() else ()
