"""The built-in write policy: what a Memory refuses, masks or holds before storing.

Configured per Memory with ``Memory(..., policy={...})``; every key is optional:

- ``pii``: ``"allow"`` (default), ``"redact"`` or ``"reject"`` for emails, phone
  numbers, card numbers (Luhn-checked), IBANs (mod-97-checked) and national ids (checked
  by python-stdnum: see ``pii``);
- ``secrets``: the same modes for credential shapes (see ``redaction``). Default
  ``"allow"``: secrets are masked on the way *out* (exports, MCP, curated text) so the
  owner can still ``get()`` them raw; ``"redact"`` masks them before storage;
- ``max_chars``: a content size limit below the global one;
- ``forbidden_categories``: tags or ``metadata["category"]`` values that may not be stored;
- ``strip_private`` (default True): drop ``<private>...</private>`` sections;
- ``review_injections`` (default True): hold low-trust content that looks like a prompt
  injection for review;
- ``signing``: ``"auto"`` (default: sign when ``TULVING_SIGNING_KEY`` is set), ``True``
  (required) or ``False``; ``signing_key_env`` names another variable. An inline key
  is refused: keys do not belong in code or config files;
- ``audit_reads`` (default True): record get/search/curate calls in the audit log;
- ``shared_writes``: ``"owner"`` (default) or ``"any_agent"``. An entry in a scope other
  agents read (``personal``, ``shared``, ``workspace``, ``model_specific``) is read-only
  for them (seed 002): superseding it by key, correcting or forgetting it raises
  ``ScopeError`` unless the writing Memory's policy says ``"any_agent"``; a fact or a
  near-duplicate another agent states is stored beside it, flagged, never over it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from tulving.domain.entry import MemoryEntry, content_hash
from tulving.domain.errors import ConfigError, PolicyViolation, ScopeError, SecurityError
from tulving.domain.injection import needs_review
from tulving.domain.pii import redact_pii, strip_private
from tulving.domain.redaction import map_strings, redact_secrets
from tulving.domain.types import ReviewStatus, Scope

MODES = ("allow", "redact", "reject")
SHARED_WRITE_MODES = ("owner", "any_agent")
_PRIVATE_SCOPES = (Scope.AGENT, Scope.SESSION)
DEFAULT_SIGNING_ENV = "TULVING_SIGNING_KEY"


@attrs.frozen
class WritePolicy:
    """What a Memory accepts on the way in (``Memory(..., policy={...})``; a mapping of
    these names is parsed into one, unknown names refused): ``pii`` and ``secrets`` are
    ``"allow"``, ``"redact"`` or ``"reject"``; ``max_chars`` caps content;
    ``forbidden_categories`` refuses content of those categories; ``<private>`` sections
    are stripped (``strip_private``); low-trust text that looks like a prompt injection
    waits for review (``review_injections``); ``signing`` signs entries with the key in
    ``signing_key_env``; ``audit_reads`` records reads in the audit chain;
    ``shared_writes`` says who may change an entry in a shared scope (``"owner"`` or
    ``"any_agent"``)."""

    pii: str = "allow"
    secrets: str = "allow"
    max_chars: int | None = None
    forbidden_categories: frozenset[str] = frozenset()
    strip_private: bool = True
    review_injections: bool = True
    signing: bool | str = "auto"
    signing_key_env: str = DEFAULT_SIGNING_ENV
    audit_reads: bool = True
    shared_writes: str = "owner"


_KNOWN = frozenset(attrs.fields_dict(WritePolicy)) | {"signing_key"}


def _mode(name: str, value: object) -> str:
    if value not in MODES:
        raise ConfigError(f"policy {name!r} must be one of {', '.join(MODES)}, got {value!r}")
    return str(value)


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"policy {name!r} must be True or False, got {value!r}")
    return value


def parse_policy(raw: Mapping[str, Any] | WritePolicy | None) -> WritePolicy:
    """Validate a policy mapping; unknown keys and bad values are ConfigErrors."""
    if raw is None:
        return WritePolicy()
    if isinstance(raw, WritePolicy):
        return raw
    if not isinstance(raw, Mapping):
        raise ConfigError("policy must be a mapping, e.g. {'pii': 'redact'}")
    unknown = set(raw) - _KNOWN
    if unknown:
        raise ConfigError(
            f"unknown policy key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_KNOWN - {'signing_key'}))}"
        )
    if "signing_key" in raw:
        raise SecurityError(
            "an inline signing key is refused: put it in the environment variable "
            f"{raw.get('signing_key_env', DEFAULT_SIGNING_ENV)} instead"
        )
    max_chars = raw.get("max_chars")
    if max_chars is not None and (
        isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1
    ):
        raise ConfigError(f"policy 'max_chars' must be a positive integer, got {max_chars!r}")
    forbidden = raw.get("forbidden_categories", ())
    if isinstance(forbidden, str) or not all(isinstance(c, str) and c for c in forbidden):
        raise ConfigError("policy 'forbidden_categories' must be a list of non-empty strings")
    signing = raw.get("signing", "auto")
    if signing not in (True, False, "auto"):
        raise ConfigError(f"policy 'signing' must be True, False or 'auto', got {signing!r}")
    env = raw.get("signing_key_env", DEFAULT_SIGNING_ENV)
    if not isinstance(env, str) or not env.strip():
        raise ConfigError("policy 'signing_key_env' must name an environment variable")
    return WritePolicy(
        pii=_mode("pii", raw.get("pii", "allow")),
        secrets=_mode("secrets", raw.get("secrets", "allow")),
        max_chars=max_chars,
        forbidden_categories=frozenset(c.casefold() for c in forbidden),
        strip_private=_flag("strip_private", raw.get("strip_private", True)),
        review_injections=_flag("review_injections", raw.get("review_injections", True)),
        signing=signing,
        signing_key_env=env,
        audit_reads=_flag("audit_reads", raw.get("audit_reads", True)),
        shared_writes=_choice("shared_writes", raw.get("shared_writes", "owner"),
                              SHARED_WRITE_MODES),
    )


def _choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ConfigError(f"policy {name!r} must be one of {', '.join(choices)}, got {value!r}")
    return str(value)


def may_change(entry: MemoryEntry, agent_id: str, policy: WritePolicy) -> bool:
    """Whether ``agent_id`` may supersede, correct or forget ``entry``: its own entries
    always; another agent's only in a scope no other agent reads (never, since partitions
    of those scopes are per agent) or when the policy grants ``shared_writes="any_agent"``."""
    return (entry.agent_id == agent_id or entry.scope in _PRIVATE_SCOPES
            or policy.shared_writes == "any_agent")


def check_may_change(entry: MemoryEntry, agent_id: str, policy: WritePolicy, action: str) -> None:
    if not may_change(entry, agent_id, policy):
        raise ScopeError(
            f"cannot {action} entry {entry.id}: it is a {entry.scope.value} entry of agent "
            f"{entry.agent_id!r}, read-only for other agents unless the policy sets "
            "shared_writes='any_agent'"
        )


def _categories(entry: MemoryEntry) -> set[str]:
    found = {t.casefold() for t in entry.tags}
    category = entry.metadata.get("category")
    if isinstance(category, str):
        found.add(category.casefold())
    elif isinstance(category, list | tuple):
        found.update(c.casefold() for c in category if isinstance(c, str))
    return found


def enforce(entry: MemoryEntry, policy: WritePolicy) -> MemoryEntry:
    """Apply ``policy`` to one entry: the transformed entry, or PolicyViolation.

    Order matters: private sections go first (so nothing private is scanned, counted or
    reported), then size and category, then PII and secrets, then the injection screen
    on what will actually be stored.
    """
    content = entry.content
    notes: dict[str, Any] = {}
    if policy.strip_private:
        content, removed = strip_private(content)
        if removed:
            if not content.strip():
                raise PolicyViolation("the content is entirely <private>: nothing is left to store")
            notes["private_sections_stripped"] = removed
    if policy.max_chars is not None and len(content) > policy.max_chars:
        raise PolicyViolation(
            f"content has {len(content)} characters; this memory's policy allows {policy.max_chars}"
        )
    forbidden = _categories(entry) & policy.forbidden_categories
    if forbidden:
        raise PolicyViolation(f"category {', '.join(sorted(forbidden))} may not be stored")
    content = screen_text(content, policy, notes)
    fields = _screen_fields(entry, policy, notes)
    review = entry.review_status
    if policy.review_injections and review is ReviewStatus.NONE:
        signals = needs_review(entry.trust, content)
        if signals:
            review = ReviewStatus.PENDING
            notes["review_reasons"] = signals
    if content == entry.content and review is entry.review_status and not notes:
        return entry
    metadata = dict(fields.pop("metadata", entry.metadata))
    if notes:
        metadata["governance"] = {**dict(metadata.get("governance") or {}), **notes}
    return attrs.evolve(
        entry,
        content=content,
        content_hash=content_hash(content),
        review_status=review,
        metadata=metadata,
        **fields,
    )


def screen_text(text: str, policy: WritePolicy, notes: dict[str, Any]) -> str:
    """``text`` with personal data and secrets masked as ``policy`` asks (PolicyViolation
    in reject mode); what was masked is added to ``notes``."""
    if policy.pii != "allow":
        masked, kinds = redact_pii(text)
        if kinds:
            if policy.pii == "reject":
                raise PolicyViolation(
                    f"content contains personal data ({', '.join(sorted(set(kinds)))}); "
                    "this memory's policy rejects it"
                )
            text = masked
            notes["pii_redacted"] = sorted(set(notes.get("pii_redacted", ())) | set(kinds))
    if policy.secrets != "allow":
        masked, count = redact_secrets(text)
        if count:
            if policy.secrets == "reject":
                raise PolicyViolation(
                    f"content contains {count} secret-shaped value(s); this memory's policy rejects them"
                )
            text = masked
            notes["secrets_redacted"] = notes.get("secrets_redacted", 0) + count
    return text


def scrub_text(text: str, policy: WritePolicy) -> str:
    """What the policy lets through of raw text before anything reads it (``remember``
    extracts facts from this, never from the raw text): private sections gone, personal
    data and secrets masked, or PolicyViolation in reject mode."""
    if policy.strip_private:
        text, _removed = strip_private(text)
    return screen_text(text, policy, {})


def _screen_fields(entry: MemoryEntry, policy: WritePolicy, notes: dict[str, Any]) -> dict[str, Any]:
    """The structured fields the policy changed: a fact's entity, attribute and value,
    tags and metadata strings are written as surely as the content, so they are screened
    the same way. A key is an address, not text: one holding personal data or a secret is
    refused rather than masked into a different address."""
    if policy.pii == "allow" and policy.secrets == "allow":
        return {}
    before = dict(notes)
    if entry.key is not None and screen_text(entry.key, policy, {}) != entry.key:
        raise PolicyViolation(
            "the key contains personal data or a secret; keys are addresses and are "
            "never masked: choose a key without it"
        )
    changed: dict[str, Any] = {}
    for name in ("entity", "attribute", "value"):
        value = getattr(entry, name)
        if value is not None:
            screened = screen_text(value, policy, notes)
            if screened != value:
                changed[name] = screened
    tags = tuple(screen_text(t, policy, notes) for t in entry.tags)
    if tags != entry.tags:
        changed["tags"] = tuple(sorted(dict.fromkeys(tags)))
    metadata = map_strings(dict(entry.metadata), lambda text: screen_text(text, policy, notes))
    if metadata != entry.metadata:
        changed["metadata"] = metadata
    if notes != before:
        notes["redacted_fields"] = sorted(changed)
    return changed
