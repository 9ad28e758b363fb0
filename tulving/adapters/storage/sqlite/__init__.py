"""SQLite storage adapter (the embedded default)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tulving.adapters.storage.sqlite.store import MIRROR_FROM, SQLiteStorage
from tulving.domain.errors import ConfigError

if TYPE_CHECKING:
    from tulving.plugins.registry import AdapterContext

__all__ = ["SQLiteStorage", "create"]


def create(
    context: AdapterContext | None, *, path: str | None = None, lock: bool = True,
    fulltext_mirror_from: int | bool | None = MIRROR_FROM,
    vector_format: str | None = None,
) -> SQLiteStorage:
    """``fulltext_mirror_from``: rows from which full-text search runs on the in-memory
    mirror of the FTS5 index (same ranking, faster on large stores); None or False (TOML
    has no null) turns it off. ``vector_format``: ``float32`` or ``float16`` (vectors take
    half the bytes on disk; a store kept in the other format is converted on open); unset
    keeps the store's own (float16 for a new store: LoCoMo measures the same with either,
    and it is the one float copy of a vector at rest, see the README's Benchmarks)."""
    location = path or (context.location if context is not None else "")
    if not location:
        raise ConfigError("the sqlite storage needs a file path (or ':memory:')")
    if fulltext_mirror_from is False:
        fulltext_mirror_from = None
    if fulltext_mirror_from is not None and (
            isinstance(fulltext_mirror_from, bool) or not isinstance(fulltext_mirror_from, int)
            or fulltext_mirror_from < 0):
        raise ConfigError("fulltext_mirror_from must be a row count >= 0, or None/false to "
                          f"turn the mirror off; got {fulltext_mirror_from!r}")
    return SQLiteStorage(location, lock=lock, fulltext_mirror_from=fulltext_mirror_from,
                         encryption=context.encryption if context is not None else None,
                         vector_format=vector_format, new_store_format="float16",
                         read_only=context is not None and context.read_only)
