"""Input checks shared by the vector indexes: typed errors, raised before any change."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from tulving.domain.errors import ValidationError, VectorIndexError

Matrix = npt.NDArray[np.float32]


def check_dimension(dimension: object) -> int:
    if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension < 1:
        raise ValidationError(f"dimension must be a positive integer, got {dimension!r}")
    return dimension


def check_batch(ids: Sequence[str], vectors: object, dimension: int) -> tuple[list[str], Matrix]:
    """Ids as a list, vectors as unit float32 rows; duplicate ids keep their last row."""
    if isinstance(ids, str):
        raise ValidationError("ids must be a sequence of strings, not a single string")
    id_list = list(ids)
    for item in id_list:
        if not isinstance(item, str) or not item:
            raise ValidationError(f"ids must be non-empty strings, got {item!r}")
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1 and len(id_list) == 1:
        matrix = matrix[None, :]
    if matrix.ndim != 2 or matrix.shape[0] != len(id_list):
        raise ValidationError(
            f"{len(id_list)} ids but vectors of shape {matrix.shape}; want ({len(id_list)}, d)"
        )
    if matrix.shape[0] and matrix.shape[1] != dimension:
        raise VectorIndexError(
            f"vectors have dimension {matrix.shape[1]}; this index holds {dimension}"
        )
    norms = np.linalg.norm(matrix, axis=1, keepdims=True) if matrix.size else matrix[:, :1]
    if matrix.size and (not np.all(np.isfinite(norms)) or np.any(norms == 0)):
        raise ValidationError("vectors must be finite and non-zero (cosine is undefined)")
    if len(set(id_list)) != len(id_list):
        last = {item: row for row, item in enumerate(id_list)}
        rows = sorted(last.values())
        id_list = [id_list[r] for r in rows]
        matrix, norms = matrix[rows], norms[rows]
    unit = (matrix / norms) if matrix.size else matrix
    return id_list, np.ascontiguousarray(unit, dtype=np.float32)


def check_query(vector: object, k: object, dimension: int) -> tuple[Matrix, int]:
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise ValidationError(f"k must be a non-negative integer, got {k!r}")
    query = np.asarray(vector, dtype=np.float32)
    if query.ndim == 2 and query.shape[0] == 1:
        query = query[0]
    if query.ndim != 1:
        raise ValidationError(f"query must be one vector, got shape {query.shape}")
    if query.shape[0] != dimension:
        raise VectorIndexError(
            f"query has dimension {query.shape[0]}; this index holds {dimension}"
        )
    norm = float(np.linalg.norm(query))
    if not np.isfinite(norm) or norm == 0.0:
        raise ValidationError("query vector must be finite and non-zero")
    return np.ascontiguousarray(query / norm, dtype=np.float32), k


def check_allow(allow: Iterable[str] | None) -> set[str] | None:
    if allow is None:
        return None
    if isinstance(allow, str):
        raise ValidationError("allow must be a collection of ids, not a single string")
    return set(allow)
