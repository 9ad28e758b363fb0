"""Vectors of the SQLite store (the source of truth the vector index is a cache of) and
its vector change log (schema migration 4; see ``tulving.ports.storage.VectorChangeLog``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from tulving.adapters.storage.sqlite.connection import _chunks
from tulving.adapters.storage.sqlite.entries import _SELECT, SQLiteEntries
from tulving.adapters.storage.sqlite.filters import where
from tulving.domain.entry import MemoryEntry
from tulving.domain.query import EntryFilter
from tulving.ports.embedder import Vectors


class SQLiteVectors(SQLiteEntries):
    def vectors_for(self, entry_ids: Sequence[str]) -> dict[str, Vectors]:
        out: dict[str, Vectors] = {}
        with self._read() as conn:
            for chunk in _chunks(list(entry_ids), 900):
                rows = conn.execute(
                    f"SELECT entry_id, vector FROM embeddings WHERE entry_id IN "
                    f"({','.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
                for row in rows:
                    out[row[0]] = self._vector(row[1])
        return out

    def iter_vectors(self, flt: EntryFilter, batch: int = 1000) -> Iterator[tuple[str, Vectors]]:
        clause, params = where(flt)
        last = ""
        while True:
            rows = self._fetch(
                "SELECT e.id, v.vector FROM entries e JOIN embeddings v ON v.entry_id = e.id "
                f"WHERE {clause} AND e.id > ? ORDER BY e.id LIMIT ?",
                [*params, last, batch],
            )
            if not rows:
                return
            for row in rows:
                yield row[0], self._vector(row[1])
            last = rows[-1][0]

    def put_vectors(self, items: Sequence[tuple[str, Vectors]]) -> None:
        with self.transaction():
            self._c.executemany(
                "INSERT OR REPLACE INTO embeddings(entry_id, vector) VALUES (?, ?)",
                [(i, self._blob(v)) for i, v in items],
            )

    def missing_vectors(self, flt: EntryFilter, limit: int) -> list[MemoryEntry]:
        """Two counts first (a walk of two small indexes, ~20 ms at 200k rows): when every
        entry has a vector the answer is known without the scan for entries lacking one,
        which every open runs (0.3 s at 200k rows, over a second at a million)."""
        lacking = self._fetch("SELECT (SELECT count(*) FROM entries)"
                              " - (SELECT count(*) FROM embeddings)")[0][0]
        if int(lacking) <= 0:
            return []
        clause, params = where(flt)
        sql = (
            f"{_SELECT} WHERE {clause} AND NOT EXISTS "
            "(SELECT 1 FROM embeddings v WHERE v.entry_id = e.id) ORDER BY e.id LIMIT ?"
        )
        with self._read() as conn:
            return self._entries(conn.execute(sql, [*params, int(limit)]).fetchall())

    def clear_vectors(self) -> None:
        with self.transaction():
            self._c.execute("DELETE FROM embeddings")

    def vector_log_position(self) -> int:
        rows = self._fetch("SELECT seq FROM sqlite_sequence WHERE name = 'vector_log'")
        return int(rows[0][0]) if rows else 0

    def vector_changes(self, after: int, limit: int | None = None
                       ) -> tuple[list[str], int] | None:
        with self._read() as conn:
            trimmed = conn.execute(
                "SELECT value FROM meta WHERE name = 'vector_log_trimmed'").fetchone()
            if int(after) < (int(trimmed[0]) if trimmed else 0):
                return None
            sql = "SELECT seq, entry_id FROM vector_log WHERE seq > ? ORDER BY seq"
            params: list[Any] = [int(after)]
            if limit is not None:
                sql += " LIMIT ?"
                params.append(int(limit))
            rows = conn.execute(sql, params).fetchall()
            if not rows:
                return [], int(after)
            return list(dict.fromkeys(r[1] for r in rows)), int(rows[-1][0])

    def trim_vector_log(self, upto: int) -> None:
        with self.transaction():
            row = self._c.execute(
                "SELECT value FROM meta WHERE name = 'vector_log_trimmed'").fetchone()
            if row is not None and int(row[0]) >= int(upto):
                return
            self._c.execute("DELETE FROM vector_log WHERE seq <= ?", (int(upto),))
            self._c.execute("INSERT OR REPLACE INTO meta(name, value) "
                            "VALUES ('vector_log_trimmed', ?)", (str(int(upto)),))
