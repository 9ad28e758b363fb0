"""A persistent cache of the local model's window vectors, for benchmarks that re-ingest.

Why: the long-memory benchmark embeds ~30,000 turns of ~230 tokens each; on two shared
cores that is over an hour per pass. Every representation worth comparing (the pooled
vector the library stores, the first window alone, the best window for a query, passages
as units of their own) is made of the same window vectors, so they are computed once and
kept in a SQLite file outside the repository.

:class:`CachingEmbedder` is a drop-in embedder (same ``model_id``, same vectors up to
float rounding): ``Memory(..., embedder=CachingEmbedder(...))`` is the embedded default
with a memo in front of the model. A text is split into windows exactly as
``LocalOnnxEmbedder.embed`` splits it (the model's own tokenizer, 256 tokens, at most
32 windows) and pooled by the same function, so what a store holds does not depend on
whether the cache was warm.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

# Before anything imports usearch: usearch 2.26's extension loaded first makes
# onnxruntime's import segfault (reported to the owner of the vector index work).
import onnxruntime  # noqa: F401  # isort: skip

from tulving.adapters.embedders._pooling import pool_windows, windows_of
from tulving.adapters.embedders.local_onnx import LocalOnnxEmbedder

Windows = tuple[np.ndarray, np.ndarray]  # (n x dim float32 unit rows, n token counts)


class CachingEmbedder:
    """The local MiniLM model with its window vectors memoised on disk."""

    def __init__(self, path: str | Path, inner: LocalOnnxEmbedder | None = None) -> None:
        self.inner = inner or LocalOnnxEmbedder()
        self.model_id = self.inner.model_id
        self.dimension = self.inner.dimension
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS windows (key BLOB PRIMARY KEY, "
                         "weights BLOB NOT NULL, vectors BLOB NOT NULL)")
        self._lock = threading.Lock()
        self._queries: dict[str, np.ndarray] = {}
        self.computed = 0  # texts the model had to read (cache misses)

    def _key(self, text: str) -> bytes:
        return hashlib.sha256(f"{self.model_id}\x00{text}".encode()).digest()

    def windows(self, texts: Sequence[str]) -> list[Windows]:
        """Each text's window vectors (unit rows) and token counts, computing the misses."""
        keys = [self._key(t) for t in texts]
        found: dict[bytes, Windows] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for key, weights, vectors in self._db.execute(
                        f"SELECT key, weights, vectors FROM windows WHERE key IN ({marks})",
                        chunk):
                    w = np.frombuffer(weights, dtype=np.int32)
                    found[key] = (np.frombuffer(vectors, dtype=np.float32)
                                  .reshape(len(w), self.dimension), w)
        missing = list(dict.fromkeys(
            (k, t) for k, t in zip(keys, texts, strict=True) if k not in found))
        if missing:
            self.computed += len(missing)
            encodings = self.inner.tokenizer().encode_batch([t for _, t in missing])
            windows, owners, weights = windows_of(encodings)
            vectors = self.inner._embed_encodings(windows)
            rows: list[tuple[bytes, bytes, bytes]] = []
            for index, (key, _) in enumerate(missing):
                mine = [i for i, o in enumerate(owners) if o == index]
                w = np.asarray([weights[i] for i in mine], dtype=np.int32)
                v = np.ascontiguousarray(vectors[mine], dtype=np.float32)
                found[key] = (v, w)
                rows.append((key, w.tobytes(), v.tobytes()))
            with self._lock:
                self._db.executemany("INSERT OR REPLACE INTO windows VALUES (?, ?, ?)", rows)
                self._db.commit()
        return [found[k] for k in keys]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = list(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = self.windows(items)
        vectors = np.concatenate([v for v, _ in parts])
        owners = [i for i, (v, _) in enumerate(parts) for _ in range(len(v))]
        weights = [int(x) for _, w in parts for x in w]
        if len(vectors) == len(items):  # every text fits one window: its vector as is
            return np.ascontiguousarray(vectors, dtype=np.float32)
        return pool_windows(vectors, owners, weights, len(items),
                            what="the local embedding model")

    def embed_query(self, text: str) -> np.ndarray:
        vector = self._queries.get(text)
        if vector is None:
            vector = self._queries[text] = self.inner.embed_query(text)
        return vector

    def close(self) -> None:
        self._db.close()

    # what the inner model offers besides embedding (benchmarks compare against it)
    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
