"""Input rules for writes. Every check raises a typed error before anything is written.

Limits (documented in ``docs/library/input-rules.md``):
- content: a non-empty ``str`` of at most ``MAX_CONTENT_CHARS`` characters;
- key: ``KEY_PATTERN`` — starts with a letter or digit, then letters, digits and
  ``. _ : / -``, at most 200 characters, no empty path segment and no ``..``;
- tags: at most ``MAX_TAGS`` strings of 1..64 printable characters, no commas;
- importance, confidence, trust: finite floats in [0, 1].
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from tulving.domain.errors import ContentError, KeyFormatError, ValidationError
from tulving.domain.masks import ROW_SLOT

MAX_CONTENT_CHARS = 100_000
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_METADATA_BYTES = 64_000
#: Nesting of JSON-like values (metadata, a bundle's manifest and records, JSON lines):
#: deeper input is refused as a fault of the input, before a recursive parser, encoder
#: or walker would overflow Python's stack on it.
MAX_DEPTH = 64
KEY_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/\-]{0,199}")


def first_invalid_text(value: object, where: str = "", depth: int = 0) -> str | None:
    """Where in ``value`` (a str, or JSON-like lists, tuples and dicts of them, keys
    included) a string is not valid Unicode, i.e. holds a lone surrogate such as
    ``"\\ud800"`` that no UTF-8 store, index or wire can carry; None when all are valid."""
    if isinstance(value, str):
        if value.isascii():
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"{where or 'the text'} (a lone surrogate at position {exc.start})"
        return None
    if depth > 64:
        return None  # deeper structures are refused by their own checks (metadata size)
    if isinstance(value, dict):
        for key, item in value.items():
            found = (first_invalid_text(key, f"{where}[key]", depth + 1)
                     or first_invalid_text(item, f"{where}[{key!r}]", depth + 1))
            if found:
                return found
    elif isinstance(value, list | tuple | set | frozenset):
        for i, item in enumerate(value):
            found = first_invalid_text(item, f"{where}[{i}]", depth + 1)
            if found:
                return found
    return None


def too_deep(value: object, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` (dicts and lists) nests deeper than ``limit``; iterative, so it
    is safe on any depth."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def nesting_of(text: str | bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether JSON ``text`` opens more than ``limit`` brackets before closing them (a
    scan of the raw text, before any parser recurses into it; brackets inside strings
    count too, which only errs towards refusing absurd input)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    depth = 0
    for byte in data.translate(None, _NOT_BRACKETS):
        depth += 1 if byte in (0x5B, 0x7B) else -1
        if depth > limit:
            return True
    return False


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def check_unicode(label: str, value: object) -> None:
    """ValidationError if any string in ``value`` is not valid Unicode (see above)."""
    found = first_invalid_text(value, label)
    if found is not None:
        raise ValidationError(f"{found} is not valid Unicode text")


def check_content(content: object, *, max_chars: int = MAX_CONTENT_CHARS) -> str:
    if not isinstance(content, str):
        raise ContentError(f"content must be str, got {type(content).__name__}")
    if not content.strip():
        raise ContentError("content is empty or whitespace only")
    if len(content) > max_chars:
        raise ContentError(f"content has {len(content)} characters; the limit is {max_chars}")
    if "\x00" in content:
        raise ContentError("content contains a NUL character")
    return content


def check_key(key: object) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str):
        raise KeyFormatError(f"key must be str or None, got {type(key).__name__}")
    if not KEY_PATTERN.fullmatch(key) or "//" in key or ".." in key or key.endswith("/"):
        raise KeyFormatError(
            f"malformed key {key!r}: use letters, digits and . _ : / - (max 200), "
            "starting with a letter or digit, without empty segments or '..'"
        )
    return key


def check_unit_interval(label: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{label} must be a number in [0, 1], got {value!r}")
    number = float(value)
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise ValidationError(f"{label} must be in [0, 1], got {value!r}")
    return number


def check_tags(tags: object) -> tuple[str, ...]:
    if isinstance(tags, str | bytes) or not isinstance(tags, Iterable):
        raise ValidationError("tags must be a list or tuple of strings")
    result: list[str] = []
    for tag in tags:
        if not isinstance(tag, str):
            raise ValidationError(f"tags must be strings, got {type(tag).__name__}")
        clean = tag.strip()
        if not clean or len(clean) > MAX_TAG_CHARS or "," in clean or not clean.isprintable():
            raise ValidationError(f"invalid tag {tag!r}: 1..{MAX_TAG_CHARS} printable chars")
        if clean not in result:
            result.append(clean)
    if len(result) > MAX_TAGS:
        raise ValidationError(f"at most {MAX_TAGS} tags per entry")
    return tuple(sorted(result))  # canonical order: every adapter returns tags sorted


def check_metadata(metadata: object, dumps: Any) -> dict[str, Any]:
    """Metadata must round-trip through JSON; ``dumps`` is injected to keep this pure."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise ValidationError("metadata must be a mapping")
    if not all(isinstance(k, str) for k in metadata):
        raise ValidationError("metadata keys must be strings")
    if ROW_SLOT in metadata:
        raise ValidationError(f"metadata key {ROW_SLOT!r} is reserved")
    if too_deep(dict(metadata)):
        raise ValidationError(f"metadata nests deeper than {MAX_DEPTH} levels")
    try:
        encoded = dumps(dict(metadata))
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"metadata is not JSON-serialisable: {exc}") from exc
    if len(encoded) > MAX_METADATA_BYTES:
        raise ValidationError(f"metadata is over {MAX_METADATA_BYTES} bytes as JSON")
    return dict(metadata)


def check_optional_text(label: str, value: object, *, max_chars: int = 1000) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > max_chars:
        raise ValidationError(f"{label} must be a non-empty string of at most {max_chars}")
    return value
