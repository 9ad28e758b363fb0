"""Full-text search of the SQLite store: bm25 over FTS5, or over its in-memory mirror
(:mod:`.fulltext_mirror`), which ranks identically in a fraction of the time."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from tulving.adapters.storage.sqlite.connection import SQLiteConnections
from tulving.adapters.storage.sqlite.encryption import OPERATIONAL_ERRORS
from tulving.adapters.storage.sqlite.filters import where
from tulving.adapters.storage.sqlite.fulltext_mirror import (
    INLINE_BUILD_ROWS,
    TRACKING,
    FullTextMirror,
)
from tulving.domain.errors import StorageError
from tulving.domain.query import EntryFilter, ScoredId

#: The most rows a filtered full-text query asks the mirror for before it lets FTS5 join
#: the whole match list with the filter instead (a filter that keeps few of the matches).
MIRROR_WIDEST = 5000
#: A store too large to build its mirror inline builds it only once this process has asked
#: this many full-text queries: a one-shot command (``tulving search``, a CLI curate) is
#: answered by FTS5 and exits without paying for a build it would not use (13.8 s of a
#: core and ~1.2 GB at a million memories); a server builds it on a thread after its first
#: queries, FTS5 answering meanwhile.
MIRROR_AFTER_QUERIES = 16


class LexicalMixin(SQLiteConnections):
    def lexical_search(self, match: Sequence[str], flt: EntryFilter, limit: int) -> list[ScoredId]:
        """bm25 over FTS5, or over its in-memory mirror, which ranks identically in a
        fraction of the time (from ``fulltext_mirror_from`` rows; see :mod:`.fulltext_mirror`).
        The best matches are taken from the index alone first (``bm25()`` named
        explicitly: measured faster than the ``rank`` column) and only they are joined to
        entries for the filter; when the filter drops too many, the full join runs, so
        recall is never lost."""
        terms = [t.replace('"', '""') for t in match if t.strip()]
        if not terms or limit <= 0:
            return []
        expression = " OR ".join(f'"{t}"' for t in terms)
        clause, params = where(flt)
        head = limit + max(16, limit // 2) if flt.identity_only else max(4 * limit, 200)
        mirrored = self._mirror_search(terms, head)
        if mirrored is not None:
            return self._mirrored_hits(mirrored, terms, expression, clause, params, head,
                                       limit)
        quick = (
            "WITH top AS MATERIALIZED (SELECT rowid, bm25(entries_fts) AS r FROM entries_fts "
            "WHERE entries_fts MATCH ? ORDER BY r LIMIT ?) "
            "SELECT e.id, -top.r AS score FROM top JOIN entries e ON e.rowid = top.rowid "
            f"WHERE {clause} ORDER BY top.r, e.id LIMIT ?"
        )
        try:
            with self._read() as conn:
                rows = conn.execute(quick, [expression, head, *params, int(limit)]).fetchall()
                if len(rows) < limit:
                    matched = conn.execute(
                        "SELECT count(*) FROM (SELECT 1 FROM entries_fts WHERE entries_fts "
                        "MATCH ? LIMIT ?)", [expression, head + 1]).fetchone()[0]
                    if matched > head:
                        return self._full_lexical(conn, expression, clause, params, limit)
        except OPERATIONAL_ERRORS as exc:
            raise StorageError(f"full-text query failed: {exc}") from exc
        return [ScoredId(r[0], float(r[1])) for r in rows]

    def fulltext_mirror_ready(self, timeout: float | None = None) -> bool:
        """Build the full-text mirror now if the store is large enough for one and wait
        up to ``timeout`` seconds for it; True when searches use it (benchmarks and
        tests call this; a search starts the build by itself)."""
        mirror = self._started_mirror()
        return mirror is not None and mirror.wait(timeout)

    @staticmethod
    def _full_lexical(
        conn: sqlite3.Connection, expression: str, clause: str, params: list[Any], limit: int
    ) -> list[ScoredId]:
        """bm25 over every matching row that passes the filter (a selective filter)."""
        full = (
            "SELECT e.id, -bm25(entries_fts) AS score FROM entries_fts "
            "JOIN entries e ON e.rowid = entries_fts.rowid "
            f"WHERE entries_fts MATCH ? AND {clause} ORDER BY score DESC, e.id LIMIT ?"
        )
        try:
            rows = conn.execute(full, [expression, *params, int(limit)]).fetchall()
        except OPERATIONAL_ERRORS as exc:
            raise StorageError(f"full-text query failed: {exc}") from exc
        return [ScoredId(r[0], float(r[1])) for r in rows]

    def _mirror_search(
        self, terms: Sequence[str], head: int
    ) -> tuple[list[tuple[int, float]], int] | None:
        """The mirror's best ``head`` rows, or None: FTS5 answers."""
        self._fulltext_queries += 1
        if self._in_transaction() and self.path != ":memory:":
            mirror = self._mirror_in_transaction()
        else:
            mirror = self._started_mirror(eager=False)
        return None if mirror is None else mirror.search(terms, head)

    def _mirror_in_transaction(self) -> FullTextMirror | None:
        """The mirror for a search inside this thread's own transaction, or None. It
        answers exactly what FTS5 would only while the transaction has not yet written a
        row's text (the mirror holds committed text; the index statistics are then the
        committed ones too): the write path's restatement lookups run before the batch's
        rows are written, and on FTS5 each cost ~1.4 µs per matching row, so a store of
        facts sharing words paid more for every fact it held. The mirror is never built
        from here (its change triggers go in between transactions; see
        :meth:`_mirror_after_commit`)."""
        mirror = self._mirror
        if mirror is None or mirror.failed or not mirror.ready or not self._tracking:
            return None
        if self._c.execute("SELECT 1 FROM temp.tulving_fts_dirty LIMIT 1").fetchone():
            return None
        return mirror

    def _mirror_after_commit(self) -> None:
        """After a commit: start the mirror's build if searches inside transactions alone
        asked for it often enough (a bulk writer that never searches outside one)."""
        if (self._mirror is None and self._mirror_from is not None
                and self._fulltext_queries >= MIRROR_AFTER_QUERIES
                and not self._on_main()):
            self._started_mirror(eager=False)

    def _started_mirror(self, eager: bool = True) -> FullTextMirror | None:
        """The mirror, its build started if it has no index; None while FTS5 must answer:
        the mirror is off or failed, this thread must see its own uncommitted writes, the
        store is below ``fulltext_mirror_from`` rows, or (not ``eager``) a large store's
        process has not asked ``MIRROR_AFTER_QUERIES`` full-text queries yet."""
        if self._mirror_from is None or self._on_main():
            return None
        mirror = self._mirror
        if mirror is None:
            rows = self._row_count()
            if rows < self._mirror_from:
                return None
            if (not eager and rows >= INLINE_BUILD_ROWS
                    and self._fulltext_queries < MIRROR_AFTER_QUERIES):
                return None
            # The writer connection gets its change triggers between transactions; a
            # search never waits for a writer to get them (FTS5 answers this time).
            if not self._lock.acquire(blocking=False):
                return None
            try:
                if self._mirror is None:
                    if not self._tracking:
                        for statement in TRACKING:
                            self._c.execute(statement)
                        self._tracking = True
                    self._mirror = FullTextMirror(self.path, self._keying)
                mirror = self._mirror
            finally:
                self._lock.release()
        if mirror.failed:
            return None
        if not mirror.ready:
            mirror.start(self._row_count())
        return mirror

    def _row_count(self) -> int:
        """Rows of the store (the highest row id), read again only after a commit: a small
        store's searches pay no query for the threshold."""
        if self._rows_at_commit != self._commits:
            self._rows_at_commit = self._commits
            self._rows = int(self._fetch("SELECT coalesce(max(rowid), 0) FROM entries")[0][0])
        return self._rows

    def _mirrored_hits(
        self, mirrored: tuple[list[tuple[int, float]], int], terms: Sequence[str],
        expression: str, clause: str, params: list[Any], head: int, limit: int,
    ) -> list[ScoredId]:
        """The mirror's rows that pass the filter, best first (ties by id, as FTS5's
        path orders them). When the filter drops too many (archived versions and other
        partitions are in the index too), the mirror is asked for four times as many, up
        to ``MIRROR_WIDEST`` rows; only past that does the full FTS5 join run (measured
        at 200k entries, two in five of them archived: 11 ms a query for the join, under
        1 ms for a wider mirror answer), so recall is never lost."""
        top, matched = mirrored
        while True:
            if not top:
                return []
            score_of = dict(top)
            marks = ",".join("?" * len(top))
            with self._read() as conn:
                rows = conn.execute(
                    f"SELECT e.rowid, e.id FROM entries e NOT INDEXED"
                    f" WHERE e.rowid IN ({marks}) AND {clause}",
                    [*score_of, *params]).fetchall()
                if len(rows) >= limit or matched <= len(top):
                    break
                wider = (self._mirror.search(terms, 4 * len(top))
                         if self._mirror is not None and len(top) < MIRROR_WIDEST else None)
                if wider is None:
                    return self._full_lexical(conn, expression, clause, params, limit)
            top, matched = wider
        hits = sorted((ScoredId(entry_id, score_of[rowid]) for rowid, entry_id in rows),
                      key=lambda h: (-h.score, h.id))
        return hits[:limit]
