"""What curation may show of a memory, and how: the rules every curated block shares.

Held-for-review, rejected and archived memories never reach a prompt (``curatable``);
secret shapes, and all of a memory stored under a credential-named key such as
``db/password``, are masked before a line is measured (``shown_text``), so masks are
counted in the budget; the entries a ``CuratedContext`` returns are masked the same way
(``redacted``).
"""

from __future__ import annotations

import attrs

from tulving.domain.entry import MemoryEntry
from tulving.domain.injection import is_curatable
from tulving.domain.redaction import redact_stored

curatable = is_curatable


def shown_text(entry: MemoryEntry) -> str:
    return redact_stored(entry.content, entry.key)


def redacted(entry: MemoryEntry) -> MemoryEntry:
    clean = shown_text(entry)
    return entry if clean == entry.content else attrs.evolve(entry, content=clean)
