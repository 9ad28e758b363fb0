"""pgvector HNSW index inside PostgreSQL, over the vectors the PostgreSQL store already holds.

Why it is shaped like this:
- The index shares the store's ``embeddings`` table and its connection pool: vectors live
  once, PostgreSQL maintains the HNSW graph on every write, and every process on every
  machine sees the same index at once. ``persist`` therefore has nothing to do, and
  ``rebuild`` is cheap: it re-syncs rows (an upsert that skips unchanged vectors, then
  un-flags ids that are gone) instead of building a graph.
- Membership is the ``indexed`` flag, not the row: ``remove`` un-flags, so dropping an id
  from the index never destroys the vector storage treats as the source of truth. The
  HNSW index is partial (``WHERE indexed``).
- Filters never lose recall: small allow-lists are answered exactly (a scan of the
  allowed rows); larger ones use HNSW with ``hnsw.iterative_scan``, and any query that
  returns fewer than ``k`` hits while more exist falls back to the exact scan.
- Scores are ``1 - cosine distance`` (cosine similarity, higher is better).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np
from psycopg.pq import TransactionStatus

from tulving.adapters.storage.postgres.connection import Conn, translate_errors
from tulving.adapters.storage.postgres.store import PostgresStorage
from tulving.adapters.vectors._checks import check_allow, check_batch, check_dimension, check_query
from tulving.domain.errors import ConfigError, VectorIndexError
from tulving.domain.query import ScoredId
from tulving.domain.storage_helpers import iter_batches
from tulving.ports.embedder import Vectors
from tulving.ports.vectors import Progress

_UPSERT = (
    "INSERT INTO embeddings (entry_id, vector, indexed) VALUES (%s, %b, TRUE) "
    "ON CONFLICT (entry_id) DO UPDATE SET vector = EXCLUDED.vector, indexed = TRUE"
)
#: Rebuild's upsert: rows already indexed with the same vector are not rewritten, so a
#: rebuild from storage's own vectors costs a transfer and a comparison, not a graph insert.
_SYNC = _UPSERT + " WHERE NOT embeddings.indexed OR embeddings.vector <> EXCLUDED.vector"


class PgVectorIndex:
    name = "pgvector"
    #: The index lives in the store's own tables: a vector the storage commits is indexed
    #: for every process at that commit (writers need not wait for ``add``).
    in_store = True

    def __init__(
        self,
        storage: PostgresStorage,
        *,
        m: int = 16,
        ef_construction: int = 64,
        ef_search: int = 100,
        exact_below: int = 10_000,
        batch: int = 1000,
    ) -> None:
        self._storage = storage
        self._m = int(m)
        self._ef_construction = int(ef_construction)
        self._ef_search = max(1, min(1000, int(ef_search)))
        self._exact_below = int(exact_below)
        self._batch = max(1, int(batch))
        self._dimension: int | None = None
        self._ready = False

    # -- lifecycle -------------------------------------------------------------------

    def open(self, dimension: int) -> None:
        """Adopt ``dimension``; if the store holds vectors of another dimension (a model
        change not yet re-embedded) the index reads as empty until they are cleared."""
        self._dimension = check_dimension(dimension)
        self._storage.open()
        # the search settings ride on every connection a request keeps (``reading``)
        self._storage.add_idle_setup(self._configure_session)
        self._ready = False
        self._make_ready(strict=False)

    def _make_ready(self, *, strict: bool) -> bool:
        if self._ready:
            return True
        dimension = self._dim()
        have = self._storage.vector_dimension()
        if have is not None and have != dimension:
            if strict:
                raise VectorIndexError(
                    f"the store holds {have}-dimensional vectors and this index was opened "
                    f"for {dimension}; clear or re-embed the stored vectors first"
                )
            return False
        self._storage.ensure_vector_dimension(dimension)
        self._storage.ensure_hnsw_index(self._m, self._ef_construction)
        self._ready = self._storage._outer() is None  # re-check after a caller's tx
        return True

    def _dim(self) -> int:
        if self._dimension is None:
            raise VectorIndexError("the pgvector index is not open")
        return self._dimension

    def persist(self) -> None:
        """Nothing to write: PostgreSQL already holds the vectors and the HNSW graph."""

    def close(self) -> None:
        """The pool belongs to the storage adapter, which closes it."""

    # -- writes ----------------------------------------------------------------------

    def _raw_rows(self, ids: Sequence[str], vectors: Vectors) -> list[tuple[str, Vectors]]:
        """Validated (id, vector) pairs; the vector is written as given (not re-normalised)
        so the bits storage returns stay the bits the caller wrote."""
        checked_ids, _unit = check_batch(ids, vectors, self._dim())
        raw = np.asarray(vectors, dtype=np.float32)
        if raw.ndim == 1:
            raw = raw[None, :]
        last = {item: row for row, item in enumerate(ids)}
        return [(i, raw[last[i]]) for i in checked_ids]

    @translate_errors
    def add(self, ids: Sequence[str], vectors: Vectors) -> None:
        rows = self._raw_rows(ids, vectors)
        if not rows:
            return
        self._make_ready(strict=True)

        def work(conn: Conn) -> None:
            with conn.cursor() as cur:
                cur.executemany(_UPSERT, rows)

        self._storage._atomic(work)

    @translate_errors
    def remove(self, ids: Iterable[str]) -> None:
        gone = sorted({i for i in ids if isinstance(i, str)})
        if not gone:
            return
        with self._storage._autocommit() as conn:
            conn.execute(
                "UPDATE embeddings SET indexed = FALSE WHERE indexed AND entry_id = ANY(%s)",
                (gone,),
            )

    @translate_errors
    def rebuild(
        self, items: Iterable[tuple[str, Vectors]], total: int, progress: Progress | None = None
    ) -> None:
        self._make_ready(strict=True)
        seen: set[str] = set()
        done = 0
        with self._storage.transaction(), self._storage._read() as conn:
            for batch in iter_batches(items, self._batch):
                ids = [i for i, _ in batch]
                matrix = np.stack([np.asarray(v, dtype=np.float32).reshape(-1) for _, v in batch])
                rows = self._raw_rows(ids, matrix)
                with conn.cursor() as cur:
                    cur.executemany(_SYNC, rows)
                seen.update(ids)
                done += len(batch)
                if progress is not None:
                    progress(done, max(total, done))
            conn.execute(
                "UPDATE embeddings SET indexed = FALSE WHERE indexed AND NOT (entry_id = ANY(%s))",
                (sorted(seen),),
            )

    # -- reads -----------------------------------------------------------------------

    @translate_errors
    def count(self) -> int:
        if not self._make_ready(strict=False):
            return 0
        with self._storage._read() as conn:
            row = conn.execute("SELECT count(*) AS n FROM embeddings WHERE indexed").fetchone()
        return int(row["n"]) if row else 0

    @translate_errors
    def ids(self) -> set[str]:
        if not self._make_ready(strict=False):
            return set()
        with self._storage._read() as conn, conn.cursor() as cur:
            cur.execute("SELECT entry_id FROM embeddings WHERE indexed")
            return {row["entry_id"] for row in cur}

    @translate_errors
    def query(
        self, vector: Vectors, k: int, allow: Collection[str] | None = None
    ) -> list[ScoredId]:
        query, k = check_query(vector, k, self._dim())
        allowed = check_allow(allow)
        if k == 0 or (allowed is not None and not allowed):
            return []
        if not self._make_ready(strict=False):
            return []
        allow_list = sorted(allowed) if allowed is not None else None
        if allow_list is not None and len(allow_list) <= self._exact_below:
            return self._exact(query, k, allow_list)
        hits = self._approximate(query, k, allow_list)
        if len(hits) < k and len(hits) < self._available(allow_list):
            return self._exact(query, k, allow_list)
        return hits

    def _approximate(self, query: Vectors, k: int, allow: list[str] | None) -> list[ScoredId]:
        ef = max(self._ef_search, min(1000, 2 * k))
        condition, params = _condition(allow)
        select = (
            "SELECT entry_id, 1 - (vector <=> %b) AS score FROM embeddings "
            f"WHERE {condition} ORDER BY vector <=> %b LIMIT %s"
        )
        values = [query, *params, query, k]
        with self._storage._read() as conn:
            # The common case: one statement, on a connection whose session already
            # carries our search settings (set once per pooled connection).
            self._configure_session(conn)
            if ef == self._ef_search:
                rows = conn.execute(select, values).fetchall()
            else:
                # A wider search for this statement only, sent with it in one round trip:
                # inside the caller's (or the request's read) transaction, then back to
                # the usual breadth; else in a transaction of its own.
                in_tx = conn.info.transaction_status != TransactionStatus.IDLE
                with conn.pipeline(), nullcontext() if in_tx else conn.transaction():
                    conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef)}")
                    cur = conn.execute(select, values)
                    if in_tx:
                        conn.execute(f"SET LOCAL hnsw.ef_search = {int(self._ef_search)}")
                rows = cur.fetchall()
        hits = [ScoredId(r["entry_id"], float(r["score"])) for r in rows]
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits

    def _configure_session(self, conn: Conn) -> None:
        """``hnsw.ef_search`` and iterative scans (pgvector >= 0.8: keep scanning until
        ``LIMIT`` rows pass the filter) for this pooled connection, once."""
        if getattr(conn, "_tulving_ef_search", None) == self._ef_search:
            return
        idle = conn.info.transaction_status == TransactionStatus.IDLE
        scope = "" if idle else "LOCAL "  # a session SET in a caller's tx could roll back
        conn.execute(
            f"SET {scope}hnsw.ef_search = {int(self._ef_search)}; "
            f"SET {scope}hnsw.iterative_scan = relaxed_order"
        )
        if idle:
            conn._tulving_ef_search = self._ef_search  # type: ignore[attr-defined]

    def _exact(self, query: Vectors, k: int, allow: list[str] | None) -> list[ScoredId]:
        condition, params = _condition(allow)
        with self._storage._read() as conn:
            # Ordering by the score expression (not the ``<=>`` operator) keeps the HNSW
            # index out of the plan: this is a scan of the qualifying rows, exact.
            rows = conn.execute(
                "SELECT entry_id, 1 - (vector <=> %b) AS score FROM embeddings "
                f"WHERE {condition} ORDER BY score DESC, entry_id LIMIT %s",
                [query, *params, k],
            ).fetchall()
        return [ScoredId(r["entry_id"], float(r["score"])) for r in rows]

    def _available(self, allow: list[str] | None) -> int:
        condition, params = _condition(allow)
        with self._storage._read() as conn:
            row = conn.execute(
                f"SELECT count(*) AS n FROM embeddings WHERE {condition}", params
            ).fetchone()
        return int(row["n"]) if row else 0


def _condition(allow: list[str] | None) -> tuple[str, list[Any]]:
    if allow is None:
        return "indexed", []
    return "indexed AND entry_id = ANY(%s)", [allow]


def create(context: Any, **options: Any) -> PgVectorIndex:
    """The pgvector index over ``context.storage`` (which must be the PostgreSQL store).

    Options: ``m``, ``ef_construction`` (HNSW build), ``ef_search`` (query breadth),
    ``exact_below`` (allow-lists up to this size are answered exactly), ``batch``.
    """
    storage = getattr(context, "storage", None)
    if not isinstance(storage, PostgresStorage):
        raise ConfigError(
            "vectors='pgvector' needs storage='postgres' (it indexes the vectors the "
            f"PostgreSQL store holds); got storage {getattr(storage, 'name', storage)!r}"
        )
    known = {"m", "ef_construction", "ef_search", "exact_below", "batch"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(f"unknown pgvector options {unknown}; known: {sorted(known)}")
    return PgVectorIndex(storage, **options)
