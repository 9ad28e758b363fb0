"""Exact nearest neighbours by brute force in numpy.

Why: below ~20k vectors a single matrix-vector product is as fast as an ANN index, is
exact, and needs no cache on disk. Rows are kept unit-norm in one contiguous float32
matrix that grows by doubling (amortised O(1) appends); removal swaps the last row into
the hole so the live rows stay contiguous and a query never scans dead rows.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tulving.adapters.vectors._cache_files import SyncPosition
from tulving.adapters.vectors._checks import (
    Matrix,
    check_allow,
    check_batch,
    check_dimension,
    check_query,
)
from tulving.domain.errors import VectorIndexError
from tulving.domain.query import ScoredId
from tulving.ports.vectors import Progress

if TYPE_CHECKING:
    from tulving.plugins.registry import AdapterContext

_INITIAL_CAPACITY = 256


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` highest scores, best first (ties by position, stable)."""
    if k >= scores.shape[0]:
        return np.argsort(-scores, kind="stable")
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part], kind="stable")]


class ExactIndex(SyncPosition):
    name = "exact"

    def __init__(self, *, initial_capacity: int = _INITIAL_CAPACITY,
                 read_only: bool = False) -> None:
        self._lock = threading.RLock()
        #: Nothing is written either way; a reader's index follows the change log like
        #: any other (``ports.vectors.SyncedVectorIndex``), from the position it was filled at.
        self.read_only = bool(read_only)
        self._synced: tuple[str, int] | None = None
        self._initial_capacity = max(1, int(initial_capacity))
        self._dimension: int | None = None
        self._matrix: Matrix = np.zeros((0, 0), dtype=np.float32)
        self._ids: list[str] = []
        self._rows: dict[str, int] = {}

    # -- lifecycle ----------------------------------------------------------------------

    def open(self, dimension: int) -> None:
        with self._lock:
            self._dimension = check_dimension(dimension)
            self._matrix = np.zeros((self._initial_capacity, dimension), dtype=np.float32)
            self._ids, self._rows = [], {}
            self._synced = None

    def saved_position(self) -> tuple[str, int] | None:
        """Never saved: it is filled from storage at every open."""
        return None

    def unsaved_changes(self) -> int:
        return 0

    def persist(self) -> None:
        """Nothing to write: storage holds the vectors and a rebuild is cheap."""

    def close(self) -> None:
        with self._lock:
            self._matrix = np.zeros((0, 0), dtype=np.float32)
            self._ids, self._rows = [], {}
            self._dimension = None

    def _dim(self) -> int:
        if self._dimension is None:
            raise VectorIndexError("the exact index is not open; call open(dimension) first")
        return self._dimension

    # -- writes -------------------------------------------------------------------------

    def add(self, ids: Sequence[str], vectors: Matrix) -> None:
        with self._lock:
            id_list, unit = check_batch(ids, vectors, self._dim())
            new = [i for i in id_list if i not in self._rows]
            self._reserve(len(self._ids) + len(new))
            positions = np.empty(len(id_list), dtype=np.int64)
            for slot, item in enumerate(id_list):
                position = self._rows.get(item)
                if position is None:
                    position = len(self._ids)
                    self._ids.append(item)
                    self._rows[item] = position
                positions[slot] = position
            self._matrix[positions] = unit

    def _reserve(self, needed: int) -> None:
        capacity = self._matrix.shape[0]
        if needed <= capacity:
            return
        grown = np.zeros((max(needed, capacity * 2), self._dim()), dtype=np.float32)
        grown[: len(self._ids)] = self._matrix[: len(self._ids)]
        self._matrix = grown

    def remove(self, ids: Iterable[str]) -> None:
        with self._lock:
            self._dim()
            for item in set(check_allow(ids) or ()):
                position = self._rows.pop(item, None)
                if position is None:
                    continue
                last = len(self._ids) - 1
                if position != last:
                    moved = self._ids[last]
                    self._matrix[position] = self._matrix[last]
                    self._ids[position] = moved
                    self._rows[moved] = position
                self._ids.pop()

    def rebuild(
        self, items: Iterable[tuple[str, Matrix]], total: int, progress: Progress | None = None
    ) -> None:
        with self._lock:
            dimension = self._dim()
            fresh = ExactIndex(initial_capacity=max(total, self._initial_capacity))
            fresh.open(dimension)
            done = 0
            batch_ids: list[str] = []
            batch_rows: list[Matrix] = []
            for item, vector in items:
                batch_ids.append(item)
                batch_rows.append(np.asarray(vector, dtype=np.float32).reshape(-1))
                if len(batch_ids) >= 1024:
                    fresh.add(batch_ids, np.stack(batch_rows))
                    done += len(batch_ids)
                    batch_ids, batch_rows = [], []
                    if progress is not None:
                        progress(done, max(total, done))
            if batch_ids:
                fresh.add(batch_ids, np.stack(batch_rows))
                done += len(batch_ids)
            if progress is not None:
                progress(done, max(total, done))
            self._matrix, self._ids, self._rows = fresh._matrix, fresh._ids, fresh._rows

    # -- reads --------------------------------------------------------------------------

    def query(self, vector: Matrix, k: int, allow: Collection[str] | None = None) -> list[ScoredId]:
        with self._lock:
            unit, k = check_query(vector, k, self._dim())
            allowed = check_allow(allow)
            if k == 0 or not self._ids:
                return []
            if allowed is None:
                ids = self._ids
                scores = self._matrix[: len(self._ids)] @ unit
            else:
                positions = np.fromiter(
                    (self._rows[i] for i in allowed if i in self._rows), dtype=np.int64
                )
                if positions.size == 0:
                    return []
                positions.sort()
                ids = [self._ids[p] for p in positions]
                scores = self._matrix[positions] @ unit
            best = top_k(scores, k)
            return [ScoredId(ids[p], float(scores[p])) for p in best]

    def count(self) -> int:
        with self._lock:
            return len(self._ids)

    def ids(self) -> set[str]:
        with self._lock:
            return set(self._ids)

    def items(self) -> tuple[list[str], Matrix]:
        """Every id with its unit row (a copy), in insertion order (an overlay folded into
        a graph reads them)."""
        with self._lock:
            return list(self._ids), self._matrix[: len(self._ids)].copy()


def create(context: AdapterContext | None = None, **options: Any) -> ExactIndex:
    read_only = context.read_only if context is not None else False
    return ExactIndex(read_only=options.pop("read_only", read_only), **options)
