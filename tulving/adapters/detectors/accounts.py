"""Payment card numbers and IBANs, checked by python-stdnum (``stdnum.luhn``,
``stdnum.iban``: the check digits, and for an IBAN its country's length and layout), as
identifier rules of the domain's rule set.

A Luhn check alone passes one number in ten: 1.65 % of Python float reprs
(``0.4111...``) and order totals in cents were masked as cards. So a number is a card
only with *card context*, besides its issuer's prefix (IIN), the length that issuer uses
and a valid check digit:

- written in a card's own grouping (``4111 1111 1111 1111``, Amex ``3782 822463 10005``),
  or
- after a word that names a card or a payment (``card``, ``visa``, ``amex``, ``paid
  with``...) a few words before it;

and never as the fraction or the integer part of a decimal number. An IBAN is found in
any letter case (``de89 3704 ...`` is as much an account as ``DE89 3704 ...``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tulving.domain.detection import Rule

_CARD = re.compile(r"(?<![\w\-.,])\d(?:[ \-]?\d){12,18}(?![\w\-]|[.,]\d)")
#: Group lengths cards are printed in, by their number of digits.
GROUPINGS = {13: ((4, 4, 5),), 14: ((4, 6, 4),), 15: ((4, 6, 5),), 16: ((4, 4, 4, 4),),
             19: ((4, 4, 4, 4, 3), (6, 13))}
#: Words that make a bare run of digits a card number when they come just before it.
CARD_WORDS = re.compile(
    r"(?i:\b(?:card|cards|credit|debit|visa|mastercard|master card|mc|amex|american express"
    r"|discover|diners|jcb|maestro|unionpay|cc|ccn|cc#|pan|paid with|pay with|payment"
    r"|charged to|charge it to|kreditkarte|carte|tarjeta)\b)")
#: How far before a number its card word may be (a few words: "card on file", "paid with").
WINDOW = 32

#: Compact, or in the groups of four it is printed in (the last one shorter): a group of
#: prose after it ("... 7034 then") is tried off again (``_ibans``).
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[A-Za-z0-9]{11,30}"
                   r"|(?: [A-Za-z0-9]{4}){2,7}(?: [A-Za-z0-9]{1,3})?)(?![A-Za-z0-9])")


def issuer_length_ok(digits: str) -> bool:
    """Issuer prefixes of the major networks (Visa, Mastercard, Amex, Discover, Diners,
    JCB) with the lengths each issues."""
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


def grouped_as_card(written: str, digits: str) -> bool:
    groups = tuple(len(g) for g in re.split(r"[ \-]", written))
    return len(groups) > 1 and groups in GROUPINGS.get(len(digits), ())


def _cards(text: str) -> Iterable[tuple[int, int]]:
    from stdnum import luhn

    for match in _CARD.finditer(text):
        written = match.group(0)
        digits = re.sub(r"\D", "", written)
        if not issuer_length_ok(digits) or not luhn.is_valid(digits):
            continue
        start = match.start()
        if grouped_as_card(written, digits) or CARD_WORDS.search(
                text, max(0, start - WINDOW), start):
            yield match.span()


def _ibans(text: str) -> Iterable[tuple[int, int]]:
    from stdnum import iban

    for match in _IBAN.finditer(text):
        written = match.group(0)
        while len(written) >= 15:
            if iban.is_valid(written):
                yield match.start(), match.start() + len(written)
                break
            cut = written.rfind(" ")
            if cut < 0:
                break
            written = written[:cut]


def account_rules() -> tuple[Rule, ...]:
    """Cards (13 digits or more) and IBANs (more than seven)."""
    return (Rule("card_number", _cards, whole_token=False, source="python-stdnum",
                 min_digits=13),
            Rule("iban", _ibans, whole_token=False, source="python-stdnum", min_digits=8))
