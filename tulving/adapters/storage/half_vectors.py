"""How every store keeps the strong tier's vectors: half precision, as bytes.

Why half: the strong vectors are twice the fast ones' width (768) and are only read to
re-score a few dozen candidates, where float16's rounding (cosines off by under 1e-3)
changes no order that matters; float32 would double a 100k-entry store's 300 MB of them.
"""

from __future__ import annotations

import numpy as np

from tulving.domain.errors import ValidationError
from tulving.ports.embedder import Vectors


def to_bytes(vector: Vectors) -> bytes:
    """A 1-D finite vector as float16 bytes; anything else is refused."""
    row = np.asarray(vector, dtype=np.float32)
    if row.ndim != 1 or not row.size or not np.all(np.isfinite(row)):
        raise ValidationError(f"a strong vector is a finite 1-D array, got shape {row.shape}")
    return row.astype(np.float16).tobytes()


def from_bytes(blob: bytes) -> Vectors:
    out: Vectors = np.frombuffer(blob, dtype=np.float16).astype(np.float32)
    return out
