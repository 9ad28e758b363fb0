"""Contact details as rules of the domain's rule set: phone numbers checked by
``phonenumbers`` (Google's libphonenumber metadata: which numbers exist in which
country, and how each country writes them), and IP addresses by the standard library's
``ipaddress``. Emails are the domain's own (a shape needs no library).

A phone number is one of:

- **international**: ``+`` (or ``00``) and a country code, valid for that country
  (E.164 with or without spaces: ``+44 20 7946 0958``, ``+14155550132``);
- **national**, in one of ``NATIONAL`` regions' own written form, nine digits or more:
  valid there *and* grouped exactly as that country prints it (``020 7946 0958`` in the UK, ``(415)
  555-0132`` in the US, ``01 23 45 67 89`` in France, ``03-1234-5678`` in Japan). A bare
  run of digits is never a national number: it is an id, a total or a timestamp as often.

An IP address is masked when it is a public (global) one: it can point at a person's
connection. Private, loopback, link-local and documentation ranges name machines of a
network (``127.0.0.1:8780``, ``10.0.0.5``) and are left alone.

Cost: every candidate is bounded in length and checked without ``phonenumbers.parse``
(the number is built from its digits and checked only in the regions whose numbers have
that many digits), and checks are cached, so a text of phone-like groups costs time
linear in its length (``benchmarks/redaction.py --worst-case``).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable

from tulving.domain.detection import Rule

#: Regions whose national written form is recognised (besides international numbers
#: from every country): the ten most common in the dev data's languages and more.
NATIONAL = ("US", "GB", "DE", "FR", "IT", "ES", "NL", "BR", "IN", "JP", "AU", "MX", "CN",
            "KR", "TW")

# Digits in groups with single separators, optionally an area code in parentheses: at
# most 24 characters, starting where no word, number or dotted name runs into it.
_PHONE = re.compile(
    r"(?<![\w+.\-@:])(?:\+\d{7,15}|(?:(?:\+|00)\d{1,4}[ \-.]?)?"
    r"(?:\(\d{1,5}\)[ \-.]?|\d{1,6}[ \-.])?\d{1,6}(?:[ \-.]\d{1,8}){0,5})"
    r"(?![\w\-]|[.,]\d)")
_GROUPS = re.compile(r"\d+")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.])(?=[0-9A-Fa-f:]*::|(?:[0-9A-Fa-f]{1,4}:){7})"
                   r"[0-9A-Fa-f:]{2,39}(?![\w:])")


def _groups(written: str) -> tuple[int, ...]:
    return tuple(len(g) for g in _GROUPS.findall(written))


@functools.lru_cache(maxsize=1)
def _plans() -> dict[str, tuple[int, str | None, frozenset[int]]]:
    """Region -> (country code, trunk prefix, possible national number lengths)."""
    import phonenumbers

    plans = {}
    for region in NATIONAL:
        meta = phonenumbers.PhoneMetadata.metadata_for_region(region)
        if meta is not None and meta.country_code is not None and meta.general_desc:
            plans[region] = (int(meta.country_code), meta.national_prefix,
                             frozenset(meta.general_desc.possible_length))
    return plans


@functools.lru_cache(maxsize=8192)
def is_phone(written: str) -> bool:
    """Whether ``written`` (a candidate as it stands in the text) is a phone number."""
    import phonenumbers

    digits = "".join(_GROUPS.findall(written))
    if not 7 <= len(digits) <= 15:
        return False
    if written.startswith(("+", "00")):
        international = "+" + (digits[2:] if written.startswith("00") else digits)
        try:
            parsed = phonenumbers.parse(international, None)
        except phonenumbers.NumberParseException:
            return False
        return bool(phonenumbers.is_valid_number(parsed))
    groups = _groups(written)
    if len(groups) < 2 or len(digits) < 9:
        return False  # a bare run of digits, or "1600-1046": an id, a range, a year span
    for region, (code, trunk, lengths) in _plans().items():
        national = digits[len(trunk):] if trunk and digits.startswith(trunk) else digits
        if len(national) not in lengths:
            continue
        number = phonenumbers.PhoneNumber(
            country_code=code, national_number=int(national),
            italian_leading_zero=national.startswith("0") or None)
        if not phonenumbers.is_valid_number_for_region(number, region):
            continue
        shown = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
        if _groups(shown) == groups:
            return True
    return False


def _phones(text: str) -> Iterable[tuple[int, int]]:
    for match in _PHONE.finditer(text):
        if is_phone(match.group(0)):
            yield match.span()


def is_public_address(written: str) -> bool:
    """A global unicast address, and not an outline number (``2.3.1.1``: four single
    digits are a section as often; the public ones among them are resolvers)."""
    if re.fullmatch(r"\d\.\d\.\d\.\d", written):
        return False
    try:
        address = ipaddress.ip_address(written)
    except ValueError:
        return False
    return bool(address.is_global) and not address.is_multicast


def _addresses(text: str) -> Iterable[tuple[int, int]]:
    for pattern in (_IPV4, _IPV6):
        for match in pattern.finditer(text):
            if is_public_address(match.group(0)):
                yield match.span()


def contact_rules() -> tuple[Rule, ...]:
    """Phones (seven digits or more) and public IP addresses."""
    return (Rule("phone", _phones, whole_token=False, source="phonenumbers", min_digits=7),
            Rule("ip_address", _addresses, triggers=(".", ":"), whole_token=False,
                 source="ipaddress", min_digits=2))
