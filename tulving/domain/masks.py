"""Where a memory's texts are masked, found once when it is written and kept with it.

Every door masks what it shows (``redaction``), and the same memories are shown again and
again, most for the first time in a process by ``curate()``. Finding the sensitive spans
costs tens to hundreds of microseconds a text (hundreds of rules); applying known spans
costs about one. So the writer finds them once (:func:`tulving.domain.redaction.find_masks`)
and the storage adapters keep them beside the entry; a door only applies them.

Masks are a cache of a pure function and are trusted only while it would give the same
answer: ``rules`` names the rule sets that found them and ``check`` the exact texts they
were found in. Masks of other rules (an upgrade of a rule library) or of other texts (an
entry changed since, or masks that came with an import) are ignored, and the door scans
the texts as it did before. Nothing a caller sends can set them: the writer computes them
and a row's reserved slot is overwritten from the entry on every write.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

import attrs

#: A span ``(start, end, kind)`` of one text.
Span = tuple[int, int, str]


def check_of(texts: Sequence[str]) -> int:
    """CRC-32 of the texts in order: cheap (about a microsecond a kilobyte), and any
    change of a character (or of where one text ends) changes it."""
    joined = "\x1f".join(texts).encode("utf-8", "surrogatepass")
    return zlib.crc32(joined)


@attrs.frozen
class Masks:
    """Spans per text of an entry, in the order of ``entry_texts``: content, value, key,
    then each tag."""

    rules: str
    check: int
    spans: tuple[tuple[Span, ...], ...]

    def fits(self, rules: str, texts: Sequence[str]) -> bool:
        return (self.rules == rules and len(self.spans) == len(texts)
                and self.check == check_of(texts))

    def to_json(self) -> dict[str, Any]:
        return {"r": self.rules, "c": self.check,
                "s": [[list(span) for span in spans] for spans in self.spans]}

    @classmethod
    def from_json(cls, data: Any) -> Masks | None:
        """Masks read back from a row; None for anything malformed (the door then
        scans, so a damaged slot costs time, never a leak)."""
        try:
            spans = tuple(tuple((int(s), int(e), str(k)) for s, e, k in text)
                          for text in data["s"])
            return cls(str(data["r"]), int(data["c"]), spans)
        except (TypeError, ValueError, KeyError):
            return None


#: The reserved slot of a row's metadata JSON where SQL adapters keep an entry's masks
#: (a column of its own would need a migration of every adapter's schema for a cache);
#: lifted out on read, so ``entry.metadata`` never shows it.
ROW_SLOT = "_tulving_masks"


def pack_metadata(metadata: Any, masks: Masks | None) -> str:
    """The metadata column's JSON: the entry's metadata and its masks in the slot."""
    data = dict(metadata)
    data.pop(ROW_SLOT, None)
    if masks is not None:
        data[ROW_SLOT] = masks.to_json()
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def unpack_metadata(data: dict[str, Any]) -> tuple[dict[str, Any], Masks | None]:
    """``data`` (the parsed column) without the slot, and the masks it held."""
    if ROW_SLOT not in data:
        return data, None
    raw = data.pop(ROW_SLOT)
    return data, Masks.from_json(raw)
