"""Encrypted bundles: the whole zip (manifest, entries, embeddings) under AES-256-GCM, so
an export can be stored or sent anywhere.

Layout: ``MAGIC``, a 4-byte header length, a JSON header that says only what a reader
needs before it has the key (``format``, ``version``, the cipher and key-derivation
names, the salt, the chunk size and a key check), then the zip encrypted in chunks of
``CHUNK`` bytes, each sealed on its own with a 16-byte tag. Nothing of the manifest is
readable without the key (entry count, identities, model, filters and digests are all
inside); the format version is, so a future reader knows what it holds.

Why chunks (the STREAM construction): a bundle can be gigabytes and is written and read
as a stream. Chunk ``i`` is sealed with the nonce ``i`` (11 bytes) plus a last-chunk flag
and with the header as associated data, so reordering, dropping or appending chunks,
cutting the file short, or changing the header fails to open, and each bundle has its
own key (HKDF of the passphrase-derived key with a random 16-byte ``seed`` of the bundle),
so nonces never repeat under a key. The slow passphrase derivation (PBKDF2) depends only
on the ``salt``: a writer may reuse one (sync does, per device) and the derivation runs
once per process, while every bundle still gets a key of its own. The reader decrypts chunks on
demand behind a seekable file object (zipfile seeks to the central directory at the end),
so nothing decrypted is ever written to disk.

Errors: a wrong key is an :class:`EncryptionKeyError` (the header's key check, derived
from the key, says so before any chunk is tried); any altered or missing byte after that
is a :class:`BundleError` (tampered or truncated), as a plain bundle's digests are.
"""

from __future__ import annotations

import hmac
import io
import json
import secrets
from collections import OrderedDict
from typing import IO, Any

from tulving.distribution import missing_extra
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.errors import BundleError, EncryptionError, EncryptionKeyError
from tulving.domain.sealing import KDF_ITERATIONS, SALT_BYTES, new_salt, subkey

MAGIC = b"TVLBUNDLE-ENC\n"
FORMAT = "tulving-bundle-encrypted"
VERSION = 1
CHUNK = 256 * 1024
TAG = 16
MAX_HEADER = 4096
_CACHE_CHUNKS = 8  # entries and vectors are read side by side: keep both hot


def _cipher(key: bytes) -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as exc:  # pragma: no cover - installed with the extra
        raise EncryptionError(
            missing_extra("an encrypted bundle", "encryption", "cryptography")) from exc
    return AESGCM(key)


def _nonce(index: int, last: bool) -> bytes:
    return index.to_bytes(11, "big") + (b"\x01" if last else b"\x00")


def _key_check(key: EncryptionKey, salt: bytes) -> str:
    return subkey(key, salt, "bundle key check")[:16].hex()


def is_encrypted_bundle(head: bytes) -> bool:
    return head.startswith(MAGIC)


class EncryptingWriter(io.RawIOBase):
    """A write-only, unseekable stream that encrypts what is written into ``target``
    (zipfile writes to it with data descriptors). ``close`` seals the last chunk and
    leaves ``target`` open."""

    def __init__(self, target: IO[bytes], key: EncryptionKey, *,
                 salt: bytes | None = None) -> None:
        super().__init__()
        self._target = target
        salt = new_salt() if salt is None else salt
        seed = secrets.token_bytes(16)
        header = json.dumps({
            "format": FORMAT, "version": VERSION, "cipher": "AES-256-GCM",
            "kdf": f"PBKDF2-HMAC-SHA512/{KDF_ITERATIONS}+HKDF-SHA256",
            "salt": salt.hex(), "seed": seed.hex(), "chunk": CHUNK,
            "key_check": _key_check(key, salt),
        }, sort_keys=True, separators=(",", ":")).encode()
        self._aad = MAGIC + len(header).to_bytes(4, "big") + header
        self._aes = _cipher(subkey(key, salt, "bundle " + seed.hex()))
        target.write(self._aad)
        self._buffer = bytearray()
        self._index = 0
        self._written = 0

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._written

    def write(self, data: Any) -> int:
        view = bytes(data)
        self._buffer += view
        self._written += len(view)
        while len(self._buffer) > CHUNK:  # keep at least one byte back for the last chunk
            self._emit(bytes(self._buffer[:CHUNK]), last=False)
            del self._buffer[:CHUNK]
        return len(view)

    def _emit(self, plain: bytes, last: bool) -> None:
        self._target.write(self._aes.encrypt(_nonce(self._index, last), plain, self._aad))
        self._index += 1

    def close(self) -> None:
        if not self.closed:
            self._emit(bytes(self._buffer), last=True)
            self._buffer.clear()
            self._target.flush()
        super().close()


class DecryptingReader(io.RawIOBase):
    """A read-only, seekable view of the plaintext of an encrypted bundle in ``source``
    (itself seekable), decrypting chunks on demand (a few kept in memory)."""

    def __init__(self, source: IO[bytes], key: EncryptionKey) -> None:
        super().__init__()
        self._source = source
        source.seek(0)
        magic = source.read(len(MAGIC))
        if magic != MAGIC:
            raise BundleError("not an encrypted Tulving bundle")
        size = int.from_bytes(source.read(4), "big")
        if not 0 < size <= MAX_HEADER:
            raise BundleError("the encrypted bundle's header is damaged")
        raw = source.read(size)
        try:
            header = json.loads(raw)
        except (ValueError, RecursionError):
            raise BundleError("the encrypted bundle's header is damaged") from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise BundleError("the encrypted bundle's header is damaged")
        if header.get("version") != VERSION:
            raise BundleError(f"encrypted bundle version {header.get('version')!r} is not "
                              f"{VERSION}: upgrade tulving to read it")
        try:
            salt = bytes.fromhex(header["salt"])
            seed = bytes.fromhex(header["seed"])
            check = str(header["key_check"])
        except (KeyError, ValueError, TypeError):
            raise BundleError("the encrypted bundle's header is damaged") from None
        if len(salt) != SALT_BYTES or len(seed) != 16 or header.get("chunk") != CHUNK:
            raise BundleError("the encrypted bundle's header is damaged")
        if not hmac.compare_digest(_key_check(key, salt), check):
            raise EncryptionKeyError(
                f"the key from {key.source} does not open this bundle (wrong key)")
        self._aad = MAGIC + size.to_bytes(4, "big") + raw
        self._aes = _cipher(subkey(key, salt, "bundle " + seed.hex()))
        self._start = len(self._aad)
        total = source.seek(0, io.SEEK_END) - self._start
        step = CHUNK + TAG
        self._chunks = max(1, -(-total // step))
        last = total - (self._chunks - 1) * step
        if last < TAG:
            raise BundleError("the encrypted bundle is truncated")
        self._size = (self._chunks - 1) * CHUNK + (last - TAG)
        self._pos = 0
        self._cache: OrderedDict[int, bytes] = OrderedDict()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise OSError("negative seek position")
        self._pos = base + offset
        return self._pos

    def _chunk(self, index: int) -> bytes:
        cached = self._cache.get(index)
        if cached is not None:
            self._cache.move_to_end(index)
            return cached
        last = index == self._chunks - 1
        self._source.seek(self._start + index * (CHUNK + TAG))
        sealed = self._source.read(CHUNK + TAG)
        try:
            from cryptography.exceptions import InvalidTag
        except ImportError:  # pragma: no cover
            raise EncryptionError("the 'encryption' extra is missing") from None
        try:
            plain: bytes = self._aes.decrypt(_nonce(index, last), sealed, self._aad)
        except InvalidTag:
            raise BundleError(f"the encrypted bundle was altered or truncated (chunk {index} "
                              "does not authenticate)") from None
        self._cache[index] = plain
        if len(self._cache) > _CACHE_CHUNKS:
            self._cache.popitem(last=False)
        return plain

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view) and self._pos < self._size:
            index, offset = divmod(self._pos, CHUNK)
            chunk = self._chunk(index)
            take = min(len(chunk) - offset, len(view) - done)
            view[done:done + take] = chunk[offset:offset + take]
            done += take
            self._pos += take
        return done

    def verify(self) -> None:
        """Authenticate every chunk (the last one included: a cut-off file fails here)."""
        for index in range(self._chunks):
            self._chunk(index)


def open_bundle(source: IO[bytes], key: EncryptionKey | None) -> IO[bytes]:
    """The bundle to read from ``source``: itself when plain, its decrypted view when
    encrypted (which needs ``key``). A key with a plain bundle is refused: whoever swapped
    the encrypted file for a plain one would otherwise have their entries imported."""
    position = source.tell()
    head = source.read(len(MAGIC))
    source.seek(position)
    if is_encrypted_bundle(head):
        if key is None:
            raise EncryptionKeyError("the bundle is encrypted: import it with encryption= "
                                     "(--bundle-key) and its key")
        reader = DecryptingReader(source, key)
        reader.verify()
        reader.seek(0)
        return io.BufferedReader(reader, CHUNK)
    if key is not None:
        raise EncryptionError("the bundle is not encrypted, but a key was given: refused "
                              "(an encrypted bundle may have been swapped for a plain one)")
    return source
