"""Step outputs and failures as memory text: bounded, without secrets, without raw errors.

Three rules, the ones Kairos applies to what it logs and feeds back to a model:

- values under sensitive keys (Kairos' ``DEFAULT_SENSITIVE_PATTERNS``: ``*token*``,
  ``*secret*``, ``*password*``, ...) never reach a memory (``kairos.redact_sensitive``);
- credential shapes in the text are masked, by Kairos' patterns and by Tulving's
  (``tulving.redact``: API keys, bearer tokens, JWTs, private keys, URL credentials);
- a failure is described only by structural metadata built with
  ``kairos.sanitize_retry_context`` (error class, failing fields, expected and actual
  types), never by an exception message or the failing output, which may carry a prompt
  injection or a secret.

Everything is capped (:data:`MAX_CHARS`) so that one huge output cannot fill the store.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import kairos
from kairos.security import scrub_credentials

import tulving

MAX_CHARS = 4_000
#: Failed attempts described per step (later ones are counted, not listed).
MAX_ATTEMPTS_LISTED = 5
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_REDACTED = "[REDACTED]"


def clean_text(text: str, limit: int = MAX_CHARS) -> str:
    """Masked, control characters removed, at most ``limit`` characters."""
    text = _CONTROL.sub("", text)
    text = tulving.redact(scrub_credentials(text))
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def redacted(value: Any) -> Any:
    """``value`` with every sensitive key's value replaced, at any depth."""
    if isinstance(value, Mapping):
        return kairos.redact_sensitive({str(k): v for k, v in value.items()})
    if isinstance(value, list | tuple):
        return redacted({"v": list(value)})["v"]
    return value


def render_value(value: Any, limit: int = MAX_CHARS) -> str:
    """A step output as memory text: a string as is, a mapping as ``field: value`` lines
    (nested values as compact JSON), anything else as JSON."""
    value = redacted(value)
    if isinstance(value, str):
        text = value
    elif isinstance(value, Mapping):
        lines = []
        for k, v in value.items():
            shown = v if isinstance(v, str) else _json(v)
            lines.append(f"{k}: {shown}")
        text = "\n".join(lines)
    else:
        text = _json(value)
    return clean_text(text, limit)


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=_type_name)
    except (TypeError, ValueError, RecursionError):
        return f"<{type(value).__name__}>"


def _type_name(value: Any) -> str:
    return f"<{type(value).__name__}>"


def execution_failure(error: BaseException, attempt: int) -> dict[str, object]:
    """What Kairos would hand a retry: the error's class, never its message."""
    if not isinstance(error, Exception):
        error = Exception()
    context: dict[str, object] = kairos.sanitize_retry_context(None, error, attempt, "execution")
    return context


def validation_failure(result: Any, phase: str, attempt: int) -> dict[str, object]:
    """The failing contract: field names and expected/actual types, sanitized by Kairos."""
    errors = [
        {"field": str(e.field), "expected": str(e.expected), "actual": str(e.actual)}
        for e in list(getattr(result, "errors", []) or [])[:20]
    ]
    context: dict[str, object] = kairos.sanitize_retry_context(
        None, None, attempt, "validation", validation_errors=errors)
    context["phase"] = "input" if phase == "input" else "output"
    return context


def describe_failure(context: Mapping[str, object]) -> str:
    """One clause for one failed attempt, from a sanitized retry context."""
    attempt = context.get("attempt")
    if context.get("error_type") == "validation":
        fields = _as_list(context.get("failed_fields"))
        expected = _as_map(context.get("expected_types"))
        actual = _as_map(context.get("actual_types"))
        parts = [f"{f} (expected {expected.get(f, '?')}, got {actual.get(f, '?')})"
                 for f in fields[:10]]
        what = ", ".join(parts) or "no field reported"
        return f"attempt {attempt}: {context.get('phase', 'output')} contract failed on {what}"
    return f"attempt {attempt}: {context.get('error_class', 'Exception')} raised"


def describe_failures(contexts: Sequence[Mapping[str, object]]) -> str:
    shown = [describe_failure(c) for c in contexts[:MAX_ATTEMPTS_LISTED]]
    more = len(contexts) - len(shown)
    return "; ".join(shown) + (f"; and {more} more failed attempts" if more > 0 else "")


def _as_list(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _as_map(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def slug(value: object, limit: int = 64) -> str:
    """A key segment or tag from a name: ``[A-Za-z0-9._:-]`` only, no ``..``, bounded."""
    text = re.sub(r"[^A-Za-z0-9._:-]+", "-", str(value))
    text = re.sub(r"\.{2,}", ".", text).strip("-.:_")
    return text[:limit].strip("-.:_")
