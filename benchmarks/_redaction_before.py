"""Today's detector before issue 34, kept importable for benchmarks/redaction.py only: the
hand-written rules of ``tulving/domain/redaction.py`` and ``pii.py`` as they stood on main
(20a9852), copied verbatim but for imports, so the benchmark compares both in one run."""
# ruff: noqa
# fmt: off

import re
from collections.abc import Callable
from typing import Any

import attrs

ValidationError = ValueError

MASK_PREFIX = "[REDACTED:"


def _mask(kind: str) -> str:
    return f"{MASK_PREFIX}{kind}]"


@attrs.frozen
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    #: Name of the group to mask; None masks the whole match.
    group: str | None = None


_TOKEN_CHARS = r"[A-Za-z0-9_\-]"
_HAS_DIGIT = r"(?=[A-Za-z0-9_\-]*[0-9])"
_HAS_LETTER = r"(?=[A-Za-z0-9_\-]*[A-Za-z])"

_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private_key",
        re.compile(
            r"-----BEGIN (?P<label>[A-Z0-9 ]*)PRIVATE KEY-----.*?"
            r"(?:-----END (?P=label)PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
    ),
    _Rule(
        "url_password",
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:(?P<secret>[^\s/@]+)@"),
        "secret",
    ),
    _Rule(
        "anthropic_key",
        re.compile(rf"\bsk-ant-{_HAS_DIGIT}{_TOKEN_CHARS}{{20,}}"),
    ),
    _Rule(
        "openai_key",
        re.compile(
            rf"\bsk-(?:proj-|svcacct-|admin-)?{_HAS_DIGIT}{_HAS_LETTER}{_TOKEN_CHARS}{{20,}}"
        ),
    ),
    _Rule("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    _Rule(
        "github_token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ),
    _Rule("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    _Rule("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    _Rule(
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
    ),
    _Rule(
        "bearer_token",
        re.compile(r"\bBearer\s+(?P<secret>(?=[A-Za-z0-9\-._~+/]*[0-9])[A-Za-z0-9\-._~+/]{16,}=*)"),
        "secret",
    ),
    _Rule(
        "basic_auth",
        re.compile(r"(?i:authorization)\s*[:=]\s*Basic\s+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})"),
        "secret",
    ),
)

# key=value / key: value with a credential-named key. The key may carry a prefix
# (db_password, AWS_SECRET_ACCESS_KEY) and quotes ("api_key": "...").
_STRONG_NAMES = (
    r"passw(?:or)?d|pwd|passphrase|secret|client[_\-]?secret|secret[_\-]?key|private[_\-]?key"
)
_WEAK_NAMES = (
    r"api[_\-]?key|apikey|access[_\-]?key(?:[_\-]?id)?|auth[_\-]?token|access[_\-]?token"
    r"|refresh[_\-]?token|id[_\-]?token|session[_\-]?token|token|credentials?|pass"
)
_ASSIGNMENT = re.compile(
    r"(?P<key>(?<![A-Za-z0-9_\-.])(?:[A-Za-z0-9_\-.]*[_\-.])?"
    rf"(?:(?P<strong>{_STRONG_NAMES})|(?P<weak>{_WEAK_NAMES})))"
    r"(?P<close>[\"']?)(?P<sep>\s*(?::|=|=>)\s*)"
    r"(?:(?P<quote>[\"'])(?P<quoted>[^\"'\n]*)(?P=quote)|(?P<bare>[^\s,;\"'()\[\]{}<>]+))",
    re.IGNORECASE,
)
# Values that are code, types, placeholders or references, not secrets.
_NOT_A_SECRET = frozenset(
    {
        "str", "string", "int", "bytes", "bool", "float", "any", "none", "null", "nil",
        "true", "false", "undefined", "optional", "secretstr", "required", "string?",
        "yes", "no", "n/a", "na", "todo", "tbd", "xxx", "***", "...", "redacted", "<redacted>",
    }
)  # fmt: skip
_REFERENCE = re.compile(
    r"^(?:\$|%|\{\{|<|\*+$|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$)"
)


_PROSE_CONTINUES = re.compile(r" [a-z]+\b")


def _assignment_replacement(match: re.Match[str], counter: list[int]) -> str:
    text = match.group(0)
    value = match.group("quoted") if match.group("quote") else match.group("bare")
    if value is None or not value.strip() or value.startswith(MASK_PREFIX):
        return text
    lowered = value.casefold()
    if lowered in _NOT_A_SECRET or _REFERENCE.match(value):
        return text
    bare = match.group("bare")
    if bare is not None:
        following = match.string[match.end() : match.end() + 1]
        if following in ("(", "["):  # a call or subscript: code, not a literal
            return text
        key_name = re.split(r"[.\-]", match.group("key").strip("\"'").casefold())[-1]
        if lowered == key_name or lowered.endswith("_" + key_name):  # password=password
            return text
        if value.isalpha() and _PROSE_CONTINUES.match(match.string, match.end()):
            return text  # prose: "the secret: we ship on friday"
    if match.group("weak") is not None and not _looks_like_credential(value):
        return text
    if "secret" in match.group("key").casefold():
        kind = "secret"
    elif match.group("strong"):
        kind = "private_key" if "private" in match.group("strong").casefold() else "password"
    else:
        kind = "token"
    start, end = match.span("quoted" if match.group("quote") else "bare")
    if bare is not None and "&" in bare and match.string[match.start() - 1 : match.start()] in "?&":
        end = start + bare.index("&")  # a URL query: the value ends at the next parameter
    counter[0] += 1
    offset = match.start()
    return text[: start - offset] + _mask(kind) + text[end - offset :]


def _looks_like_credential(value: str) -> bool:
    """For weak key names (token, api_key, pass): a value of 8+ characters that is not
    plain prose or a small number ("token: 2000", "pass: yes")."""
    if len(value) < 8 or value.isdigit() or " " in value:
        return False
    return not (value.isalpha() and value.islower())


def _rule_replacer(rule: _Rule, counter: list[int]) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        if match.group(rule.group or 0).startswith(MASK_PREFIX):
            return match.group(0)  # already masked: keep redaction idempotent
        counter[0] += 1
        if rule.group is None:
            return _mask(rule.kind)
        start, end = match.span(rule.group)
        offset = match.start()
        whole = match.group(0)
        return whole[: start - offset] + _mask(rule.kind) + whole[end - offset :]

    return replace


#: Literal fragments (lower case) at least one of which every rule above needs: text
#: without any of them cannot hold a secret, and skipping the dozen rule scans keeps
#: curation fast. Substring tests on the lower-cased text are several times faster than
#: one case-insensitive alternation (measured: about 2 µs against 24 µs a memory).
_MAYBE_SECRET = (
    "begin", "://", "sk-", "akia", "asia", "abia", "acca", "ghp_", "gho_", "ghu_", "ghs_",
    "ghr_", "github_pat_", "xox", "aiza", "eyj", "bearer", "authorization", "pass", "pwd",
    "secret", "key", "token", "credential",
)  # fmt: skip


#: Above this length a multi-line text is redacted line by line (see redact_with_count).
_LINEWISE_FROM = 1024


def _may_hold_secret(text: str) -> bool:
    return any(map(text.lower().__contains__, _MAYBE_SECRET))


def redact_with_count(text: str) -> tuple[str, int]:
    """``text`` with secrets masked, and how many were masked. Idempotent."""
    if not isinstance(text, str):
        raise ValidationError(f"redact() needs a str, got {type(text).__name__}")
    if not _may_hold_secret(text):
        return text, 0
    if len(text) > _LINEWISE_FROM and "\n" in text and "begin" not in text.lower():
        # A long multi-line text (a curated block, a transcript): every rule but the PEM
        # one stays within a line, so lines without a trigger word skip the scans
        # (measured on a 6.7 kB curated block: about 2 ms down to a fraction of it).
        total = 0
        lines = []
        for line in text.split("\n"):
            masked, count = redact_with_count(line)
            lines.append(masked)
            total += count
        return "\n".join(lines), total
    counter = [0]
    for rule in _RULES:
        text = rule.pattern.sub(_rule_replacer(rule, counter), text)
    text = _ASSIGNMENT.sub(lambda match: _assignment_replacement(match, counter), text)
    return text, counter[0]


def redact(text: str) -> str:
    return redact_with_count(text)[0]


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` (JSON-like: dicts, lists, scalars) with ``change`` applied to every string
    in it, keys left alone: how metadata is screened on the way in and out."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {k: map_strings(v, change) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [map_strings(v, change) for v in value]
    return value


# A key whose last segment names a credential (db/password, stripe.api_key,
# aws/secret-access-key): what is stored under it is the secret, whatever its shape.
_SENSITIVE_KEY = re.compile(
    rf"(?:^|[/.:_\-])(?:(?P<strong>{_STRONG_NAMES})|(?P<weak>{_WEAK_NAMES}))$", re.IGNORECASE
)


def sensitive_key_kind(key: str | None) -> str | None:
    """The mask kind for a credential-named key (ADR-010: redaction by key name as well
    as by content shape), or None."""
    if not key:
        return None
    match = _SENSITIVE_KEY.search(key)
    if match is None:
        return None
    name = match.group(0).casefold()
    if "secret" in name:
        return "secret"
    if match.group("strong"):
        return "private_key" if "private" in name else "password"
    return "token"


def redact_stored(content: str, key: str | None) -> str:
    """What may be shown of a memory's content: all of it masked when its key names a
    credential, else its secret-shaped parts masked."""
    kind = sensitive_key_kind(key)
    return _mask(kind) if kind is not None else redact(content)

# ---- pii.py as it stood ----




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


def find_pii(text: str) -> list[PiiMatch]:
    """Non-overlapping PII spans in ``text``, in order of position."""
    found: list[PiiMatch] = []
    for m in _EMAIL.finditer(text):
        found.append(PiiMatch("email", m.start(), m.end()))
    for m in _IBAN.finditer(text):
        if iban_valid(m.group(0)):
            found.append(PiiMatch("iban", m.start(), m.end()))
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and _card_prefix_ok(digits) and luhn_valid(digits):
            found.append(PiiMatch("card_number", m.start(), m.end()))
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
