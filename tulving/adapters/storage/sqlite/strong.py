"""The strong tier's vectors in the SQLite store (``ports.storage.StrongVectors``): a
second vector table, ``strong_embeddings``, keyed by entry and model, holding the content
hash the vector was computed from (schema migration "strong vectors")."""

from __future__ import annotations

from collections.abc import Sequence

from tulving.adapters.storage.half_vectors import from_bytes, to_bytes
from tulving.adapters.storage.sqlite.connection import _chunks
from tulving.adapters.storage.sqlite.entries import SQLiteEntries
from tulving.ports.embedder import Vectors


class SQLiteStrongVectors(SQLiteEntries):
    def strong_vectors_for(self, model: str, entry_ids: Sequence[str]) -> dict[str, Vectors]:
        out: dict[str, Vectors] = {}
        with self._read() as conn:
            for chunk in _chunks(list(dict.fromkeys(entry_ids)), 900):
                rows = conn.execute(
                    "SELECT s.entry_id, s.vector FROM strong_embeddings s JOIN entries e"
                    " ON e.id = s.entry_id AND e.content_hash = s.content_hash"
                    f" WHERE s.model = ? AND s.entry_id IN ({','.join('?' * len(chunk))})",
                    [model, *chunk]).fetchall()
                for row in rows:
                    out[row[0]] = from_bytes(row[1])
        return out

    def put_strong_vectors(self, model: str, items: Sequence[tuple[str, Vectors]]) -> int:
        rows = [(i, model, to_bytes(v), i) for i, v in items]
        written = 0
        with self.transaction():
            for row in rows:
                written += self._c.execute(
                    "INSERT OR REPLACE INTO strong_embeddings(entry_id, model, content_hash,"
                    " vector) SELECT ?, ?, e.content_hash, ? FROM entries e WHERE e.id = ?",
                    row).rowcount
        return written

    def lacking_strong_vectors(self, model: str, limit: int) -> list[str]:
        rows = self._fetch(
            "SELECT e.id FROM entries e WHERE e.archived_at IS NULL AND NOT EXISTS ("
            "SELECT 1 FROM strong_embeddings s WHERE s.entry_id = e.id AND s.model = ?"
            " AND s.content_hash = e.content_hash) ORDER BY e.id LIMIT ?",
            [model, int(limit)])
        return [r[0] for r in rows]

    def count_strong_vectors(self, model: str) -> int:
        return int(self._fetch("SELECT count(*) FROM strong_embeddings WHERE model = ?",
                               [model])[0][0])

    def clear_strong_vectors(self, model: str) -> None:
        with self.transaction():
            self._c.execute("DELETE FROM strong_embeddings WHERE model = ?", (model,))
