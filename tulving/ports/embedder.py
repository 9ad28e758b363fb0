"""Embedder port: text in, float32 L2-normalised rows out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Invariants (checked by ``contract_tests.embedder``): ``embed`` returns an array of
    shape ``(len(texts), dimension)``, dtype float32, rows of unit L2 norm, deterministic
    for the same input; an empty list gives shape ``(0, dimension)``. ``model_id`` names
    the vector space: two embedders with equal ``model_id`` produce comparable vectors.
    A text longer than the model's window is still read to its end (in windows, as the
    local model does), unless the adapter's suite declares ``reads_long_text = False``.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int:
        """Vector length; may cost one probe for remote models of unknown size."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed documents (batched internally)."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """Embed one query as shape ``(dimension,)``; models with query prefixes add them."""
        ...


@runtime_checkable
class Preloads(Protocol):
    """Optional: an embedder that can load its model ahead of the first call (a server
    does at start, so the first request does not pay for it)."""

    def load(self) -> None: ...
