"""Finding personal data in text: identifiers (card numbers, IBANs and national ids) and
contact details (emails, phone numbers, public IP addresses), from the installed rule set
(python-stdnum, phonenumbers) and Tulving's own email shape.

Precision is bought with checksums and shapes rather than loose patterns: a card only
with a valid check digit, its issuer's prefix and length, and card context (written in a
card's grouping, or after a card word); an IBAN only if its country's layout and mod-97
check hold (in any letter case); a national id only in its written shape and with its
own check digits; a phone only in international form or in a country's own national
form (valid there, grouped as that country prints it), so dates, versions, ids and port
numbers in agent memory are left alone. Identifiers are masked at every door that shows
text; contact details wherever text leaves the doors (spans, logs, redacted exports) and
under a ``pii`` write policy. ``<private>...</private>`` sections are the author's own
explicit marking and are removed outright.
"""

from __future__ import annotations

import re

import attrs

from tulving.domain import rule_sets
from tulving.domain.detection import MASK_PREFIX, Rule, RuleBook, regex_finder

#: Kinds found without a rule set; the rule set's identifiers add their own kinds.
PII_KINDS = ("email", "phone", "ip_address", "card_number", "iban")


@attrs.frozen
class PiiMatch:
    kind: str
    start: int
    end: int


# a local part (not a URL's user: ssh://git@host), then at most eight labels and a top-level domain: bounded, so a run of
# "a.a.a." costs its length, never a match tried from every dot to the end
_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+\-])(?<!//)[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.){1,8}[A-Za-z]{2,24}"
    r"(?![A-Za-z0-9\-])"
)
EMAIL_RULE = Rule("email", regex_finder(_EMAIL), triggers=("@",), whole_token=False)

_books: dict[str, tuple[rule_sets.RuleSets, RuleBook]] = {}


def _book(which: str = "identifiers") -> RuleBook:
    """The identifier (or contact) rules compiled once per installed rule set (each
    keyword looked for once, not once per rule that names it)."""
    sets = rule_sets.current()
    cached = _books.get(which)
    if cached is None or cached[0] is not sets:
        rules = sets.identifiers if which == "identifiers" else (EMAIL_RULE, *sets.contacts)
        cached = (sets, RuleBook(rules))
        _books[which] = cached
    return cached[1]


def find_identifiers(text: str) -> list[PiiMatch]:
    """Card numbers, IBANs and national ids: what identifies a person or an account."""
    book = _book()
    if not book.rules:
        return []
    return [PiiMatch(f.kind, f.start, f.end) for f in book.find(text)]


def find_contacts(text: str) -> list[PiiMatch]:
    """Emails, phone numbers and public IP addresses: how to reach a person."""
    return [PiiMatch(f.kind, f.start, f.end) for f in _book("contacts").find(text)]


def find_pii(text: str) -> list[PiiMatch]:
    """Non-overlapping PII spans in ``text``, in order of position."""
    found = [*find_contacts(text), *find_identifiers(text)]
    found.sort(key=lambda p: (p.start, -(p.end - p.start)))
    kept: list[PiiMatch] = []
    for match in found:
        if kept and match.start < kept[-1].end:
            continue  # an IBAN's digits are not also a phone number
        kept.append(match)
    return kept


def redact_pii(text: str) -> tuple[str, list[str]]:
    """``text`` with every PII span replaced by ``[REDACTED:<kind>]``, and the kinds."""
    matches = find_pii(text)
    if not matches:
        return text, []
    parts: list[str] = []
    last = 0
    for m in matches:
        parts.append(text[last : m.start])
        parts.append(f"{MASK_PREFIX}{m.kind}]")
        last = m.end
    parts.append(text[last:])
    return "".join(parts), [m.kind for m in matches]


_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)


def strip_private(text: str) -> tuple[str, int]:
    """``text`` without its ``<private>...</private>`` sections (an unclosed one runs to
    the end: failing closed), and how many were removed."""
    cleaned, count = _PRIVATE.subn("", text)
    if count:
        cleaned = re.sub(r"[ \t]{2,}", " ", cleaned)
        cleaned = re.sub(r"\n{3,}", "\n\n", cleaned).strip()
    return cleaned, count
