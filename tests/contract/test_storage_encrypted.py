"""The storage contract suite against an encrypted (SQLCipher) SQLite store, with and
without the full-text mirror: an encrypted store is a store that works, on SQLCipher's
own SQLite (3.51), while the plain suite runs on the stdlib's (3.40)."""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contract_tests.governance import BackChannel
from contract_tests.storage import StorageContract
from tulving.domain.encryption_key import EncryptionKey
from tulving.ports.storage import Storage

from .back_channels import SQLiteBackChannel

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sqlcipher3") is None, reason="the encryption extra is missing")

KEY = EncryptionKey(b"contract suite passphrase", source="test")


def raw_key_pragma(path: str, secret: bytes) -> str:
    """The documented key derivation, written again here so the back channel does not
    trust the adapter's: PBKDF2-HMAC-SHA512 (256k) over the file's 16-byte salt, then
    HKDF-SHA256 with the label 'tulving sqlcipher page key'; pages under HMAC-SHA256."""
    with open(path, "rb") as handle:
        salt = handle.read(16)
    master = hashlib.pbkdf2_hmac("sha512", secret, salt, 256_000, dklen=32)
    prk = hmac.new(salt, master, hashlib.sha256).digest()
    key = hmac.new(prk, b"tulving sqlcipher page key\x01", hashlib.sha256).digest()
    return f"x'{key.hex()}{salt.hex()}'"


class SQLCipherBackChannel(SQLiteBackChannel):
    """SQLCipher on the file with the key derived independently (see above)."""

    def __init__(self, path: str, secret: bytes) -> None:
        super().__init__(path)
        self._pragma = raw_key_pragma(path, secret)

    def _connect(self) -> Any:
        from sqlcipher3 import dbapi2

        conn = dbapi2.connect(f"file:{self.path}?mode=ro", uri=True)
        conn.execute(f'PRAGMA key = "{self._pragma}"')
        conn.execute("PRAGMA cipher_hmac_algorithm = HMAC_SHA256")
        conn.row_factory = dbapi2.Row
        return conn


class TestEncryptedSQLiteStorage(StorageContract):
    mirror_from: int | None = 5_000

    @pytest.fixture
    def make_storage(self, tmp_path: Path) -> Callable[..., Storage]:
        from tulving.adapters.storage.sqlite import SQLiteStorage

        def make(name: str = "default") -> Storage:
            return SQLiteStorage(str(tmp_path / f"{name}.db"), encryption=KEY,
                                 fulltext_mirror_from=self.mirror_from)

        return make

    @pytest.fixture
    def open_read_only(self, tmp_path: Path) -> Callable[..., Storage]:
        from tulving.adapters.storage.sqlite import SQLiteStorage

        return lambda name="default": SQLiteStorage(str(tmp_path / f"{name}.db"),
                                                    encryption=KEY, read_only=True)

    @pytest.fixture
    def reopen_with_key(self, tmp_path: Path) -> Callable[..., Storage]:
        from tulving.adapters.storage.sqlite import SQLiteStorage

        return lambda name, key: SQLiteStorage(str(tmp_path / f"{name}.db"), encryption=key)

    @pytest.fixture
    def back_channel(self, storage: Storage) -> BackChannel:
        path = storage.path  # type: ignore[attr-defined]
        return SQLCipherBackChannel(path, KEY.secret)

    def test_the_back_channel_reads_through_the_cipher(self, storage: Storage) -> None:
        """The file holds no plain SQLite header, and the independent key opens it."""
        path = storage.path  # type: ignore[attr-defined]
        assert not Path(path).read_bytes().startswith(b"SQLite format 3")
        assert SQLCipherBackChannel(path, KEY.secret).entry_rows() == []


class TestEncryptedSQLiteStorageFullTextMirror(TestEncryptedSQLiteStorage):
    """The in-memory mirror of the FTS5 index attaches the encrypted file with its key."""

    mirror_from = 0
