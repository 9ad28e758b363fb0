"""Finding personal data in text: contact details (emails, phones) and identifiers
(card numbers, IBANs, and national ids from the installed rule set: US SSN, Canadian SIN,
UK NHS number, Aadhaar, CPF, DNI/NIE, codice fiscale, NIR, personnummer, HETU).

Precision is bought with checksums and shapes rather than loose patterns: a 16-digit
number is a card only if it passes the Luhn check and starts like a card network's
number; an IBAN only if its mod-97 check holds; a national id only in its written shape
and with its own check digits (python-stdnum's validators); a phone only in E.164 form
(``+`` and country code) or the North American ``(555) 123-4567`` shape, so dates,
versions, ids and port numbers in agent memory are left alone. Identifiers are masked at
every door that shows text; contact details only under a ``pii`` write policy.
``<private>...</private>`` sections are the author's own explicit marking and are removed
outright.
"""

from __future__ import annotations

import re

import attrs

from tulving.domain import rule_sets
from tulving.domain.detection import MASK_PREFIX, RuleBook, enough_digits

#: Kinds found without a rule set; the rule set's identifiers add their own kinds.
PII_KINDS = ("email", "phone", "card_number", "iban")


@attrs.frozen
class PiiMatch:
    kind: str
    start: int
    end: int


_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9\-])"
)
# E.164-ish: +CC then 6..14 more digits in groups; or the NANP (555) 123-4567 shape.
_PHONE_INTL = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .\-]?\(?\d{1,4}\)?){2,6}(?![\w])")
_PHONE_NANP = re.compile(r"(?<![\w\-.])\(?\d{3}\)?[ .\-]\d{3}[ .\-]\d{4}(?![\w\-.])")
_CARD = re.compile(r"(?<![\w\-])\d(?:[ \-]?\d){12,18}(?![\w\-])")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])")


def luhn_valid(digits: str) -> bool:
    """The Luhn mod-10 check of card numbers (``digits`` holds only 0-9)."""
    total = 0
    for i, char in enumerate(reversed(digits)):
        d = ord(char) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card_prefix_ok(digits: str) -> bool:
    """Issuer prefixes of the major networks (Visa, Mastercard, Amex, Discover, Diners, JCB)."""
    if digits[0] == "4":
        return len(digits) in (13, 16, 19)
    two, four = int(digits[:2]), int(digits[:4])
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return len(digits) == 16
    if two in (34, 37):
        return len(digits) == 15
    if digits.startswith(("6011", "65")) or 644 <= int(digits[:3]) <= 649:
        return len(digits) in (16, 19)
    if two in (36, 38) or 300 <= int(digits[:3]) <= 305:
        return len(digits) in (14, 16)
    if 3528 <= four <= 3589:
        return len(digits) in (16, 19)
    return False


def iban_valid(candidate: str) -> bool:
    """ISO 13616 mod-97 check: move the first four characters to the end, letters to
    numbers (A=10 ... Z=35); a valid IBAN leaves remainder 1."""
    text = candidate.replace(" ", "").upper()
    if not 15 <= len(text) <= 34 or not text.isalnum():
        return False
    rearranged = text[4:] + text[:4]
    number = "".join(str(int(c, 36)) for c in rearranged)
    return int(number) % 97 == 1


def _digit_count(text: str) -> int:
    return sum(c.isdigit() for c in text)


#: A card number has 13 digits or more, an IBAN more than seven: counted before scanning.
_MAY_BE_ACCOUNT = enough_digits(8)


_books: dict[int, tuple[rule_sets.RuleSets, RuleBook]] = {}


def _book() -> RuleBook:
    """The identifier rules compiled once per installed rule set (each keyword looked
    for once, not once per rule that names it)."""
    sets = rule_sets.current()
    cached = _books.get(id(sets))
    if cached is None or cached[0] is not sets:
        cached = (sets, RuleBook(sets.identifiers))
        _books.clear()
        _books[id(sets)] = cached
    return cached[1]


def find_identifiers(text: str) -> list[PiiMatch]:
    """Card numbers, IBANs and national ids: what identifies a person or an account."""
    found: list[PiiMatch] = []
    book = _book()
    if book.rules:
        found.extend(PiiMatch(f.kind, f.start, f.end) for f in book.find(text))
    if not _MAY_BE_ACCOUNT(text):
        return found
    for m in _IBAN.finditer(text):
        if iban_valid(m.group(0)):
            found.append(PiiMatch("iban", m.start(), m.end()))
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and _card_prefix_ok(digits) and luhn_valid(digits):
            found.append(PiiMatch("card_number", m.start(), m.end()))
    return found


def find_pii(text: str) -> list[PiiMatch]:
    """Non-overlapping PII spans in ``text``, in order of position."""
    found: list[PiiMatch] = []
    for m in _EMAIL.finditer(text):
        found.append(PiiMatch("email", m.start(), m.end()))
    found.extend(find_identifiers(text))
    for pattern in (_PHONE_INTL, _PHONE_NANP):
        for m in pattern.finditer(text):
            if 7 <= _digit_count(m.group(0)) <= 15:
                found.append(PiiMatch("phone", m.start(), m.end()))
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
