"""Reading memories from JSON Lines (``tulving store --jsonl``, the demo data set).

One JSON object per line with ``Memory.store`` fields; ``valid_from``/``valid_until``
may be ISO-8601 strings (a date alone means midnight UTC). Blank lines and lines starting
with ``#`` are skipped. A malformed line is a ValidationError naming the line, raised
before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from tulving.domain.errors import ValidationError

_TIME_FIELDS = ("valid_from", "valid_until")


def parse_time(label: str, value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{label}: expected an ISO-8601 date/time, got {value!r}") from exc
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def parse_lines(lines: Iterable[str], source: str = "<input>") -> Iterator[dict[str, Any]]:
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            item = json.loads(text)
        except ValueError as exc:
            raise ValidationError(f"{source}:{number}: not JSON ({exc})") from exc
        if not isinstance(item, dict):
            raise ValidationError(f"{source}:{number}: expected a JSON object")
        for name in _TIME_FIELDS:
            if isinstance(item.get(name), str):
                item[name] = parse_time(f"{source}:{number}: {name}", item[name])
        yield item
