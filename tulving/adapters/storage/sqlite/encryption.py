"""How connections to one SQLite store are opened: the stdlib ``sqlite3`` for a plain
store, SQLCipher (``sqlcipher3-wheels``) with a raw key for an encrypted one.

Why it looks like this:
- SQLCipher would run its own passphrase derivation (PBKDF2, ~0.15 s) on *every*
  connection, and a store opens several (writer, pooled readers, bookkeeping, the
  full-text mirror). So the key is derived once (:mod:`tulving.domain.sealing`, with the
  16-byte salt SQLCipher keeps at the start of the file) and handed over as raw key data,
  ``x'<key><salt>'``, which SQLCipher uses as is.
- The file's first bytes say which it is: a plain database starts with
  ``SQLite format 3``, an encrypted one with its random salt. A key given for a plain
  file, or no key for a file that looks encrypted, is refused before any connection
  writes a byte; a wrong key fails on the first read (SQLCipher's HMAC check), before
  the store sets WAL or migrates. So a wrong or missing key never changes the file.
- ``temp_store = MEMORY`` on encrypted connections: SQLite's spill files for sorts and
  temporary tables never reach the disk in clear.
- A larger page cache on encrypted connections (:data:`CIPHER_PRAGMAS`): SQLCipher cannot
  memory-map the file (pages must be decrypted), so a page not in the cache costs a read
  plus an AES and HMAC pass; search reads tens of rows at random. Measured at 100k
  entries: hybrid search 1.27x the plain store with the plain store's 32 MB cache, 1.22x
  with 256 MB; 128 MB is the compromise (filled only as pages are read).
- Pages are authenticated with HMAC-SHA256 rather than SQLCipher 4's default SHA-512:
  the CPUs this runs on hash SHA-256 in hardware, and a random read on an encrypted file
  measured 48 us against 67 us (29 us plain). Part of the file format, so every connection
  and every ATTACH of an encrypted store says it (:data:`HMAC`).
- The two drivers raise their own exception classes; :data:`ERRORS` and friends list
  both so the store catches either.
- The first bytes are never read with a plain ``open``: closing *any* descriptor of a
  file drops every POSIX lock the process holds on it, SQLite's included. They are asked
  of the store's own SQLite library, or taken from the record of a store this process
  holds (:mod:`.file_head`).
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from tulving.adapters.storage.sqlite.file_head import PLAIN_HEADER, file_head
from tulving.distribution import missing_extra
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.errors import EncryptionError, EncryptionKeyError
from tulving.domain.sealing import SALT_BYTES, new_salt, subkey

try:  # the 'encryption' extra
    from sqlcipher3 import dbapi2 as _cipher
except ImportError:  # pragma: no cover - installed with the encryption extra
    _cipher = None  # type: ignore[assignment]  # the module, or None without the extra

HMAC = "HMAC_SHA256"
#: Applied after the store's own pragmas on every encrypted connection.
CIPHER_PRAGMAS = ("cache_size = -131072",)

_drivers: list[Any] = [sqlite3] + ([_cipher] if _cipher is not None else [])
ERRORS: tuple[type[Exception], ...] = tuple(d.Error for d in _drivers)
DATABASE_ERRORS: tuple[type[Exception], ...] = tuple(d.DatabaseError for d in _drivers)
INTEGRITY_ERRORS: tuple[type[Exception], ...] = tuple(d.IntegrityError for d in _drivers)
OPERATIONAL_ERRORS: tuple[type[Exception], ...] = tuple(d.OperationalError for d in _drivers)


def cipher_driver() -> Any:
    if _cipher is None:
        raise EncryptionError(missing_extra("an encrypted store", "encryption", "sqlcipher3"))
    return _cipher


def looks_encrypted(path: str, head: bytes) -> bool:
    """A non-empty file made of whole pages that is not a plain SQLite database: what
    SQLCipher writes (a text file or a truncated copy is not taken for one)."""
    if not head or head == PLAIN_HEADER:
        return False
    size = os.path.getsize(path)
    return size >= 1024 and size % 512 == 0


class Keying:
    """Opens every connection to one store file, with or without its key."""

    def __init__(self, path: str, key: EncryptionKey | None, *,
                 label: str = "sqlcipher page key", salt: bytes | None = None) -> None:
        """``label`` and ``salt``: a file beside the store (its read journal) keys its
        pages with a subkey of its own (``label``) under the store's salt, so opening it
        costs no second passphrase derivation (``domain.sealing``)."""
        self.path = path
        self.key = key
        self._label = label
        self._fixed_salt = salt
        self.encrypted = key is not None
        self.driver: Any = cipher_driver() if key is not None else sqlite3
        self.Row: Any = self.driver.Row
        self.pragmas: tuple[str, ...] = CIPHER_PRAGMAS if key is not None else ()
        self._pragma: str | None = None
        self._salt = b""

    def written_head(self) -> bytes:
        """What the file starts with once a connection has opened it: the plain header,
        or the salt this store keys its pages with."""
        return PLAIN_HEADER if self.key is None else self._salt

    # -- checks before the first connection ----------------------------------------------
    def check_file(self) -> None:
        """Refuse a key for a plain file and a plain open of an encrypted one."""
        if self.path == ":memory:":
            if self.encrypted:
                raise EncryptionError("an in-memory store has nothing on disk to encrypt")
            return
        head = file_head(self.path, self.driver)
        if self.key is None:
            if looks_encrypted(self.path, head):
                raise EncryptionKeyError(
                    f"{self.path} is encrypted (or damaged): open it with encryption= "
                    "(--encryption, TULVING_ENCRYPTION) and its key"
                )
            return
        if head == PLAIN_HEADER:
            raise EncryptionError(
                f"{self.path} is not encrypted; convert it first with `tulving encrypt` "
                "or open it without a key"
            )

    def key_pragma(self) -> str:
        """``x'<key><salt>'`` for this file: its own salt, or a new one for a new file."""
        assert self.key is not None
        if self._pragma is None:
            head = file_head(self.path, self.driver)
            salt = (self._fixed_salt if self._fixed_salt is not None
                    else head if len(head) == SALT_BYTES else new_salt())
            self._salt = salt
            raw = subkey(self.key, salt, self._label)
            self._pragma = f"x'{raw.hex()}{salt.hex()}'"
        return self._pragma

    # -- connections ---------------------------------------------------------------------
    def connect(self, target: str | None = None, **kwargs: Any) -> Any:
        """A connection to the store (or ``target``, e.g. a ``file:`` URI of it), keyed and
        checked: :class:`EncryptionKeyError` if the key does not open the file."""
        conn = self.driver.connect(self.path if target is None else target, **kwargs)
        if self.key is None:
            return conn
        try:
            conn.execute("PRAGMA cipher_log_level = NONE")  # the typed error says it
            conn.execute(f'PRAGMA key = "{self.key_pragma()}"')
            conn.execute(f"PRAGMA cipher_hmac_algorithm = {HMAC}")
            conn.execute("PRAGMA temp_store = MEMORY")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except self.driver.DatabaseError as exc:
            conn.close()
            raise EncryptionKeyError(
                f"the key from {self.key.source} does not open {self.path} "
                f"(a wrong key, or the file is damaged): {exc}"
            ) from None
        return conn

    def connect_memory(self, **kwargs: Any) -> Any:
        """A private in-memory database on the same driver, to ATTACH the store to."""
        conn = self.driver.connect(":memory:", **kwargs)
        if self.key is not None:
            conn.execute("PRAGMA temp_store = MEMORY")
        return conn

    def attach(self, conn: Any, location: str, name: str) -> None:
        if self.key is None:
            conn.execute(f"ATTACH DATABASE ? AS {name}", (location,))
        else:
            attach_encrypted(conn, location, name, self.key_pragma())


def attach_encrypted(conn: Any, location: str, name: str, pragma: str) -> None:
    """ATTACH an encrypted file (an attached database takes SQLCipher's defaults)."""
    conn.execute(f"PRAGMA cipher_default_hmac_algorithm = {HMAC}")
    conn.execute(f"ATTACH DATABASE ? AS {name} KEY ?", (location, pragma))
