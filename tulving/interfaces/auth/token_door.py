"""The store's token table without a ``Memory``: what ``tulving serve token ...`` and
``tulving mcp token ...`` open.

Only the storage adapter is built (no embedder, no vector index), by the bootstrap as
``Memory`` would build it from the same settings, and opened (migrations included). A
SQLite store is opened without its writer lock (``UnlockedOpen``: after migrating under it
when nobody holds it), so a server can start or run beside a token command: a token command writes one row of the tokens table, which SQLite serialises against the server's
own transactions (its busy timeout), and which the server reads at the next request. No
other table is written through this door, so nothing the server caches (the vector index,
the full-text mirror) can go stale. A server of an older version keeps its tokens in a
file this version moves into the store: upgrade the server before its token commands.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tulving.application.bootstrap import open_store_alone
from tulving.application.plumbing.memory_settings import DEFAULT, normalise_location
from tulving.domain.errors import StorageError
from tulving.domain.records import TokenRecord
from tulving.ports.storage import TokenStore


def token_file_for(location: str) -> str | None:
    """Where an older version kept a file store's tokens (None for other stores)."""
    if not location or location == ":memory:" or "://" in location:
        return None
    return location + ".tokens.json"


def adopt_token_file(location: str, store: TokenStore) -> int:
    """Move the tokens of ``<store>.tokens.json`` (an older version's registry beside a
    file store) into ``store`` and delete the file; returns how many were added.

    Safe to run from several processes at once and again after a crash: a token whose
    id the store has (even revoked) or whose name a live token holds is left out, so a
    token revoked meanwhile never comes back."""
    path = token_file_for(location)
    if path is None or not os.path.exists(path):
        return 0
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return 0
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read token file {path}: {exc}") from exc
    if not isinstance(data, list):
        raise StorageError(f"token file {path} is not a JSON list")
    added = 0
    for raw in data:
        try:
            record = TokenRecord(**{**raw, "created_at": datetime.fromisoformat(
                raw["created_at"])})
        except (TypeError, KeyError, ValueError) as exc:
            raise StorageError(f"malformed token record in {path}: {exc}") from exc
        added += bool(store.add_token(record))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return added


def open_token_store(location: str, *, storage: Any = DEFAULT,
                     options: Mapping[str, Any] | None = None, encryption: Any = None) -> Any:
    """The opened store of ``location`` for its token table (close it when done): the
    store alone, opened beside a server that holds it
    (``bootstrap.open_store_alone``), with an older version's token file moved in."""
    store = open_store_alone(location, storage=storage, options=options,
                             encryption=encryption)
    try:
        adopt_token_file(normalise_location(location), store)
    except BaseException:
        store.close()
        raise
    return store
