"""The strong encoder: all-mpnet-base-v2 on the CPU, offline, in numpy.

It is an ordinary embedder (the port's contract, its suite): used as the strong tier
(``options={"search": {"strong": "mpnet"}}``) it re-scores hybrid search's best
candidates; it can also be a Memory's only embedder (``embedder="mpnet"``). Why the
embedder port and not a port of its own: what search needs of it is exactly a
bi-encoder's promise (unit float32 rows, one space per ``model_id``, a query variant),
so every embedder, this one or a remote model, can serve as the strong tier, and the
contract suite that defines "an embedder that works" covers it unchanged.

- Weights from the ``strong`` extra's packages, verified and cached once
  (:mod:`tulving.adapters.embedders.model_cache`); nothing is downloaded.
- The forward pass is numpy (:mod:`tulving.adapters.embedders.mpnet_forward`): no torch.
- BLAS runs on ``threads`` threads (default 1) while the model runs (threadpoolctl):
  OpenBLAS's threads spin while they wait, and on cores shared with other work one query
  took 7.6 s at the median with 2 threads against 0.29 s with 1 (load 12 on 2 cores; a
  batch of 30 turns 27.6 s against 8.6 s), and one thread leaves the other core to the
  writes the background tier runs beside.
- Texts are sorted by length and cut into batches of ``batch_size``, so short turns are
  not padded to a long answer's length; a text longer than the 384-token window is read
  window by window and the windows averaged by their tokens, as the fast model does,
  but at most 4 windows (~1,500 tokens; ``max_windows``): the model costs ~170 MFLOP a
  token, so the 32 windows the fast model reads would take minutes on two cores for one
  very long text, and the strong score is a second opinion over candidates the fast
  tier (which reads ~8,000 tokens) already found.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tulving.adapters.embedders import model_cache
from tulving.adapters.embedders._pooling import (
    Vectors,
    check_query,
    check_texts,
    empty,
    first_row,
    l2_normalise,
    mean_pool,
    pool_windows,
    windows_of,
)
from tulving.domain.errors import ConfigError, EmbedderError

for _module in ("tokenizers", "threadpoolctl"):
    if importlib.util.find_spec(_module) is None:
        raise ImportError(f"No module named {_module!r}", name=_module)
model_cache.part_files()  # at import: a missing part names the extra (see the registry)

MODEL_ID = "sentence-transformers/all-mpnet-base-v2"
DIMENSION = 768
MAX_TOKENS = 384
MAX_WINDOWS = 4


class MPNetEmbedder:
    """all-mpnet-base-v2 with mean pooling and L2 normalisation (768 dimensions)."""

    model_id: str = MODEL_ID
    dimension: int = DIMENSION

    def __init__(self, *, cache_dir: str | os.PathLike[str] | None = None,
                 batch_size: int = 16, max_tokens: int = MAX_TOKENS,
                 max_windows: int = MAX_WINDOWS, threads: int = 1) -> None:
        for name, value in (("batch_size", batch_size), ("max_tokens", max_tokens),
                            ("max_windows", max_windows), ("threads", threads)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if max_tokens > 512:
            raise ConfigError("max_tokens is at most 512 for this model")
        self._root = Path(cache_dir) if cache_dir is not None else None
        self._batch_size = batch_size
        self._max_tokens = max_tokens
        self._max_windows = max_windows
        self._threads = threads
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Convert the weights into the cache if needed, then map them (idempotent)."""
        if self._model is not None:
            return
        with self._lock:
            if self._model is not None:
                return
            from tulving.adapters.embedders.mpnet_forward import MPNet

            folder = model_cache.model_folder(self._root)
            try:
                import tokenizers

                tokenizer = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
                tokenizer.enable_truncation(max_length=self._max_tokens)
                tokenizer.no_padding()
                model = MPNet.from_folder(folder)
            except Exception as exc:
                raise EmbedderError(f"cannot load the strong model: {exc}") from exc
            self._tokenizer = tokenizer
            self._model = model  # last: it is the "loaded" flag

    def tokenizer(self) -> Any:
        self.load()
        return self._tokenizer

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        if not items:
            return empty(self.dimension)
        self.load()
        encodings = self._tokenizer.encode_batch(items)
        if any(e.overflowing for e in encodings):
            windows, owners, weights = windows_of(encodings, self._max_windows)
            return pool_windows(self.embed_encodings(windows), owners, weights, len(items),
                                what="the strong model")
        return self.embed_encodings(encodings)

    def embed_query(self, text: str) -> Vectors:
        return first_row(self.embed([check_query(text)]))

    def embed_encodings(self, encodings: Sequence[Any]) -> Vectors:
        """One unit row per ``tokenizers`` encoding, in sorted batches."""
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(encodings), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            out[chunk] = self._run([encodings[i] for i in chunk])
        return out

    def _run(self, encodings: Sequence[Any]) -> Vectors:
        width = max(len(e.ids) for e in encodings)
        ids = np.ones((len(encodings), width), dtype=np.int64)  # 1 is the padding id
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = 1
        from threadpoolctl import threadpool_limits

        try:
            with threadpool_limits(limits=self._threads, user_api="blas"):
                hidden = self._model.hidden(ids, mask)
        except Exception as exc:
            raise EmbedderError(f"the strong model failed: {exc}") from exc
        return l2_normalise(mean_pool(hidden, mask), what="the strong model")


def create(context: Any = None, **options: Any) -> MPNetEmbedder:
    return MPNetEmbedder(**options)
