"""Reading memories from JSON Lines (``tulving store --jsonl``, the demo data set).

One JSON object per line with ``Memory.store`` fields; ``valid_from``/``valid_until``
may be ISO-8601 strings (a date alone means midnight UTC). Blank lines and lines starting
with ``#`` are skipped. A malformed line (not JSON, not an object, nested deeper than
``MAX_DEPTH``, a lone surrogate in a string) is a ValidationError naming the line, raised
before anything is written; ``numbered_lines`` reads a whole file and names every
malformed line at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from tulving.domain.errors import ValidationError
from tulving.domain.validation import MAX_DEPTH, first_invalid_text, nesting_of

_TIME_FIELDS = ("valid_from", "valid_until")


def parse_time(label: str, value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{label}: expected an ISO-8601 date/time, got {value!r}") from exc
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def parse_lines(lines: Iterable[str], source: str = "<input>") -> Iterator[dict[str, Any]]:
    for number, line in enumerate(lines, 1):
        item = _parse(line, number, source)
        if item is not None:
            yield item


def numbered_lines(
    lines: Iterable[str], source: str = "<input>"
) -> tuple[list[tuple[int, dict[str, Any]]], list[tuple[int, str]]]:
    """(line number, item) for every memory line, and (line number, reason) for every
    line that is not a JSON object of the right shape: all of them, not the first."""
    items: list[tuple[int, dict[str, Any]]] = []
    bad: list[tuple[int, str]] = []
    for number, line in enumerate(lines, 1):
        try:
            item = _parse(line, number, source)
        except ValidationError as exc:
            bad.append((number, str(exc).removeprefix(f"{source}:{number}: ")))
        else:
            if item is not None:
                items.append((number, item))
    return items, bad


def _parse(line: str, number: int, source: str) -> dict[str, Any] | None:
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    if nesting_of(text):
        raise ValidationError(f"{source}:{number}: nests deeper than {MAX_DEPTH} levels")
    try:
        item = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValidationError(f"{source}:{number}: not JSON ({str(exc)[:200]})") from exc
    if not isinstance(item, dict):
        raise ValidationError(f"{source}:{number}: expected a JSON object")
    invalid = first_invalid_text(item, "a field")
    if invalid is not None:  # "\ud800" in the JSON: no store can hold it
        raise ValidationError(f"{source}:{number}: {invalid} is not valid Unicode text")
    for name in _TIME_FIELDS:
        if isinstance(item.get(name), str):
            item[name] = parse_time(f"{source}:{number}: {name}", item[name])
    return item
