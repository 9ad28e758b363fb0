"""Convert a SQLite store in place: plain to encrypted, one key to another, or back.

Why it looks like this: ``PRAGMA rekey`` rewrites pages in place, and a plain database
cannot be rekeyed at all. Instead the whole store is exported (``sqlcipher_export``) to a
new file beside it under the new key, the copy is checked (it opens with the new key,
``integrity_check`` passes, it holds as many rows as the original), fsynced, and renamed
over the original in one ``os.replace``. A crash at any moment leaves either the old file,
whole, under the old key (plus a leftover ``.converting`` file that the next conversion
removes; it is encrypted when the target is) or the new file, whole, under the new key.
The writer lock is held throughout, so no process writes the store meanwhile, and the
old WAL is checkpointed and gone before the switch (a WAL left beside the new file would
be replayed into it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any

import attrs

from tulving.adapters._durable_files import fsync_path
from tulving.adapters.storage.sqlite.encryption import (
    DATABASE_ERRORS,
    HMAC,
    Keying,
    attach_encrypted,
    cipher_driver,
)
from tulving.adapters.storage.sqlite.lock import WriterLock
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.errors import ConfigError, EncryptionError, StorageError

SUFFIX = ".converting"
#: Tables whose row counts must match between the original and the copy.
_COUNTED = ("entries", "entry_tags", "embeddings", "strong_embeddings", "audit_log", "sessions", "jobs", "meta")


@attrs.frozen
class Conversion:
    path: str
    encrypted_before: bool
    encrypted_after: bool
    entries: int
    bytes_after: int


def _remove_leftovers(path: str) -> None:
    for leftover in (path + SUFFIX, path + SUFFIX + "-journal", path + SUFFIX + "-wal",
                     path + SUFFIX + "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(leftover)


def _counts(conn: Any) -> dict[str, int]:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return {t: int(conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0])
            for t in _COUNTED if t in tables}


def convert(path: str, old: EncryptionKey | None, new: EncryptionKey | None,
            before_switch: Callable[[], None] | None = None) -> Conversion:
    """Re-write the store at ``path`` from key ``old`` (None: plain) to ``new`` (None:
    plain). Typed errors, and an untouched store, when the old key does not open it.
    ``before_switch`` runs once the copy has checked out, just before the rename (the
    caller drops caches that must not outlive the old store)."""
    if path == ":memory:" or "://" in path:
        raise ConfigError("only a SQLite store file can be converted")
    if not os.path.isfile(path):
        raise StorageError(f"no store at {path}")
    if old is None and new is None:
        raise ConfigError("nothing to do: neither an old nor a new key")
    if old is not None and new is not None and old.same_secret(new):
        raise ConfigError("the new key is the same as the old one")
    driver = cipher_driver()
    lock = WriterLock(path + ".lock")
    lock.acquire()
    try:
        _remove_leftovers(path)
        source_keying = Keying(path, old)
        source_keying.check_file()
        # The source, read by SQLCipher (plain SQLite is SQLCipher with no key).
        checked = source_keying.connect(isolation_level=None)  # typed error on a wrong key
        checked.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        before = _counts(checked)
        checked.close()
        target = path + SUFFIX
        target_keying = Keying(target, new)
        source = driver.connect(path, isolation_level=None)
        try:
            if old is not None:
                source.execute(f'PRAGMA key = "{source_keying.key_pragma()}"')
                source.execute(f"PRAGMA cipher_hmac_algorithm = {HMAC}")
            source.execute("PRAGMA temp_store = MEMORY")
            if new is not None:
                attach_encrypted(source, target, "target", target_keying.key_pragma())
            else:
                source.execute("ATTACH DATABASE ? AS target KEY ''", (target,))
            source.execute("SELECT sqlcipher_export('target')")
            source.execute("DETACH DATABASE target")
        finally:
            source.close()
        copy = target_keying.connect(isolation_level=None)
        try:
            ok = copy.execute("PRAGMA integrity_check").fetchone()[0]
            after = _counts(copy)
        finally:
            copy.close()
        if ok != "ok" or after != before:
            _remove_leftovers(path)
            raise StorageError(f"the converted copy of {path} did not check out ({ok}, "
                               f"{after} rows against {before}); the store is unchanged")
        fsync_path(target)
        for stale in (path + "-wal", path + "-journal"):
            if os.path.exists(stale) and os.path.getsize(stale) > 0:
                _remove_leftovers(path)
                raise StorageError(f"{stale} still holds changes; the store is unchanged")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + "-shm")
        if before_switch is not None:
            before_switch()
        os.replace(target, path)  # the switch: one atomic rename
        with contextlib.suppress(OSError):
            fsync_path(os.path.dirname(os.path.abspath(path)))
        _remove_leftovers(path)
    except DATABASE_ERRORS as exc:
        _remove_leftovers(path)
        raise StorageError(f"cannot convert {path}: {exc}; the store is unchanged") from exc
    except EncryptionError:
        _remove_leftovers(path)
        raise
    finally:
        lock.release()
    return Conversion(path, old is not None, new is not None, before.get("entries", 0),
                      os.path.getsize(path))
