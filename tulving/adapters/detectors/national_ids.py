"""National identifiers, found by their written shape and confirmed by python-stdnum's
validators (check digits, valid dates and ranges, known invalid numbers): a shape alone
would mask every part number, a validator alone has nothing to look at.

Two kinds of evidence, measured on the negative corpus and on LoCoMo's turns
(``benchmarks/redaction.py`` prints the table):

- **a distinctive written shape** (``SHAPES``): separators or letters that ordinary
  numbers do not have (``123-45-6789``, ``390.533.447-05``, ``AB 12 34 56 C``,
  ``756.1234.5678.97``), found anywhere;
- **a keyword naming the kind** just before the number (``ANCHORED``): identifiers
  written as bare runs of digits (a Dutch BSN, a Polish PESEL, an Australian TFN) or in
  a shape ordinary numbers share (``123 456 782`` is also how 123 million is written;
  ``010190-1234`` is also a ticket number) are masked only after their own name ("BSN",
  "PESEL", "TFN", "CPR-nummer"), and passports (which carry no check digit) only after
  "passport". The keyword also names the kind: a TFN that happens to pass the Canadian
  SIN's check too is labelled a TFN after "TFN".

Left out: identifiers with neither (a bare 11-digit number is a phone number as often as
a PESEL).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable

from tulving.domain.detection import Rule, enough_digits

_EDGE_L, _EDGE_R = r"(?<![\w\-.])", r"(?![\w\-]|\.\d)"


def gb_nino(value: str) -> bool:
    """A UK National Insurance number by HMRC's published format rules (python-stdnum
    has no module for it): two prefix letters (not D, F, I, Q, U, V; the second not O;
    not an unallocated pair), six digits, a suffix A-D."""
    compact = re.sub(r"[\s\-]", "", value).upper()
    return (re.fullmatch(r"[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]\d{6}[A-D]", compact) is not None
            and compact[:2] not in ("BG", "GB", "KN", "NK", "NT", "TN", "ZZ"))


def _validator(path: str) -> Callable[[str], bool]:
    """``"stdnum.us.ssn"`` -> its ``is_valid``, imported on first use."""
    if path == "gb_nino":
        return gb_nino
    holder: list[Callable[[str], bool]] = []

    def valid(value: str) -> bool:
        if not holder:
            holder.append(importlib.import_module(path).is_valid)
        return bool(holder[0](value))
    return valid


def _always(_value: str) -> bool:
    return True


#: kind -> (shape, validator module). Found anywhere: the shape is distinctive.
SHAPES: dict[str, tuple[str, str]] = {
    "us_ssn": (r"\d{3}(?P<s1>[- ])\d{2}(?P=s1)\d{4}", "stdnum.us.ssn"),
    "us_itin": (r"9\d{2}(?P<s9>[- ])\d{2}(?P=s9)\d{4}", "stdnum.us.itin"),
    "ca_sin": (r"\d{3}-\d{3}-\d{3}", "stdnum.ca.sin"),
    "in_aadhaar": (r"[2-9]\d{3}(?P<s3>[- ])\d{4}(?P=s3)\d{4}", "stdnum.in_.aadhaar"),
    "br_cpf": (r"\d{3}\.\d{3}\.\d{3}-\d{2}", "stdnum.br.cpf"),
    "es_dni": (r"\d{8}-?[A-Z]", "stdnum.es.dni"),
    "es_nie": (r"[XYZ]-?\d{7}-?[A-Z]", "stdnum.es.nie"),
    "it_codice_fiscale": (r"[A-Z]{6}[0-9LMNP-V]{2}[A-EHLMPR-T][0-9LMNP-V]{2}[A-Z]"
                          r"[0-9LMNP-V]{3}[A-Z]", "stdnum.it.codicefiscale"),
    "fr_nir": (r"[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}", "stdnum.fr.nir"),
    # the 10-digit written form only: 8 digits, a dash and 4 are build stamps as often
    "se_personnummer": (r"\d{6}[-+]\d{4}", "stdnum.se.personnummer"),
    "fi_hetu": (r"\d{6}[-+A-FU-Y]\d{3}[0-9A-FHJ-NPR-Y]", "stdnum.fi.hetu"),
    # spaced as HMRC prints it; written compact it is an ordinary ticket id (anchored)
    "gb_nino": (r"[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} \d{2} \d{2} ?[A-D]", "gb_nino"),
    "be_nn": (r"\d{2}\.\d{2}\.\d{2}-\d{3}\.\d{2}", "stdnum.be.nn"),
    "ch_ssn": (r"756\.\d{4}\.\d{4}\.\d{2}", "stdnum.ch.ssn"),
    "cz_rc": (r"\d{6}/\d{3,4}", "stdnum.cz.rc"),
    "kr_rrn": (r"\d{6}-[1-8]\d{6}", "stdnum.kr.rrn"),
    "mx_curp": (r"[A-Z][AEIOUX][A-Z]{2}\d{6}[HMX][A-Z]{5}[0-9A-Z]\d", "stdnum.mx.curp"),
    "my_nric": (r"\d{6}-\d{2}-\d{4}", "stdnum.my.nric"),
    "pk_cnic": (r"\d{5}-\d{7}-\d", "stdnum.pk.cnic"),
    "cl_rut": (r"\d{1,2}\.\d{3}\.\d{3}-[\dkK]", "stdnum.cl.rut"),
    "th_pin": (r"\d-\d{4}-\d{5}-\d{2}-\d", "stdnum.th.pin"),
}


def _digits(count: int) -> str:
    """``count`` digits, grouped by single spaces, dashes or dots as people write them."""
    return r"\d(?:[ \-.]?\d){" + str(count - 1) + "}"


#: kind -> (keywords, value shape, validator). Found only after one of its keywords.
ANCHORED: dict[str, tuple[tuple[str, ...], str, str]] = {
    "us_ssn": (("ssn", "social security number", "social security no"), _digits(9),
               "stdnum.us.ssn"),
    "ca_sin": (("sin", "social insurance number", "nas"), _digits(9), "stdnum.ca.sin"),
    "au_tfn": (("tfn", "tax file number", "tax file no"), _digits(9), "stdnum.au.tfn"),
    "nl_bsn": (("bsn", "burgerservicenummer", "sofinummer", "sofi-nummer"), _digits(9),
               "stdnum.nl.bsn"),
    "pl_pesel": (("pesel",), _digits(11), "stdnum.pl.pesel"),
    "gb_nino": (("nino", "ni number", "ni no", "national insurance"),
                r"[A-Z]{2} ?\d{2} ?\d{2} ?\d{2} ?[A-D]", "gb_nino"),
    "be_nn": (("niss", "insz", "rijksregisternummer", "numéro national", "rrn"), _digits(11),
              "stdnum.be.nn"),
    "dk_cpr": (("cpr", "cpr-nummer", "cpr-nr", "cprnr"), r"\d{6}-?\d{4}", "stdnum.dk.cpr"),
    "gb_nhs": (("nhs",), _digits(10), "stdnum.gb.nhs"),
    "cn_ric": (("身份证", "resident identity card", "ric"), r"\d{17}[\dXx]", "stdnum.cn.ric"),
    "de_idnr": (("steuer-id", "steuerid", "steuer-idnr", "identifikationsnummer", "idnr"),
                _digits(11), "stdnum.de.idnr"),
    "ee_ik": (("isikukood", "estonian personal code"), _digits(11), "stdnum.ee.ik"),
    "gr_amka": (("amka", "αμκα"), _digits(11), "stdnum.gr.amka"),
    "hr_oib": (("oib", "osobni identifikacijski broj"), _digits(11), "stdnum.hr.oib"),
    "ie_pps": (("pps", "ppsn", "personal public service"), r"\d{7}[A-W][ABWTX]?",
               "stdnum.ie.pps"),
    "il_idnr": (("teudat zehut", "zehut", "israeli id"), _digits(9), "stdnum.il.idnr"),
    "is_kennitala": (("kennitala", "kt."), r"\d{6}-?\d{4}", "stdnum.is_.kennitala"),
    "lt_asmens": (("asmens kodas",), _digits(11), "stdnum.lt.asmens"),
    "no_fodselsnummer": (("fødselsnummer", "fodselsnummer", "fnr"), r"\d{6} ?\d{5}",
                         "stdnum.no.fodselsnummer"),
    "ro_cnp": (("cnp", "cod numeric personal"), _digits(13), "stdnum.ro.cnp"),
    "bg_egn": (("егн", "egn"), _digits(10), "stdnum.bg.egn"),
    "si_emso": (("emšo", "emso"), _digits(13), "stdnum.si.emso"),
    "tr_tckimlik": (("kimlik", "tckn", "tc kimlik"), _digits(11), "stdnum.tr.tckimlik"),
    "za_idnr": (("sa id", "south african id", "rsa id"), _digits(13), "stdnum.za.idnr"),
    "in_pan": (("pan",), r"[A-Z]{5}\d{4}[A-Z]", "stdnum.in_.pan"),
    "at_vnr": (("sozialversicherungsnummer", "svnr", "vsnr"), _digits(10), "stdnum.at.vnr"),
    "fi_hetu": (("henkilötunnus", "hetu"), r"\d{6}[-+A-FU-Y]\d{3}[0-9A-FHJ-NPR-Y]",
                "stdnum.fi.hetu"),
    # Japan's Individual Number (My Number): 12 bare digits, a check digit
    "jp_my_number": (("マイナンバー", "個人番号", "my number", "mynumber", "individual number",
                      "kojin bango"), _digits(12), "stdnum.jp.in_"),
    # Indonesia's NIK: 16 digits holding a region code and a birth date
    "id_nik": (("nik", "nomor induk kependudukan", "ktp"), _digits(16), "stdnum.id.nik"),
    # no check digit: a passport number is masked only right after "passport"
    "passport": (("passport", "reisepass", "passeport", "pasaporte", "passaporto"),
                 r"(?=(?:[A-Z]*\d){2})[A-Z0-9]{8,9}", ""),
}
#: What may stand between the keyword and the number: punctuation and a few words
#: ("TFN is", "passport no.", "PESEL number:", "身份证号").
_FILLER = (r"(?:[^\w\n]{0,3}(?i:no|nr|num|number|numer|nummer|is|was|card|code|kod|"
           r"kodas|号)(?![^\W\d_])){0,4}[^\w\n]{0,3}")

#: Every shape holds a digit: texts without one are skipped outright.
_DIGITS = tuple("0123456789")
#: Every shape above holds seven digits or more (a NIE has the fewest; a codice fiscale
#: written with omocodia letters could have fewer, and is that rare): counted first, so a
#: turn with a date in it ("8 May 2023") is not scanned; then one quick pattern that every
#: shape contains (digits and separators in a row, or a NIE's, HETU's, NINO's or
#: CURP's letters beside digits), so a long text full of dates is not scanned either.
_SEVEN_DIGITS = enough_digits(6)
_ZONE = re.compile(r"\d[\d .\-+/]{4,}[\dA-Z]|[A-Z]{2,6}[0-9LMNP-V]{2}|\d{6}[A-FU-Y]\d{3}"
                   r"|[A-Z] ?\d{2} ?\d{2}")


def gate(text: str) -> bool:
    return _SEVEN_DIGITS(text) and _ZONE.search(text) is not None


def _checked(validators: dict[str, Callable[[str], bool]]) -> Callable[[str, str], bool]:
    def valid(kind: str, value: str) -> bool:
        try:
            return validators[kind](value)
        except Exception:  # a validator's own parsing failure: not a number of its kind
            return False
    return valid


def _combined() -> Callable[[str], Iterable[tuple[int, int, str]]]:
    """One pass over the text for all shapes (an alternation of named groups), then the
    validator of the shape that matched: one scan instead of one per country."""
    pattern = re.compile(_EDGE_L + "(?:" + "|".join(
        f"(?P<{kind}>{shape})" for kind, (shape, _valid) in SHAPES.items()) + ")" + _EDGE_R)
    valid = _checked({kind: _validator(path) for kind, (_shape, path) in SHAPES.items()})
    alone = {kind: re.compile(shape) for kind, (shape, _valid) in SHAPES.items()}

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


def _anchored(kind: str, keywords: tuple[str, ...], shape: str, path: str) -> Rule:
    words = "|".join(re.escape(k) for k in sorted(keywords, key=len, reverse=True))
    pattern = re.compile(rf"(?<![^\W\d_])(?i:{words}){_FILLER}"
                         rf"(?P<value>{shape})(?![\w\-/]|[.,]\d)")
    check = _validator(path) if path else _always

    def find(text: str) -> Iterable[tuple[int, int]]:
        for match in pattern.finditer(text):
            try:
                ok = check(match.group("value"))
            except Exception:  # a validator's own parsing failure: not of this kind
                ok = False
            if ok:
                yield match.span("value")
    least = 2 if kind == "passport" else 4 if kind == "in_pan" else 6
    return Rule(kind, find, itriggers=tuple(k.lower() for k in keywords), whole_token=False,
                source="python-stdnum" if path else "tulving", min_digits=least)


def identifier_rules() -> tuple[Rule, ...]:
    """The keyword-anchored rules first (where one finds the same span as a shape, its
    kind names it), then every distinctive shape in one pass."""
    anchored = tuple(_anchored(kind, *spec) for kind, spec in ANCHORED.items())
    return (*anchored, Rule("national_id", _combined(), triggers=_DIGITS, whole_token=False,
                            source="python-stdnum", gate=gate, min_digits=6))
