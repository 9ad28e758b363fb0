"""SQLite storage adapter (the embedded default)."""

from __future__ import annotations

from typing import Any

from tulving.adapters.storage.sqlite.store import SQLiteStorage
from tulving.domain.errors import ConfigError

__all__ = ["SQLiteStorage", "create"]


def create(context: Any, *, path: str | None = None, lock: bool = True) -> SQLiteStorage:
    location = path or getattr(context, "location", "") or ""
    if not location:
        raise ConfigError("the sqlite storage needs a file path (or ':memory:')")
    return SQLiteStorage(location, lock=lock)
