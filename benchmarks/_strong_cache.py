"""A persistent memo of the strong encoder's vectors, for benchmarks that search again.

Why: all-mpnet-base-v2 reads ~6x slower than MiniLM; the strong tier only encodes the
candidates a query re-scores, but every benchmark run (each ablation row, each half)
would encode the same turns again. :class:`CachingStrongEncoder` is a drop-in embedder
(same ``model_id``, the same vectors: the rows are stored as the model gave them) that
keeps every text's vector in a SQLite file outside the repository, keyed by the SHA-256
of the model id and the text.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


class CachingStrongEncoder:
    """An embedder (the strong model by default) with its vectors memoised on disk."""

    def __init__(self, path: str | Path, inner: Any = None) -> None:
        if inner is None:
            from tulving.adapters.embedders.mpnet import MPNetEmbedder

            inner = MPNetEmbedder()
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, "
                         "vector BLOB NOT NULL)")
        self._lock = threading.Lock()
        self.computed = 0  # texts the model had to read (cache misses)

    def _key(self, text: str, query: bool) -> bytes:
        role = "query" if query else "doc"
        return hashlib.sha256(f"{self.model_id}\x00{role}\x00{text}".encode()).digest()

    def _lookup(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                for key, blob in self._db.execute(
                        f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk):
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def _store(self, rows: Sequence[tuple[bytes, np.ndarray]]) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                                 [(k, np.ascontiguousarray(v, np.float32).tobytes())
                                  for k, v in rows])
            self._db.commit()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = list(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        keys = [self._key(t, False) for t in items]
        found = self._lookup(keys)
        missing = list(dict.fromkeys((k, t) for k, t in zip(keys, items, strict=True)
                                     if k not in found))
        if missing:
            self.computed += len(missing)
            vectors = self.inner.embed([t for _, t in missing])
            rows = [(k, v) for (k, _), v in zip(missing, vectors, strict=True)]
            self._store(rows)
            found.update(rows)
        return np.stack([found[k] for k in keys]).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        key = self._key(text, True)
        found = self._lookup([key]).get(key)
        if found is None:
            found = np.asarray(self.inner.embed_query(text), dtype=np.float32)
            self._store([(key, found)])
        return found

    def close(self) -> None:
        self._db.close()
