"""Entries of the SQLite store: writes (supersede by key inside the write), reads by id,
key and filter, archival, deletion, access statistics, event neighbours, tags, and the
shared-state writes on entries (conflict links, targeted supersede).

One process writes a SQLite store (the writer lock), and its transactions are ``BEGIN
IMMEDIATE`` under one lock: every statement below is atomic by construction.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

import attrs

from tulving.adapters.storage.rows import (
    COLUMNS,
    READ_COLUMNS,
    entry_to_row,
    json_tuple,
    ts,
    values_to_entry,
)
from tulving.adapters.storage.sqlite.connection import SQLiteConnections, _at, _chunks
from tulving.adapters.storage.sqlite.encryption import INTEGRITY_ERRORS
from tulving.adapters.storage.sqlite.filters import where
from tulving.domain.entry import EntryBrief, MemoryEntry
from tulving.domain.errors import StorageError
from tulving.domain.query import EntryFilter
from tulving.domain.storage_helpers import conflict_sides
from tulving.domain.types import ArchiveReason
from tulving.ports.embedder import Vectors
from tulving.ports.storage import Archival, Supersession, WriteOutcome

# Tags ride along in the same statement (unit-separator joined): one query per read.
_SELECT = (
    "SELECT " + ", ".join(f"e.{c}" for c in READ_COLUMNS)
    + ", (SELECT group_concat(t.tag, char(31)) FROM entry_tags t WHERE t.entry_id = e.id)"
    + " FROM entries e"
)
_TAGS_AT = len(READ_COLUMNS)
_INSERT = (
    f"INSERT INTO entries ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
)
_UPDATE = (
    "UPDATE entries SET "
    + ", ".join(f"{c} = ?" for c in COLUMNS if c != "id")
    + " WHERE id = ?"
)


class SQLiteEntries(SQLiteConnections):
    @staticmethod
    def _entries(rows: Sequence[sqlite3.Row]) -> list[MemoryEntry]:
        return [
            values_to_entry(r, tuple(sorted(r[_TAGS_AT].split("\x1f"))) if r[_TAGS_AT] else ())
            for r in rows
        ]

    def _insert(self, entry: MemoryEntry, embedding: Vectors | None) -> None:
        row = entry_to_row(entry)
        self._c.execute(_INSERT, [row[c] for c in COLUMNS])
        self._write_tags(entry)
        if embedding is not None:
            self._c.execute(
                "INSERT OR REPLACE INTO embeddings(entry_id, vector) VALUES (?, ?)",
                (entry.id, self._blob(embedding)),
            )

    def _write_tags(self, entry: MemoryEntry) -> None:
        self._c.execute("DELETE FROM entry_tags WHERE entry_id = ?", (entry.id,))
        self._c.executemany(
            "INSERT INTO entry_tags(entry_id, tag) VALUES (?, ?)",
            [(entry.id, tag) for tag in entry.tags],
        )

    def _write_one(self, entry: MemoryEntry, embedding: Vectors | None) -> WriteOutcome:
        old: MemoryEntry | None = None
        if entry.key is not None:
            rows = self._c.execute(
                _SELECT + " WHERE e.partition = ? AND e.key = ? AND e.archived_at IS NULL",
                (entry.partition, entry.key),
            ).fetchall()
            if rows:
                old = self._entries(rows)[0]
                at = entry.created_at
                self._c.execute(
                    "UPDATE entries SET archived_at = ?, archive_reason = ?, superseded_by = ?,"
                    " expired_at = COALESCE(expired_at, ?), updated_at = ? WHERE id = ?",
                    (ts(at), ArchiveReason.SUPERSEDED.value, entry.id, ts(at), ts(at), old.id),
                )
                old = attrs.evolve(
                    old, archived_at=at, archive_reason=ArchiveReason.SUPERSEDED,
                    superseded_by=entry.id, expired_at=old.expired_at or at, updated_at=at,
                )
                entry = attrs.evolve(entry, supersedes=old.id)
        self._insert(entry, embedding)
        return WriteOutcome(entry=entry, superseded=old)

    def write(self, entry: MemoryEntry, embedding: Vectors | None = None) -> WriteOutcome:
        return self.write_many([(entry, embedding)])[0]

    def write_many(
        self, items: Sequence[tuple[MemoryEntry, Vectors | None]]
    ) -> list[WriteOutcome]:
        try:
            with self.transaction():
                return [self._write_one(entry, vec) for entry, vec in items]
        except INTEGRITY_ERRORS as exc:
            raise StorageError(f"write rejected by the store: {exc}") from exc

    def replace(self, entry: MemoryEntry) -> None:
        row = entry_to_row(entry)
        with self.transaction():
            try:
                cur = self._c.execute(_UPDATE, [row[c] for c in COLUMNS if c != "id"]
                                      + [entry.id])
            except INTEGRITY_ERRORS as exc:
                raise StorageError(f"replace rejected by the store: {exc}") from exc
            if cur.rowcount == 0:
                raise StorageError(f"no entry {entry.id} to replace")
            self._write_tags(entry)

    def get(self, entry_id: str) -> MemoryEntry | None:
        found = self.get_many([entry_id])
        return found[0] if found else None

    def get_many(self, entry_ids: Sequence[str]) -> list[MemoryEntry]:
        with self._read() as conn:
            by_id: dict[str, MemoryEntry] = {}
            for chunk in _chunks(list(dict.fromkeys(entry_ids)), 900):
                rows = conn.execute(
                    _SELECT + f" WHERE e.id IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
                for entry in self._entries(rows):
                    by_id[entry.id] = entry
            return [by_id[i] for i in entry_ids if i in by_id]

    def get_briefs(self, entry_ids: Sequence[str]) -> list[EntryBrief]:
        """Four columns, not forty: what search's rerank reads (see the port)."""
        by_id: dict[str, EntryBrief] = {}
        with self._read() as conn:
            for chunk in _chunks(list(dict.fromkeys(entry_ids)), 900):
                for entry_id, content, valid_from, sources in conn.execute(
                        "SELECT id, content, valid_from, source_entry_ids FROM entries"
                        f" WHERE id IN ({','.join('?' * len(chunk))})", chunk):
                    by_id[entry_id] = EntryBrief(entry_id, content, _at(valid_from),
                                                 json_tuple(sources))
        return [by_id[i] for i in entry_ids if i in by_id]

    def active_by_key(self, partitions: Sequence[str], key: str) -> MemoryEntry | None:
        with self._read() as conn:
            for partition in partitions:
                rows = conn.execute(
                    _SELECT + " WHERE e.partition = ? AND e.key = ? AND e.archived_at IS NULL",
                    (partition, key),
                ).fetchall()
                if rows:
                    return self._entries(rows)[0]
            return None

    def query(
        self,
        flt: EntryFilter,
        *,
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[MemoryEntry]:
        clause, params = where(flt)
        select = _SELECT
        if flt.since is not None and flt.since == flt.until and flt.as_of is None:
            # One event time (what was written just before a new entry, for its vector):
            # the planner would walk the partition index in id order and test every row's
            # time (51 ms at 40k entries); the (valid_from, id) index answers in a probe.
            select += " INDEXED BY entries_event_order"
        sql = f"{select} WHERE {clause} ORDER BY e.id {'DESC' if newest_first else 'ASC'}"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [int(limit), int(offset)]
        with self._read() as conn:
            return self._entries(conn.execute(sql, params).fetchall())

    def count(self, flt: EntryFilter) -> int:
        clause, params = where(flt)
        return int(self._fetch(f"SELECT count(*) FROM entries e WHERE {clause}", params)[0][0])

    def ids_matching(self, flt: EntryFilter) -> set[str]:
        clause, params = where(flt)
        return {r[0] for r in self._fetch(f"SELECT e.id FROM entries e WHERE {clause}", params)}

    def archive(self, archivals: Sequence[Archival]) -> int:
        changed = 0
        with self.transaction():
            for a in archivals:
                cur = self._c.execute(
                    "UPDATE entries SET archived_at = ?, archive_reason = ?,"
                    " superseded_by = COALESCE(?, superseded_by),"
                    " expired_at = COALESCE(expired_at, ?), updated_at = ?"
                    " WHERE id = ? AND archived_at IS NULL",
                    (ts(a.at), a.reason.value, a.superseded_by, ts(a.at), ts(a.at), a.entry_id),
                )
                changed += cur.rowcount
        return changed

    def unarchive(self, entry_ids: Sequence[str], at: datetime) -> int:
        changed = 0
        try:
            with self.transaction():
                for entry_id in entry_ids:
                    cur = self._c.execute(
                        "UPDATE entries SET archived_at = NULL, archive_reason = NULL,"
                        " expired_at = NULL, updated_at = ? WHERE id = ? AND archived_at IS NOT NULL",
                        (ts(at), entry_id),
                    )
                    changed += cur.rowcount
        except INTEGRITY_ERRORS as exc:
            raise StorageError(f"cannot restore: another active entry holds its key ({exc})") from exc
        return changed

    def delete(self, entry_ids: Sequence[str]) -> int:
        deleted = 0
        with self.transaction():
            for chunk in _chunks(list(entry_ids), 900):
                marks = ",".join("?" * len(chunk))
                self._c.execute(f"DELETE FROM embeddings WHERE entry_id IN ({marks})", chunk)
                self._c.execute(f"DELETE FROM strong_embeddings WHERE entry_id IN ({marks})",
                                chunk)
                self._c.execute(f"DELETE FROM entry_tags WHERE entry_id IN ({marks})", chunk)
                deleted += self._c.execute(
                    f"DELETE FROM entries WHERE id IN ({marks})", chunk
                ).rowcount
        return deleted

    def touch(self, entry_ids: Sequence[str], at: datetime) -> None:
        """Written through the side connection (see :meth:`_side_connection`), except
        inside this thread's own transaction, which the side connection would wait on."""
        self._refuse_write()
        if not entry_ids:
            return
        # One row write per distinct id, counting every occurrence: a row write costs
        # ~25 µs and a batch often names the same memory several times (repeated curates).
        sql = ("UPDATE entries SET access_count = access_count + ?, last_accessed_at = ?"
               " WHERE id = ?")
        at_text = ts(at)
        params = [(n, at_text, i) for i, n in sorted(Counter(entry_ids).items())]
        if self._on_main():
            with self.transaction():
                self._c.executemany(sql, params)
            return
        with self._side_lock:
            conn = self._side_connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(sql, params)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def adjacent(self, entry_ids: Sequence[str], flt: EntryFilter) -> dict[str, tuple[str, ...]]:
        """One statement for all ids: per id and side, a probe of the (valid_from, id)
        index bounded to the id's event time (INDEXED BY: a planner preferring the
        partition index would walk the whole partition instead)."""
        clause, params = where(flt)
        probe = (
            "SELECT * FROM (SELECT ? AS src, e.id FROM entries e INDEXED BY entries_event_order"
            " WHERE e.valid_from = (SELECT valid_from FROM entries WHERE id = ?)"
            f" AND e.id {{}} ? AND {clause} ORDER BY e.valid_from {{}}, e.id {{}} LIMIT 1)"
        )
        before, after = probe.format("<", "DESC", "DESC"), probe.format(">", "ASC", "ASC")
        out: dict[str, tuple[str, ...]] = {}
        with self._read() as conn:
            for chunk in _chunks(list(dict.fromkeys(entry_ids)), 50):
                sql = " UNION ALL ".join(side for _ in chunk for side in (before, after))
                args = [a for i in chunk for _ in range(2) for a in (i, i, i, *params)]
                found: dict[str, list[str]] = {}
                for src, other in conn.execute(sql, args).fetchall():
                    found.setdefault(src, []).append(other)
                marks = ",".join("?" * len(chunk))
                for (entry_id,) in conn.execute(
                        f"SELECT id FROM entries WHERE id IN ({marks})", chunk):
                    out[entry_id] = tuple(sorted(found.get(entry_id, ())))
        return out

    def tag_counts(self, flt: EntryFilter) -> dict[str, int]:
        clause, params = where(flt)
        rows = self._fetch(
            "SELECT t.tag, count(*) FROM entry_tags t JOIN entries e ON e.id = t.entry_id "
            f"WHERE {clause} GROUP BY t.tag ORDER BY t.tag",
            params,
        )
        return {r[0]: int(r[1]) for r in rows}

    def lock_tenant_writes(self, tenant: str) -> None:
        """Writers are serial already (one connection, BEGIN IMMEDIATE)."""

    def link_conflicts(self, pairs: Sequence[tuple[str, str]], at: datetime) -> int:
        wanted = conflict_sides(pairs)
        if not wanted:
            return 0
        with self.transaction():
            ids = sorted(wanted)
            held: dict[str, list[str]] = {}
            for chunk in _chunks(ids, 900):
                for entry_id, conflicts in self._c.execute(
                        f"SELECT id, conflict_ids FROM entries WHERE id IN "
                        f"({','.join('?' * len(chunk))})", chunk):
                    held[entry_id] = list(json.loads(conflicts or "[]"))
            updates = []
            for entry_id in ids:
                if entry_id not in held:
                    continue
                current = held[entry_id]
                added = [o for o in dict.fromkeys(wanted[entry_id])
                         if o in held and o not in current]
                if added:
                    updates.append((json.dumps([*current, *added]), ts(at), entry_id))
            self._c.executemany(
                "UPDATE entries SET conflict_ids = ?, updated_at = ? WHERE id = ?", updates)
        return len(updates)

    def supersede_entries(self, items: Sequence[Supersession]) -> list[str]:
        done: list[str] = []
        with self.transaction():
            for item in sorted(items, key=lambda i: i.entry_id):
                cur = self._c.execute(
                    "UPDATE entries SET archived_at = ?, archive_reason = ?, superseded_by = ?,"
                    " valid_until = ?, expired_at = COALESCE(expired_at, ?), updated_at = ?,"
                    " signature = ? WHERE id = ? AND archived_at IS NULL",
                    (ts(item.at), ArchiveReason.SUPERSEDED.value, item.superseded_by,
                     ts(item.valid_until), ts(item.at), ts(item.at), item.signature,
                     item.entry_id))
                if cur.rowcount:
                    done.append(item.entry_id)
        return done
