"""The hnsw cache of an encrypted store: one AES-GCM sealed file instead of three plain ones.

Why it looks like this:
- Rebuilding the graph from the database on every open would spare the file, but costs
  far too much (hnswlib inserts ~3,000 vectors/s here: ~40 s at 100k entries, measured in
  ``benchmarks/encryption.py``), while sealing and opening the cache costs well under a
  second. So the cache stays, sealed with the store's key (:mod:`tulving.domain.sealing`).
- Nothing plain touches the disk on the way: the graph is serialised in memory
  (hnswlib's pickle support), packed with the label map and the float32 vectors, sealed,
  and written to a temporary name that is fsynced and then renamed over the old file, so
  a crash leaves the previous sealed cache or the new one. The unpickling happens only
  after GCM has authenticated the bytes, so only a holder of the key could have made them.
- Plain cache files found beside an encrypted store (left by a crash during
  ``tulving encrypt``, or copied in) are deleted on open: they would leak the vectors.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import secrets
from pathlib import Path
from typing import Any

import numpy as np

from tulving.adapters._durable_files import fsync_path
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.sealing import salt_of, seal, unseal

PURPOSE = "hnsw cache"
SUFFIX = ".sealed"


def sealed_path(cache_path: Path) -> Path:
    return cache_path.with_name(cache_path.name + SUFFIX)


def pack(meta: dict[str, Any], vectors: np.ndarray, index: Any) -> bytes:
    head = json.dumps(meta, separators=(",", ":")).encode("utf-8")
    buffer = io.BytesIO()
    np.save(buffer, vectors, allow_pickle=False)
    body = buffer.getvalue()
    graph = pickle.dumps(index, protocol=5)
    return b"".join((len(head).to_bytes(8, "big"), head, len(body).to_bytes(8, "big"), body,
                     graph))


def unpack(plain: bytes) -> tuple[dict[str, Any], np.ndarray, Any]:
    """(meta, vectors, hnswlib index) from :func:`pack`'s bytes (already authenticated)."""
    at = 0

    def take() -> bytes:
        nonlocal at
        size = int.from_bytes(plain[at:at + 8], "big")
        chunk = plain[at + 8:at + 8 + size]
        if len(chunk) != size:
            raise ValueError("the sealed cache is truncated")
        at += 8 + size
        return chunk

    meta = json.loads(take().decode("utf-8"))
    vectors = np.load(io.BytesIO(take()), allow_pickle=False)
    index = pickle.loads(plain[at:])  # authenticated by GCM before (see the module doc)
    if not isinstance(meta, dict):
        raise ValueError("malformed sealed cache")
    return meta, vectors, index


class SealedCacheFile:
    """Reads and writes the sealed file; remembers its salt so that writing it again does
    not repeat the slow key derivation."""

    def __init__(self, path: Path, key: EncryptionKey) -> None:
        self.path = path
        self._key = key
        self._salt: bytes | None = None

    def exists(self) -> bool:
        return self.path.exists()

    def read(self) -> bytes:
        blob = self.path.read_bytes()
        plain = unseal(self._key, blob, PURPOSE)
        self._salt = salt_of(blob)
        return plain

    def write(self, plain: bytes) -> None:
        blob = seal(self._key, plain, PURPOSE, salt=self._salt)
        self._salt = salt_of(blob)
        tmp = self.path.with_name(self.path.name + f".tmp-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            with tmp.open("wb") as handle:
                handle.write(blob)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        with contextlib.suppress(OSError):
            fsync_path(self.path.parent)
