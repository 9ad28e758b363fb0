"""The strong tier's vectors in the PostgreSQL store (``ports.storage.StrongVectors``): a
second vector table, ``strong_embeddings``, keyed by entry and model, with the content
hash each vector was computed from. Half-precision bytes, not a pgvector column: they are
only read by id to re-score a few candidates, never searched, so no index type is needed
and the table works whether or not the vectors adapter is pgvector."""

from __future__ import annotations

from collections.abc import Sequence

from tulving.adapters.storage.half_vectors import from_bytes, to_bytes
from tulving.adapters.storage.postgres.connection import Conn, PgConnections, translate_errors
from tulving.ports.embedder import Vectors


class PostgresStrongVectors(PgConnections):
    @translate_errors
    def strong_vectors_for(self, model: str, entry_ids: Sequence[str]) -> dict[str, Vectors]:
        ids = list(dict.fromkeys(entry_ids))
        if not ids:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                "SELECT s.entry_id, s.vector FROM strong_embeddings s JOIN entries e"
                " ON e.id = s.entry_id AND e.content_hash = s.content_hash"
                " WHERE s.model = %s AND s.entry_id = ANY(%s)", (model, ids)).fetchall()
        return {row["entry_id"]: from_bytes(bytes(row["vector"])) for row in rows}

    @translate_errors
    def put_strong_vectors(self, model: str, items: Sequence[tuple[str, Vectors]]) -> int:
        rows = sorted((i, to_bytes(v)) for i, v in items)
        if not rows:
            return 0

        def work(conn: Conn) -> int:
            written = 0
            with conn.cursor() as cur:
                for entry_id, blob in rows:
                    cur.execute(
                        "INSERT INTO strong_embeddings (entry_id, model, content_hash, vector)"
                        " SELECT e.id, %s, e.content_hash, %s FROM entries e WHERE e.id = %s"
                        " ON CONFLICT (entry_id, model) DO UPDATE SET"
                        " content_hash = EXCLUDED.content_hash, vector = EXCLUDED.vector",
                        (model, blob, entry_id))
                    written += cur.rowcount
            return written

        return self._atomic(work)

    @translate_errors
    def lacking_strong_vectors(self, model: str, limit: int) -> list[str]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT e.id FROM entries e WHERE e.archived_at IS NULL AND NOT EXISTS ("
                "SELECT 1 FROM strong_embeddings s WHERE s.entry_id = e.id AND s.model = %s"
                " AND s.content_hash = e.content_hash) ORDER BY e.id LIMIT %s",
                (model, int(limit))).fetchall()
        return [row["id"] for row in rows]

    @translate_errors
    def count_strong_vectors(self, model: str) -> int:
        with self._read() as conn:
            row = conn.execute("SELECT count(*) AS n FROM strong_embeddings WHERE model = %s",
                               (model,)).fetchone()
        return int(row["n"]) if row else 0

    @translate_errors
    def clear_strong_vectors(self, model: str) -> None:
        self._atomic(lambda conn: conn.execute(
            "DELETE FROM strong_embeddings WHERE model = %s", (model,)))
