"""Stored vectors of the PostgreSQL store (the source of truth the pgvector index reads).

The dimension is fixed by the first vector written and recorded in meta; the column is
then altered to ``vector(n)`` because pgvector's HNSW index needs a typed column.
``clear_vectors`` undoes both, so a re-embedding into another model's space can start over.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from tulving.adapters.storage.postgres.codec import SELECT_ENTRY, as_vector, entry_from_row
from tulving.adapters.storage.postgres.connection import Conn, PgConnections, translate_errors
from tulving.adapters.storage.postgres.filters import where
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ValidationError
from tulving.domain.query import EntryFilter
from tulving.ports.embedder import Vectors

DIMENSION_META = "pg_vector_dimension"
HNSW_INDEX = "embeddings_hnsw"


class PostgresVectors(PgConnections):
    _dimension: int | None = None

    # -- dimension and index DDL (shared with the pgvector adapter) -------------------

    def vector_dimension(self) -> int | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT value FROM meta WHERE name = %s", (DIMENSION_META,)
            ).fetchone()
        return int(row["value"]) if row else None

    def _fix_dimension(self, conn: Conn, dimension: int) -> int:
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('tulving-vecdim:' || current_schema(), 0))"
        )
        row = conn.execute("SELECT value FROM meta WHERE name = %s", (DIMENSION_META,)).fetchone()
        if row is not None:
            return int(row["value"])
        conn.execute(f"ALTER TABLE embeddings ALTER COLUMN vector TYPE vector({int(dimension)})")
        conn.execute(
            "INSERT INTO meta (name, value) VALUES (%s, %s) "
            "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
            (DIMENSION_META, str(dimension)),
        )
        return dimension

    @translate_errors
    def ensure_vector_dimension(self, dimension: int) -> None:
        """Fix the store's vector dimension on first use; a different one is refused."""
        self._ensure_dimension(dimension)

    def _ensure_dimension(self, dimension: int) -> None:
        if dimension <= 0:
            raise ValidationError(f"vector dimension must be positive, got {dimension}")
        if self._dimension is None:
            in_caller_tx = self._outer() is not None
            have = self._atomic(lambda conn: self._fix_dimension(conn, dimension))
            if not in_caller_tx:  # only cache what is committed
                self._dimension = have
        else:
            have = self._dimension
        if have != dimension:
            raise ValidationError(
                f"vector dimension {dimension} does not match the store's {have}; "
                "clear the stored vectors before switching embedding models"
            )

    def _prepare_vectors(self, items: Sequence[tuple[str, Vectors]]) -> None:
        """Check shapes against the first vector, then fix/verify the store's dimension."""
        dimension = int(items[0][1].shape[0]) if items[0][1].ndim == 1 else 0
        for entry_id, vec in items:
            if vec.ndim != 1 or vec.shape[0] != dimension:
                raise ValidationError(
                    f"vector of {entry_id} has shape {vec.shape}; expected ({dimension},)"
                )
        self._ensure_dimension(dimension)

    @translate_errors
    def ensure_hnsw_index(self, m: int = 16, ef_construction: int = 64) -> None:
        """Create the HNSW (cosine) index over indexed vectors if it does not exist."""

        def work(conn: Conn) -> None:
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended('tulving-hnsw:' || current_schema(), 0))"
            )
            conn.execute(
                f"CREATE INDEX IF NOT EXISTS {HNSW_INDEX} ON embeddings "
                f"USING hnsw (vector vector_cosine_ops) WITH (m = {int(m)}, "
                f"ef_construction = {int(ef_construction)}) WHERE indexed"
            )

        self._atomic(work)

    # -- VectorStore -----------------------------------------------------------------

    @translate_errors
    def vectors_for(self, entry_ids: Sequence[str]) -> dict[str, Vectors]:
        if not entry_ids:
            return {}
        with self._read() as conn, conn.cursor(binary=True) as cur:
            cur.execute(
                "SELECT v.entry_id, v.vector FROM embeddings v JOIN entries e ON e.id = v.entry_id "
                "WHERE v.entry_id = ANY(%s)",
                (list(set(entry_ids)),),
            )
            return {row["entry_id"]: row["vector"] for row in cur}

    @translate_errors
    def iter_vectors(self, flt: EntryFilter, batch: int = 1000) -> Iterator[tuple[str, Vectors]]:
        clause, params = where(flt)
        last = ""
        while True:
            with self._read() as conn, conn.cursor(binary=True) as cur:
                cur.execute(
                    "SELECT e.id, v.vector FROM entries e JOIN embeddings v ON v.entry_id = e.id "
                    f"WHERE {clause} AND e.id > %s ORDER BY e.id LIMIT %s",
                    [*params, last, max(1, batch)],
                )
                rows = cur.fetchall()
            for row in rows:
                yield row["id"], row["vector"]
            if len(rows) < max(1, batch):
                return
            last = rows[-1]["id"]

    @translate_errors
    def put_vectors(self, items: Sequence[tuple[str, Vectors]]) -> None:
        vectors = [(i, as_vector(v)) for i, v in items]
        if not vectors:
            return
        self._prepare_vectors(vectors)

        def work(conn: Conn) -> None:
            with conn.cursor() as cur:
                # Ids of entries that do not exist are skipped; archived entries keep
                # their vector but stay out of the index.
                cur.executemany(
                    "INSERT INTO embeddings (entry_id, vector, indexed) "
                    "SELECT %s, %b, e.archived_at IS NULL FROM entries e WHERE e.id = %s "
                    "ON CONFLICT (entry_id) DO UPDATE "
                    "SET vector = EXCLUDED.vector, indexed = EXCLUDED.indexed",
                    [(i, v, i) for i, v in vectors],
                )

        self._atomic(work)

    @translate_errors
    def missing_vectors(self, flt: EntryFilter, limit: int) -> list[MemoryEntry]:
        clause, params = where(flt)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {SELECT_ENTRY} FROM entries e WHERE {clause} AND NOT EXISTS "
                "(SELECT 1 FROM embeddings v WHERE v.entry_id = e.id) ORDER BY e.id LIMIT %s",
                [*params, max(0, limit)],
            ).fetchall()
        return [entry_from_row(row) for row in rows]

    @translate_errors
    def clear_vectors(self) -> None:
        def work(conn: Conn) -> None:
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended('tulving-vecdim:' || current_schema(), 0))"
            )
            conn.execute("TRUNCATE embeddings")
            conn.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")
            conn.execute("ALTER TABLE embeddings ALTER COLUMN vector TYPE vector")
            conn.execute("DELETE FROM meta WHERE name = %s", (DIMENSION_META,))

        self._atomic(work)
        self._dimension = None
