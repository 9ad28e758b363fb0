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
it) is masked wherever it occurs in the text. Findings are attributed by their value
rather than by the engine's line and byte columns, which count UTF-8 bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib.metadata import version

from tulving.domain.detection import MASK_PREFIX, Rule

#: Rule families whose findings are left to Tulving's own rules: the generic ones
#: (``generic-api-key``, ``generic-password``, ``generic-credential-uri``...) judge a value
#: by the name it is assigned to, as Tulving's assignment rule does with checks tuned on
#: agent memory (``password = password``, ``token: 2000`` and references are code, not
#: secrets; betterleaks masks the first). Measured on the corpus: leaving them out loses
#: no example, keeping them masks code lines of the unit tests' negatives.
LEFT_OUT_PREFIXES: tuple[str, ...] = ("generic-",)
#: The shortest secret the engine may report that Tulving masks (no vendor format is
#: shorter; a shorter value is some rule's fragment, not a credential).
MIN_SECRET = 8


def kind_of(rule_id: str) -> str:
    """``"digitalocean-pat"`` -> ``"digitalocean_pat"``; a rule's variant suffix
    (``abuseipdb-api-key.1``) is dropped."""
    return re.sub(r"[^a-z0-9]+", "_", rule_id.split(".", 1)[0].lower()).strip("_")


def _scan(text: str) -> tuple[tuple[str, str], ...]:
    """(rule id, secret) of each finding worth masking."""
    import betterleaks

    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for finding in betterleaks.scan_string(text):
        value = finding.match.value or finding.match.full
        if (finding.rule_id.startswith(LEFT_OUT_PREFIXES) or len(value) < MIN_SECRET
                or value in seen
                or value.startswith(MASK_PREFIX)):
            continue
        seen.add(value)
        out.append((finding.rule_id, value))
    return tuple(out)


def _find(text: str) -> Iterable[tuple[int, int, str]]:
    for rule_id, value in _scan(text):
        kind = kind_of(rule_id)
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
