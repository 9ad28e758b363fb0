"""National identifiers, found by their written shape and confirmed by python-stdnum's
validators (check digits, valid dates and ranges, known invalid numbers): a shape alone
would mask every part number, a validator alone has nothing to look at.

Shapes ask for the separators people write (``123-45-6789``, ``390.533.447-05``) so that
bare runs of digits (ids, timestamps, amounts) are never candidates. Left out: identifiers
written exactly like something common, where a check digit alone (one chance in ten or
eleven) would mask too much: the UK NHS number (``943 476 5919`` is a US phone number's
shape), 12-digit personnummer (a build stamp's), and bare 9- or 11-digit national numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from stdnum.br import cpf
from stdnum.ca import sin
from stdnum.es import dni, nie
from stdnum.fi import hetu
from stdnum.fr import nir
from stdnum.in_ import aadhaar
from stdnum.it import codicefiscale
from stdnum.se import personnummer
from stdnum.us import ssn

from tulving.domain.detection import Rule, enough_digits

_EDGE_L, _EDGE_R = r"(?<![\w\-.])", r"(?![\w\-]|\.\d)"

#: kind -> (candidate shape, validator). Kinds name the country and the number.
SHAPES: dict[str, tuple[str, Callable[[str], bool]]] = {
    "us_ssn": (r"\d{3}(?P<s1>[- ])\d{2}(?P=s1)\d{4}", ssn.is_valid),
    "ca_sin": (r"\d{3}(?P<s2>[- ])\d{3}(?P=s2)\d{3}", sin.is_valid),
    "in_aadhaar": (r"[2-9]\d{3}(?P<s3>[- ])\d{4}(?P=s3)\d{4}", aadhaar.is_valid),
    "br_cpf": (r"\d{3}\.\d{3}\.\d{3}-\d{2}", cpf.is_valid),
    "es_dni": (r"\d{8}-?[A-Z]", dni.is_valid),
    "es_nie": (r"[XYZ]-?\d{7}-?[A-Z]", nie.is_valid),
    "it_codice_fiscale": (r"[A-Z]{6}[0-9LMNP-V]{2}[A-EHLMPR-T][0-9LMNP-V]{2}[A-Z]"
                          r"[0-9LMNP-V]{3}[A-Z]", codicefiscale.is_valid),
    "fr_nir": (r"[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}", nir.is_valid),
    # the 10-digit written form only: 8 digits, a dash and 4 are build stamps as often
    "se_personnummer": (r"\d{6}[-+]\d{4}", personnummer.is_valid),
    "fi_hetu": (r"\d{6}[-+A-FU-Y]\d{3}[0-9A-FHJ-NPR-Y]", hetu.is_valid),
}
#: Every shape holds a digit: texts without one are skipped outright.
_DIGITS = tuple("0123456789")
#: Every shape above holds seven digits or more (a NIE has the fewest; a codice fiscale
#: written with omocodia letters could have fewer, and is that rare): counted first, so a
#: turn with a date in it ("8 May 2023") is not scanned; then one quick pattern that every
#: shape contains (digits and separators in a row, or a NIE's, HETU's or codice fiscale's
#: letters beside digits), so a long text full of dates is not scanned either.
_SEVEN_DIGITS = enough_digits(7)
_ZONE = re.compile(r"\d[\d .\-+]{5,}[\dA-Z]|[A-Z]{6}[0-9LMNP-V]{2}|\d{6}[A-FU-Y]\d{3}")


def gate(text: str) -> bool:
    return _SEVEN_DIGITS(text) and _ZONE.search(text) is not None


def _combined() -> Callable[[str], Iterable[tuple[int, int, str]]]:
    """One pass over the text for all shapes (an alternation of named groups), then the
    validator of the shape that matched: one scan instead of one per country."""
    pattern = re.compile(_EDGE_L + "(?:" + "|".join(
        f"(?P<{kind}>{shape})" for kind, (shape, _valid) in SHAPES.items()) + ")" + _EDGE_R)
    validators = {kind: valid for kind, (_shape, valid) in SHAPES.items()}
    alone = {kind: re.compile(shape) for kind, (shape, _valid) in SHAPES.items()}

    def valid(kind: str, value: str) -> bool:
        try:
            return bool(validators[kind](value))
        except Exception:  # a validator's own parsing failure: not a number of its kind
            return False

    def find(text: str) -> Iterable[tuple[int, int, str]]:
        for match in pattern.finditer(text):
            value = match.group(0)
            first = match.lastgroup
            # the alternation tried the shapes in order: a value another shape also fits
            # (051172-3609 is written like a personnummer and is a HETU) gets that one too
            kinds = [first] if first is not None else []
            kinds += [k for k in alone if k != first and alone[k].fullmatch(value)]
            for kind in kinds:
                if valid(kind, value):
                    yield match.start(), match.end(), kind
                    break
    return find


def identifier_rules() -> tuple[Rule, ...]:
    return (Rule("national_id", _combined(), triggers=_DIGITS, whole_token=False,
                 source="python-stdnum", gate=gate),)
