"""Masking secrets and personal identifiers before text is stored or shown.

Two kinds of evidence count, and nothing else:

- **the format of a known credential or identifier**, from maintained rule sets loaded
  as data (``rule_sets``): detect-secrets' plugins (Stripe, Slack, AWS, GitHub, GitLab,
  Azure, Twilio, npm, JWT, private keys, ...; Tulving adds a few it lacks, such as Hugging
  Face and Anthropic keys, through the same plugin interface) and python-stdnum's
  validators for national ids (US SSN, ...), plus card numbers and IBANs by their check
  digits (``pii``);
- **context** that Tulving's own rules read here: a PEM private-key block, a password in
  a URL, a key in a webhook's path or a DSN's user part (``url_secrets``), a
  ``Bearer``/``Basic`` authorization, an assignment to a credential-named key
  (``password=...``, ``"api_key": "..."``) whose value is not code, and any of those
  wrapped in base64 or split over string literals or lines (``wrapped_secrets``).

Precision matters as much as recall: memories are full of prose and code that mention
keys, tokens and passwords without containing one ("the token budget is 2000", "primary
key: user_id", ``password = request.form["password"]``), and of hashes, UUIDs and ids,
which are not secrets: there is deliberately no "high-entropy string" rule. A masked value
becomes ``[REDACTED:<kind>]``; the key name and the surrounding text are kept. The corpus
in ``tests/fixtures/secrets_corpus`` and ``benchmarks/redaction.py`` measure both.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from tulving.domain import rule_sets
from tulving.domain.detection import (
    MASK_PREFIX,
    Finding,
    Rule,
    RuleBook,
    apply_masks,
    mask,
    merge,
    pause,
    regex_finder,
)
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ValidationError
from tulving.domain.masks import Masks, check_of
from tulving.domain.pii import find_contacts, find_identifiers
from tulving.domain.url_secrets import user_keys, webhook_paths
from tulving.domain.wrapped_secrets import may_hold_wrapped, wrapped_finder

__all__ = ["MASK_PREFIX", "Shown", "find_masks", "find_secrets", "map_strings", "redact",
           "redact_all", "redact_secrets", "redact_stored", "redact_stored_all",
           "redact_with_count", "sensitive_key_kind", "shown_content", "shown_key",
           "shown_tags", "shown_value"]


def _mask(kind: str) -> str:
    return mask(kind)


_PEM = re.compile(
    r"-----BEGIN (?P<label>[A-Z0-9 ]*)PRIVATE KEY-----.*?"
    r"(?:-----END (?P=label)PRIVATE KEY-----|\Z)",
    re.DOTALL,
)
# the user may be empty: redis://:pw@host, amqp://:pw@mq. Every repetition in these
# patterns is bounded or stops at a character that ends the next match's start, so no
# pattern's cost grows with the number of its matches (a scheme of 32 characters at most:
# ``a.a.a.a...://`` would start a match at every dot).
_URL_PASSWORD = re.compile(
    r"\b[a-zA-Z][a-zA-Z0-9+.\-]{0,31}://[^\s:/@]{0,256}:(?P<secret>[^\s/@]+)@")
# a credential carried in a URL's query: a SAS or presigned signature, a token
_URL_QUERY_SECRET = re.compile(
    r"[?&](?i:sig|signature|x-amz-signature|x-goog-signature|x-amz-security-token|"
    r"access_token|refresh_token|id_token|client_secret|api_key|apikey|password|passwd|pwd)"
    r"=(?P<secret>[^&\s#\"'<>]{8,})")
# Authorization schemes other than Bearer and Basic: Okta's SSWS, GitHub's "token",
# "Api-Key"/"Token" schemes; the credential follows the scheme's name.
_AUTH_SCHEME = re.compile(
    r"(?:(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?:(?i:token|api-?key|apikey|key|ssws)\s+)"
    r"|\bSSWS\s+)(?P<secret>(?=[A-Za-z0-9\-._~+/]*[0-9])[A-Za-z0-9\-._~+/]{16,}=*)")
# Passwords on command lines: mysql's family takes it glued to -p (``-p`` alone prompts),
# sshpass after -p, docker login after -p/--password, redis-cli after -a.
_COMMAND_PASSWORD = re.compile(
    r"(?:\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|"
    r"mariadb-dump)\b[^\n|;&]{0,256}?\s-p(?=[^\s-])"
    r"|\bsshpass\s+(?:-[a-oq-z]\s+\S+\s+){0,8}-p\s*"
    r"|\bdocker\s+login\b[^\n|;&]{0,256}?\s(?:-p|--password)[ =]"
    r"|\bredis-cli\b[^\n|;&]{0,256}?\s-a\s+)"
    r"(?:'(?P<q1>[^'\n]+)'|\"(?P<q2>[^\"\n]+)\"|(?P<bare>[^\s'\"]+))")
# A .netrc entry: machine NAME [login NAME] [account NAME] password SECRET (on one line
# or several).
_NETRC = re.compile(
    r"\bmachine\s+\S+(?:\s+(?:login|account)\s+\S+){0,4}\s+password\s+(?P<secret>\S+)")
_BEARER = re.compile(
    r"\bBearer\s+(?P<secret>(?=[A-Za-z0-9\-._~+/]*[0-9])[A-Za-z0-9\-._~+/]{16,}=*)")
_BASIC = re.compile(
    r"(?i:authorization)\s*[:=]\s*Basic\s+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})")

# key=value / key: value with a credential-named key. The key may carry a prefix
# (db_password, AWS_SECRET_ACCESS_KEY) and quotes ("api_key": "...").
_STRONG_NAMES = (
    r"passw(?:or)?d|pwd|passphrase|secret|client[_\-]?secret|secret[_\-]?key|private[_\-]?key"
    r"|private[_\-]?key[_\-]?id|account[_\-]?key|shared[_\-]?access[_\-]?key"
    r"|client[_\-]?key[_\-]?data"
)
# Names an environment variable runs into without a separator (PGPASSWORD, MYSQL_PWD is
# already separated): a strong name may follow a few letters directly.
_GLUED = r"[A-Za-z]{2,8}(?=passw(?:or)?d|pwd)"
_WEAK_NAMES = (
    r"api[_\-]?key|apikey|access[_\-]?key(?:[_\-]?id)?|auth[_\-]?token|access[_\-]?token"
    r"|refresh[_\-]?token|id[_\-]?token|session[_\-]?token|token|credentials?|pass"
)
_ASSIGNMENT = re.compile(
    rf"(?P<key>(?<![A-Za-z0-9_\-.])(?:[A-Za-z0-9_\-.]*[_\-.]|{_GLUED})?"
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


def _assignment_span(match: re.Match[str], counter: list[int]) -> tuple[int, int, str] | None:
    """The value span of a credential assignment, and its kind; None when the value is
    code, a placeholder, a reference or prose."""
    value = match.group("quoted") if match.group("quote") else match.group("bare")
    if value is None or not value.strip() or value.startswith((MASK_PREFIX, "=")):
        return None  # nothing, already masked, or a comparison (password == other)
    lowered = value.casefold()
    if lowered in _NOT_A_SECRET or _REFERENCE.match(value):
        return None
    bare = match.group("bare")
    if bare is not None:
        following = match.string[match.end() : match.end() + 1]
        if following in ("(", "["):  # a call or subscript: code, not a literal
            return None
        key_name = re.split(r"[.\-]", match.group("key").strip("\"'").casefold())[-1]
        if lowered == key_name or lowered.endswith("_" + key_name):  # password=password
            return None
        if value.isalpha() and _PROSE_CONTINUES.match(match.string, match.end()):
            return None  # prose: "the secret: we ship on friday"
    if match.group("weak") is not None and not _looks_like_credential(value):
        return None
    kind = _kind_of_name(match.group("key"), strong=match.group("strong") is not None)
    start, end = match.span("quoted" if match.group("quote") else "bare")
    if bare is not None and "&" in bare and match.string[match.start() - 1 : match.start()] in "?&":
        end = start + bare.index("&")  # a URL query: the value ends at the next parameter
    counter[0] += 1
    return start, end, kind


def _kind_of_name(name: str, *, strong: bool) -> str:
    """The mask's kind for a credential named ``name`` (a key of an assignment, a memory's
    key): what the name says the value is."""
    folded = re.sub(r"[_\-.]", "", name.casefold())
    for part, kind in (("privatekeyid", "private_key_id"), ("clientkeydata", "private_key"),
                       ("accountkey", "access_key"), ("sharedaccesskey", "access_key"),
                       ("secret", "secret"), ("privatekey", "private_key")):
        if part in folded:
            return kind
    return "password" if strong else "token"


def _looks_like_credential(value: str) -> bool:
    """For weak key names (token, api_key, pass): a value of 8+ characters that is not
    plain prose or a small number ("token: 2000", "pass: yes")."""
    if len(value) < 8 or value.isdigit() or " " in value:
        return False
    return not (value.isalpha() and value.islower())


def _command_passwords(text: str) -> Iterable[tuple[int, int]]:
    for match in _COMMAND_PASSWORD.finditer(text):
        group = next(g for g in ("q1", "q2", "bare") if match.group(g) is not None)
        value = match.group(group)
        if value.casefold() in _NOT_A_SECRET or _REFERENCE.match(value):
            continue  # -p"$PW", -p${DB_PASSWORD}: a reference, not the password
        yield match.span(group)


def _assignments(text: str) -> Iterable[tuple[int, int, str]]:
    counter = [0]
    for match in _ASSIGNMENT.finditer(text):
        span = _assignment_span(match, counter)
        if span is not None:
            yield span


#: Tulving's own context rules (see the module docstring); whole spans as matched.
CONTEXT_RULES: tuple[Rule, ...] = (
    Rule("private_key", regex_finder(_PEM), triggers=("BEGIN",), whole_token=False),
    Rule("url_password", regex_finder(_URL_PASSWORD, "secret"), triggers=("://",),
         whole_token=False),
    Rule("bearer_token", regex_finder(_BEARER, "secret"), triggers=("Bearer",),
         whole_token=False),
    Rule("basic_auth", regex_finder(_BASIC, "secret"), itriggers=("authorization",),
         whole_token=False),
    Rule("password", _assignments,
         itriggers=("pass", "pwd", "secret", "key", "token", "credential"), whole_token=False),
    Rule("url_secret", regex_finder(_URL_QUERY_SECRET, "secret"), triggers=("=",),
         whole_token=False),
    Rule("token", regex_finder(_AUTH_SCHEME, "secret"), itriggers=("authorization", "ssws"),
         whole_token=False),
    Rule("password", _command_passwords, itriggers=("mysql", "mariadb", "sshpass", "docker",
                                                    "redis-cli"), whole_token=False),
    Rule("password", regex_finder(_NETRC, "secret"), triggers=("machine",), whole_token=False),
    Rule("webhook_url", webhook_paths, itriggers=("hook", "/with/key/", "/services/"),
         whole_token=False),
    Rule("token", user_keys, triggers=("://",), whole_token=False),
    # base64-wrapped and split credentials: their unwrapped texts go through every
    # credential rule (this one excepted) in one more pass
    Rule("secret", wrapped_finder(lambda text: find_secrets(text)), whole_token=False,
         gate=may_hold_wrapped),
)


_books: dict[int, tuple[rule_sets.RuleSets, RuleBook]] = {}


def _book() -> RuleBook:
    """The credential rules compiled once per installed rule set: the rule set first
    (where both find the same value, its kind names it), then the context rules."""
    sets = rule_sets.current()
    cached = _books.get(id(sets))
    if cached is None or cached[0] is not sets:
        cached = (sets, RuleBook((*sets.secrets, *CONTEXT_RULES)))
        _books.clear()
        _books[id(sets)] = cached
        _cached.cache_clear()
    return cached[1]


def find_secrets(text: str) -> list[Finding]:
    """Credential spans: Tulving's context rules and the installed credential rule set."""
    return _book().find(text)


def _check(text: object) -> str:
    if not isinstance(text, str):
        raise ValidationError(f"redact() needs a str, got {type(text).__name__}")
    return text


#: Above this length a multi-line text is scanned in blocks of whole lines of about this
#: size (see ``_by_line``).
_LINEWISE_FROM = 1024


def _blocks(text: str) -> Iterable[tuple[int, str]]:
    """``(offset, block)``: consecutive whole lines of ``text`` gathered up to
    ``_LINEWISE_FROM`` characters (a longer line is a block of its own)."""
    start = size = 0
    offset = 0
    for line in text.split("\n"):
        if size and size + len(line) + 1 > _LINEWISE_FROM:
            yield start, text[start:offset - 1]
            start, size = offset, 0
        size += len(line) + 1
        offset += len(line) + 1
    if start < len(text):
        yield start, text[start:]


def _by_line(text: str, scan: Callable[[str], list[Finding]]) -> list[Finding]:
    """``scan`` over a long multi-line text (a curated block, a transcript) a block of
    lines at a time: each block runs only the rules its own triggers call for, where the
    whole text would run nearly all, and a text of many short lines costs a few calls to
    the rule sets' engines, not one a line. Every rule stays within a line except the
    PEM block's, so a text with "BEGIN" in it is scanned whole."""
    if len(text) <= _LINEWISE_FROM or "\n" not in text or "BEGIN" in text:
        return scan(text)
    found: list[Finding] = []
    for offset, block in _blocks(text):
        pause()
        if block.strip():
            found.extend(Finding(f.kind, f.start + offset, f.end + offset) for f in scan(block))
    return found


def _identifiers(text: str) -> list[Finding]:
    return [Finding(p.kind, p.start, p.end) for p in find_identifiers(text)]


def _shown(text: str) -> list[Finding]:
    found = find_secrets(text)
    identifiers = _identifiers(text)
    return merge([*found, *identifiers]) if identifiers else found


def _everything(text: str) -> list[Finding]:
    found = [*_shown(text),
             *(Finding(p.kind, p.start, p.end) for p in find_contacts(text))]
    return merge(found)


def redact_all(text: str) -> str:
    """``text`` as it may leave the memory's doors (a span's captured text goes to a
    tracing backend, a log record to whoever runs the process): credentials, personal
    identifiers and contact details (emails, phone numbers, public IP addresses) masked."""
    return apply_masks(_check(text), _by_line(text, _everything))


def redact_stored_all(content: str, key: str | None) -> str:
    """``redact_stored`` for text leaving the doors: contact details masked too."""
    kind = sensitive_key_kind(key)
    return _mask(kind) if kind is not None else redact_all(content)


def redact_secrets(text: str) -> tuple[str, int]:
    """``text`` with credentials masked (not personal identifiers), and how many: what a
    ``secrets="redact"`` write policy stores."""
    found = _by_line(_check(text), find_secrets)
    return apply_masks(text, found), len(found)


def redact_with_count(text: str) -> tuple[str, int]:
    """``text`` as every door shows it: credentials and personal identifiers (national
    ids, card numbers, IBANs) masked; and how many were masked. Idempotent. Contact
    details (emails, phone numbers, IP addresses) are shown to the memory's own callers
    (remembering how to reach someone, the user included, is what a memory is for);
    :func:`redact_all` masks them too, for text that leaves the doors, and the ``pii``
    write policy keeps them out of the store.

    The same memories are shown again and again (curation ranks a pool of them for every
    query), so results for texts up to ``_CACHED_UP_TO`` characters are kept (a pure
    function of the text while the rule sets stay the same; cleared when they change)."""
    _check(text)
    if type(text) is Shown:
        return text, 0
    if len(text) <= _CACHED_UP_TO:
        _book()  # rebuilds, and clears the cache, if the rule sets changed
        return _cached(text)
    return _redact_uncached(text)


def _redact_uncached(text: str) -> tuple[str, int]:
    found = _by_line(text, _shown)
    return apply_masks(text, found), len(found)


_CACHED_UP_TO = 2048
_cached = functools.lru_cache(maxsize=8192)(_redact_uncached)


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


# ---------------------------------------------------------------- masks kept with entries
#: Bumped whenever Tulving's own rules change what they find: masks found by other rules
#: are not used (see ``masks``).
RULES_REVISION = "54.1"


class Shown(str):
    """Text that has been through redaction already (``redact`` returns it as it is): a
    door that scrubs everything it emits does not scan a memory's text a second time."""

    __slots__ = ()


def rules_id() -> str:
    """Which rules masks were found with: the rule sets' libraries and versions, and
    Tulving's own revision."""
    return f"{rule_sets.current().source}; tulving {RULES_REVISION}"


def entry_texts(entry: MemoryEntry) -> tuple[str, ...]:
    """The texts of an entry every door shows, in the order masks keep them."""
    return (entry.content, entry.value or "", entry.key or "", *entry.tags)


def find_masks(entry: MemoryEntry) -> Masks:
    """Every sensitive span of ``entry``'s texts (what ``redact`` would mask in each), to
    be kept with it: the cost of detection, paid once when it is written."""
    texts = entry_texts(entry)
    spans = tuple(tuple((f.start, f.end, f.kind) for f in _by_line(text, _shown)) if text
                  else () for text in texts)
    return Masks(rules_id(), check_of(texts), spans)


def _kept(entry: MemoryEntry, index: int) -> str | None:
    """Text ``index`` of ``entry`` with its kept masks applied, or None when there are
    none it can trust."""
    masks = entry.masks
    if masks is None:
        return None
    texts = entry_texts(entry)
    if not masks.fits(rules_id(), texts):
        return None
    found = [Finding(kind, start, end) for start, end, kind in masks.spans[index]]
    return Shown(apply_masks(texts[index], found))


def _shown_text(entry: MemoryEntry, index: int) -> str:
    kept = _kept(entry, index)
    if kept is not None:
        return kept
    return Shown(redact(entry_texts(entry)[index]))


def shown_content(entry: MemoryEntry) -> str:
    """What a door shows of ``entry``'s content: all of it masked under a credential-named
    key, else its sensitive spans masked (the kept masks applied when they fit)."""
    kind = sensitive_key_kind(entry.key)
    if kind is not None:
        return Shown(_mask(kind))
    return _shown_text(entry, 0)


def shown_value(entry: MemoryEntry) -> str | None:
    if entry.value is None:
        return None
    kind = sensitive_key_kind(entry.key)
    return Shown(_mask(kind)) if kind is not None else _shown_text(entry, 1)


def shown_key(entry: MemoryEntry) -> str | None:
    """A key as a door shows it: an address can hold a secret too (``ci/ghp_...``)."""
    return None if entry.key is None else _shown_text(entry, 2)


def shown_tags(entry: MemoryEntry) -> tuple[str, ...]:
    return tuple(_shown_text(entry, 3 + i) for i in range(len(entry.tags)))


def with_key_shown(entry: MemoryEntry) -> MemoryEntry:
    """``entry`` with its key as doors show it (for renderings that print keys, such as
    curated labels), its kept masks carried over to the new texts so its content is still
    shown without a scan."""
    if entry.key is None:
        return entry
    key = shown_key(entry)
    if key == entry.key:
        return entry
    changed = attrs.evolve(entry, key=str(key))  # a plain string for whoever reads it
    masks = entry.masks
    if masks is None or not masks.fits(rules_id(), entry_texts(entry)):
        return changed
    spans = (*masks.spans[:2], (), *masks.spans[3:])  # the key is masked already
    return attrs.evolve(changed, masks=Masks(masks.rules, check_of(entry_texts(changed)),
                                             spans))
