"""Authenticated encryption of whole blobs, and the key derivation every encrypted file
of a store shares.

Why it looks like this:
- One key derivation for everything: PBKDF2-HMAC-SHA512 with 256,000 iterations (the
  figures SQLCipher 4 uses for passphrases) turns the secret and a per-file random salt
  into a master key; HKDF-SHA256 then gives each use its own subkey (the SQLCipher page
  key, the vector cache, a bundle), so no two ciphers ever share a key. The slow step runs
  once per (secret, salt) in a process (an LRU cache): a store opens many connections.
- A sealed blob is ``MAGIC | purpose length | purpose | salt | nonce | AES-256-GCM
  ciphertext and tag``, with everything before the ciphertext as associated data: a blob
  cannot be passed off as another kind of file, and any flipped bit fails to open. A
  wrong key and tampered bytes look the same to GCM, so both raise
  :class:`EncryptionKeyError` and nothing is returned.
- Pure computation, no I/O: callers read and write the files (atomically). ``cryptography``
  is imported when a blob is sealed, so a store without encryption never needs it.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
from typing import TYPE_CHECKING

from tulving.distribution import missing_extra
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.errors import EncryptionError, EncryptionKeyError

MAGIC = b"TVLSEAL1"
SALT_BYTES = 16
NONCE_BYTES = 12
KDF_ITERATIONS = 256_000
_MAX_PURPOSE = 64

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def new_salt() -> bytes:
    return os.urandom(SALT_BYTES)


@functools.lru_cache(maxsize=64)
def _master(secret: bytes, salt: bytes) -> bytes:
    return hashlib.pbkdf2_hmac("sha512", secret, salt, KDF_ITERATIONS, dklen=32)


def subkey(key: EncryptionKey, salt: bytes, label: str) -> bytes:
    """A 32-byte key for one use (``label``) of ``key`` with this salt (HKDF-SHA256)."""
    if len(salt) != SALT_BYTES:
        raise EncryptionError(f"a salt is {SALT_BYTES} bytes, got {len(salt)}")
    master = _master(key.secret, salt)
    prk = hmac.new(salt, master, hashlib.sha256).digest()  # HKDF-Extract
    return hmac.new(prk, b"tulving " + label.encode("ascii") + b"\x01",
                    hashlib.sha256).digest()  # HKDF-Expand, one block


def _aesgcm(key: bytes) -> AESGCM:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise EncryptionError(missing_extra("encryption", "encryption", "cryptography")) from exc
    return AESGCM(key)


def _header(purpose: str, salt: bytes) -> bytes:
    raw = purpose.encode("ascii")
    if not raw or len(raw) > _MAX_PURPOSE:
        raise EncryptionError(f"a seal purpose is 1-{_MAX_PURPOSE} ASCII characters")
    return MAGIC + bytes([len(raw)]) + raw + salt


def is_sealed(head: bytes) -> bool:
    """Whether bytes (the start of a file is enough) are a sealed blob."""
    return head.startswith(MAGIC)


def parse_header(blob: bytes) -> tuple[str, bytes, int]:
    """(purpose, salt, offset of the nonce) of a sealed blob."""
    if not is_sealed(blob) or len(blob) < len(MAGIC) + 1:
        raise EncryptionError("not a sealed Tulving file")
    size = blob[len(MAGIC)]
    start = len(MAGIC) + 1
    end = start + size + SALT_BYTES
    if size == 0 or size > _MAX_PURPOSE or len(blob) < end + NONCE_BYTES + 16:
        raise EncryptionKeyError("the sealed file is truncated or damaged")
    try:
        purpose = blob[start:start + size].decode("ascii")
    except UnicodeDecodeError as exc:
        raise EncryptionKeyError("the sealed file is damaged") from exc
    return purpose, blob[start + size:end], end


def seal(key: EncryptionKey, plaintext: bytes, purpose: str, *,
         salt: bytes | None = None) -> bytes:
    """Encrypt and authenticate ``plaintext`` for ``purpose``. Pass the salt of an earlier
    seal to skip the slow key derivation (a fresh nonce is drawn every time)."""
    salt = new_salt() if salt is None else salt
    header = _header(purpose, salt)
    nonce = os.urandom(NONCE_BYTES)
    cipher = _aesgcm(subkey(key, salt, "seal " + purpose))
    return header + nonce + cipher.encrypt(nonce, plaintext, header)


def unseal(key: EncryptionKey, blob: bytes, purpose: str) -> bytes:
    """The plaintext of a blob sealed for ``purpose``; :class:`EncryptionKeyError` if the
    key is wrong or a byte was changed, :class:`EncryptionError` if it is not such a blob."""
    found, salt, at = parse_header(blob)
    if found != purpose:
        raise EncryptionError(f"the sealed file holds {found!r}, not {purpose!r}")
    header, nonce = blob[:at], blob[at:at + NONCE_BYTES]
    cipher = _aesgcm(subkey(key, salt, "seal " + purpose))
    try:
        from cryptography.exceptions import InvalidTag
    except ImportError:  # pragma: no cover
        raise EncryptionError("the 'encryption' extra is missing") from None
    try:
        plain = cipher.decrypt(nonce, blob[at + NONCE_BYTES:], header)
    except InvalidTag:
        raise EncryptionKeyError(
            f"cannot open the sealed {purpose}: wrong key (from {key.source}) or the file "
            "was changed"
        ) from None
    return plain


def salt_of(blob: bytes) -> bytes:
    return parse_header(blob)[1]


def reseal(old: EncryptionKey, new: EncryptionKey, blob: bytes) -> bytes:
    """The same plaintext sealed under another key (``tulving rekey``)."""
    purpose, _salt, _at = parse_header(blob)
    return seal(new, unseal(old, blob, purpose), purpose)
