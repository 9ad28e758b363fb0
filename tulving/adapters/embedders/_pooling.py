"""Numerics and input checks shared by the embedders.

Kept apart from the adapters so every embedder validates input and normalises rows the
same way, and the contract (float32, unit L2 norm, typed errors) holds by construction.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from tulving.domain.errors import EmbedderError, ValidationError

Vectors = npt.NDArray[np.float32]


def check_texts(texts: object) -> list[str]:
    """Reject a bare string (it would be embedded character by character) and non-str items."""
    if isinstance(texts, (str, bytes)):
        raise ValidationError("embed() takes a sequence of strings, not a single string")
    if not isinstance(texts, Sequence):
        raise ValidationError(f"embed() takes a sequence of strings, got {type(texts).__name__}")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise ValidationError(f"text {i} is {type(text).__name__}, not str")
    return out


def check_query(text: object) -> str:
    if not isinstance(text, str):
        raise ValidationError(f"query must be str, got {type(text).__name__}")
    return text


def mean_pool(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> Vectors:
    """Average the token vectors that the attention mask keeps (padding excluded)."""
    weights = mask.astype(np.float32)[:, :, None]
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    pooled: Vectors = (summed / counts).astype(np.float32, copy=False)
    return pooled


def l2_normalise(matrix: npt.NDArray[np.floating], *, what: str = "embedder") -> Vectors:
    """Unit rows in float32; a zero or non-finite row means the model failed, not the input."""
    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    if out.size and (not np.all(np.isfinite(norms)) or np.any(norms == 0)):
        raise EmbedderError(f"{what} produced a zero or non-finite vector")
    return np.ascontiguousarray(out / norms, dtype=np.float32)


def first_row(matrix: Vectors) -> Vectors:
    row: Vectors = matrix[0]
    return row


def empty(dimension: int) -> Vectors:
    return np.zeros((0, dimension), dtype=np.float32)
