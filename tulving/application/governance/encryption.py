"""Where the encryption key comes from: an environment variable or a key file, never an
inline literal.

``Memory(path, agent_id=..., encryption=...)`` takes:

- ``None`` / ``False``: no encryption (the default);
- ``True``: the key is in ``TULVING_ENCRYPTION_KEY``;
- ``"env:NAME"`` or ``{"key_env": "NAME"}``: the key is in that environment variable;
- ``"file:PATH"`` or ``{"key_file": "PATH"}``: the key is the content of that file (one
  trailing newline is dropped; ``tulving keygen`` writes one, mode 0600);
- an :class:`~tulving.domain.encryption_key.EncryptionKey` built in code from a secret
  manager.

Anything else that looks like a key (a bare string, ``{"key": ...}``) is refused with a
``SecurityError``, as API and signing keys are: a key in code or a config file ends up in
version control. The same strings are what ``--encryption``, ``TULVING_ENCRYPTION`` and
``encryption =`` in tulving.toml accept.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.errors import ConfigError, EncryptionError, EncryptionKeyError, SecurityError
from tulving.ports.storage import EncryptionChange, Storage
from tulving.ports.vectors import CachedIndex, ResealableCache, VectorIndex

DEFAULT_KEY_ENV = "TULVING_ENCRYPTION_KEY"
_REFUSED = (
    "an inline encryption key is refused: keys do not belong in code or config files; "
    "give 'env:VARIABLE' or 'file:/path/to/keyfile' (or True for "
    f"${DEFAULT_KEY_ENV})"
)


def parse_encryption(value: Any, environ: Mapping[str, str] | None = None) -> EncryptionKey | None:
    """The key ``value`` points at, read now (a missing key fails before anything opens)."""
    env = os.environ if environ is None else environ
    if value is None or value is False:
        return None
    if isinstance(value, EncryptionKey):
        return value
    if value is True:
        return _from_env(DEFAULT_KEY_ENV, env)
    if isinstance(value, str):
        kind, _, where = value.partition(":")
        if kind == "env" and where:
            return _from_env(where, env)
        if kind == "file" and where:
            return _from_file(where)
        raise SecurityError(_REFUSED)
    if isinstance(value, Mapping):
        if "key" in value or "secret" in value or "passphrase" in value:
            raise SecurityError(_REFUSED)
        unknown = set(value) - {"key_env", "key_file"}
        if unknown or len(value) != 1:
            raise ConfigError(
                "encryption takes exactly one of key_env or key_file, "
                f"got {', '.join(sorted(map(str, value))) or 'nothing'}"
            )
        if "key_env" in value:
            return _from_env(_name(value["key_env"], "key_env"), env)
        return _from_file(_name(value["key_file"], "key_file"))
    if isinstance(value, bytes | bytearray):
        raise SecurityError(_REFUSED)
    raise ConfigError(
        "encryption must be True, 'env:NAME', 'file:PATH', {'key_env': ...}, "
        f"{{'key_file': ...}} or an EncryptionKey; got {type(value).__name__}"
    )


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"encryption {what} must be a non-empty string")
    return value


def _from_env(name: str, env: Mapping[str, str]) -> EncryptionKey:
    raw = env.get(name)
    if not raw:
        raise EncryptionKeyError(f"no encryption key: the environment variable {name} is not set")
    return EncryptionKey(raw.encode("utf-8"), source=f"env {name}")


def _from_file(path: str) -> EncryptionKey:
    path = os.path.expanduser(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise EncryptionKeyError(f"no encryption key: the key file {path} does not exist") from None
    except OSError as exc:
        raise EncryptionKeyError(f"cannot read the key file {path}: {exc.strerror}") from None
    if raw.endswith(b"\n"):
        raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
    return EncryptionKey(raw, source=f"file {path}")


def require_encrypted(key: EncryptionKey | None, storage: Storage,
                      vectors: VectorIndex | None) -> None:
    """With a key, refuse adapters that would write anything unencrypted beside it."""
    if key is None:
        return
    if not storage.capabilities.encrypted_at_rest:
        raise EncryptionError(
            f"the {storage.name} storage does not encrypt at rest; "
            "encryption= applies to the SQLite store (a file path)"
        )
    if isinstance(vectors, CachedIndex) and vectors.cache_path is not None \
            and not vectors.sealed:
        raise EncryptionError(
            f"the {vectors.name} vector index writes an unencrypted "
            "cache beside the store; use vectors='hnsw' or 'exact' with encryption"
        )


def convert_store(store: Storage, caches: Sequence[VectorIndex],
                  resealed: VectorIndex | None, old: EncryptionKey | None,
                  new: EncryptionKey | None) -> Any:
    """``tulving encrypt`` / ``rekey`` / ``decrypt``: re-write a closed store under ``new``
    (the adapters come from the composition: ``bootstrap.change_encryption``).

    ``caches`` are the vector caches as the store has them now (under ``old``);
    ``resealed`` is the cache under ``new`` that a rekey reseals. Order, so that a crash
    never leaves plain data beside an encrypted store nor breaks the store: (1) the
    storage adapter checks the old key and writes and checks the converted copy; (2) when
    encrypting or decrypting, every cache is deleted (it is a cache; the next open
    rebuilds it); (3) the copy replaces the database in one atomic step; (4) on a rekey
    the sealed cache is resealed under the new key (after a crash before this, it fails
    to open under the new key and is rebuilt).
    """
    if not isinstance(store, EncryptionChange):
        raise ConfigError(f"the {store.name} storage cannot be encrypted at rest")
    drops = [c.drop_cache for c in caches if isinstance(c, CachedIndex)]
    drop = None
    if new is None or old is None:
        def drop() -> None:
            for one in drops:
                if one is not None:
                    one()
    result = store.change_encryption(new, drop)
    if old is not None and new is not None and isinstance(resealed, ResealableCache):
        resealed.reseal_cache(old)
    return result
