"""What curation may show of a memory, and how: the rules every curated block shares.

Held-for-review, rejected and archived memories never reach a prompt (``curatable``);
secret shapes and personal data (the masks found once at write time and kept with the
entry, see ``tulving.domain.masks``), and all of a memory stored under a credential-named
key such as ``db/password``, are masked before a line is measured (``shown_text``), so
masks are counted in the budget; packing prints keys in its labels, so candidates carry
their keys as every door shows them (``key_shown``); the entries a ``CuratedContext``
returns are masked the same way, content, key, tags and value (``redacted``).
"""

from __future__ import annotations

import attrs

from tulving.domain.entry import MemoryEntry
from tulving.domain.injection import is_curatable
from tulving.domain.redaction import (
    shown_content,
    shown_key,
    shown_tags,
    shown_value,
    with_key_shown,
)

curatable = is_curatable
key_shown = with_key_shown


def shown_text(entry: MemoryEntry) -> str:
    return shown_content(entry)


def shown_key_text(entry: MemoryEntry) -> str | None:
    """The entry's key as the key index prints it."""
    key = shown_key(entry)
    return None if key is None else str(key)


def redacted(entry: MemoryEntry) -> MemoryEntry:
    clean, key, tags = shown_content(entry), shown_key(entry), shown_tags(entry)
    value = shown_value(entry)
    if (clean, key, tags, value) == (entry.content, entry.key, entry.tags, entry.value):
        return entry
    # plain strings: what a caller gets is text, not redaction's marker type
    return attrs.evolve(entry, content=str(clean), key=None if key is None else str(key),
                        tags=tuple(map(str, tags)), value=None if value is None else str(value))
