"""Embeddings from OpenAI or any OpenAI-compatible ``/v1/embeddings`` server (Ollama, vLLM,
LM Studio, llama.cpp server), through the official ``openai`` client.

Identity: ``model_id`` is ``"openai:<model>"``, or ``"openai:<model>@<dimensions>"`` when
``dimensions`` shortens the vectors. It deliberately leaves out the host: the same model
served by OpenAI, a proxy or a second Ollama box produces the same vector space, and a store
must not demand re-embedding because the URL changed. When two servers use one name for
different weights, pass ``model_id=`` to name the space yourself.

Dimension: taken from ``dimensions`` when given, else from a table of OpenAI's own models;
for any other model the first access to ``dimension`` (or the first ``embed``) costs one
request ("probe" call) and the answer is cached. The constructor never touches the network.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import openai

from tulving.adapters._openai_common import (
    RetryPolicy,
    bad_request_error,
    call_with_retries,
    check_positive,
    make_client,
    make_policy,
    resolve_api_key,
    resolve_base_url,
)
from tulving.domain.errors import ConfigError, EmbedderError

Vectors = npt.NDArray[np.float32]

#: Native dimensions of OpenAI's models: no probe request needed for these.
KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
_PROBE_TEXT = "dimension probe"


class OpenAIEmbedder:
    """Thread-safe: the client is, and the lazily discovered dimension is set under a lock."""

    def __init__(
        self,
        *,
        client: openai.OpenAI,
        model: str,
        base_url: str,
        dimensions: int | None,
        batch_size: int,
        timeout: float,
        policy: RetryPolicy,
        model_id: str,
        query_prefix: str = "",
        document_prefix: str = "",
    ) -> None:
        self._client = client
        self._model = model
        self._base_url = base_url
        self._dimensions = dimensions
        self._batch_size = batch_size
        self._timeout = timeout
        self._policy = policy
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix
        self._lock = threading.Lock()
        self._dimension: int | None = dimensions or KNOWN_DIMENSIONS.get(model)
        self.model_id = model_id

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIEmbedder(model_id={self.model_id!r}, base_url={self._base_url!r})"

    @property
    def dimension(self) -> int:
        """May cost one request the first time (see the module docstring)."""
        if self._dimension is None:
            self._request([_PROBE_TEXT])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, self._document_prefix)

    def embed_query(self, text: str) -> Vectors:
        if not isinstance(text, str):
            raise EmbedderError(f"a query must be a string, not {type(text).__name__}")
        result: Vectors = self._embed([text], self._query_prefix)[0]
        return result

    def _embed(self, texts: Sequence[str], prefix: str) -> Vectors:
        if isinstance(texts, str | bytes) or not isinstance(texts, Sequence):
            raise EmbedderError("embed() takes a sequence of strings, not a single value")
        items = list(texts)
        for i, text in enumerate(items):
            if not isinstance(text, str):
                raise EmbedderError(f"text #{i} is {type(text).__name__}, not str")
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # OpenAI rejects empty strings with a 400; a single space embeds "nothing" stably.
        prepared = [(prefix + text) or " " for text in items]
        chunks = [
            self._request(prepared[start : start + self._batch_size])
            for start in range(0, len(prepared), self._batch_size)
        ]
        return np.concatenate(chunks, axis=0) if len(chunks) > 1 else chunks[0]

    def _request(self, batch: list[str]) -> Vectors:
        options: dict[str, Any] = {"model": self._model, "input": batch, "encoding_format": "float"}
        if self._dimensions is not None:
            options["dimensions"] = self._dimensions
        what = f"embedding {len(batch)} text(s) with {self._model!r}"
        try:
            response = call_with_retries(
                lambda: self._client.embeddings.create(**options),
                policy=self._policy,
                error=EmbedderError,
                what=what,
                base_url=self._base_url,
                timeout=self._timeout,
            )
        except openai.BadRequestError as exc:
            raise bad_request_error(
                exc, error=EmbedderError, what=what, base_url=self._base_url
            ) from exc
        data = sorted(getattr(response, "data", None) or [], key=lambda d: d.index)
        if len(data) != len(batch) or [d.index for d in data] != list(range(len(batch))):
            raise EmbedderError(
                f"{what}: the server returned {len(data)} vectors for {len(batch)} inputs"
            )
        try:
            matrix = np.asarray([d.embedding for d in data], dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbedderError(f"{what}: vectors of unequal length or not numbers") from exc
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise EmbedderError(f"{what}: the server returned no usable vectors")
        self._check_dimension(matrix.shape[1], what)
        if not np.all(np.isfinite(matrix)):
            raise EmbedderError(f"{what}: the server returned non-finite values")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if np.any(norms == 0):
            raise EmbedderError(f"{what}: the server returned a zero vector")
        normalised: Vectors = (matrix / norms).astype(np.float32, copy=False)
        return normalised

    def _check_dimension(self, got: int, what: str) -> None:
        with self._lock:
            if self._dimension is None:
                self._dimension = got
                return
            expected = self._dimension
        if got != expected:
            raise EmbedderError(
                f"{what}: the server returned {got}-dimensional vectors, expected "
                f"{expected} for {self.model_id!r}"
            )


def create(
    context: Any,
    *,
    model: str = "text-embedding-3-small",
    base_url: str | None = None,
    dimensions: int | None = None,
    batch_size: int = 128,
    timeout: float = 30.0,
    max_retries: int = 4,
    api_key_env: str = "OPENAI_API_KEY",
    api_key: str | None = None,
    retry_backoff: float = 0.5,
    max_retry_delay: float = 8.0,
    model_id: str | None = None,
    query_prefix: str = "",
    document_prefix: str = "",
) -> OpenAIEmbedder:
    """Build the embedder; raises ``ConfigError`` for bad options or a missing key, ``SecurityError`` for an inline one.
    No request is made here."""
    if not isinstance(model, str) or not model.strip():
        raise ConfigError("model must be a non-empty string")
    if dimensions is not None:
        check_positive("dimensions", dimensions, integer=True)
    check_positive("batch_size", batch_size, integer=True)
    check_positive("timeout", timeout)
    policy = make_policy(max_retries, retry_backoff, max_retry_delay)
    for name, value in (("query_prefix", query_prefix), ("document_prefix", document_prefix)):
        if not isinstance(value, str):
            raise ConfigError(f"{name} must be a string")
    if model_id is not None and (not isinstance(model_id, str) or not model_id.strip()):
        raise ConfigError("model_id must be a non-empty string")
    url = resolve_base_url(base_url)
    key = resolve_api_key(api_key=api_key, api_key_env=api_key_env, base_url=url)
    default_id = f"openai:{model}" + (f"@{dimensions}" if dimensions is not None else "")
    return OpenAIEmbedder(
        client=make_client(api_key=key, base_url=url, timeout=float(timeout)),
        model=model,
        base_url=url,
        dimensions=dimensions,
        batch_size=batch_size,
        timeout=float(timeout),
        policy=policy,
        model_id=model_id or default_id,
        query_prefix=query_prefix,
        document_prefix=document_prefix,
    )
