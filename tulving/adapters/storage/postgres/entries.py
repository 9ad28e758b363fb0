"""Entry writes and reads of the PostgreSQL store.

Concurrency rules (many processes on many machines write one store):
- a key is serialised by a transaction-scoped advisory lock on (schema, partition, key),
  taken before the active holder is read, so concurrent writers of one key form a chain;
  the partial unique index ``entries_active_key`` is the backstop;
- advisory locks of a batch are taken in one statement in hash order, and entry rows are
  locked in one ``ORDER BY id ... FOR UPDATE`` statement per operation;
- the application's writing transactions take their tenant's write lock first
  (``lock_tenant_writes``, see ``records``), so writers of one tenant never wait for each
  other in opposite orders; a link between entries is a targeted update of that link
  (``link_conflicts``, ``supersede_entries``), never a row rewritten from an older read;
- ``touch`` (access statistics, from any process at any time) never waits while holding
  a row lock: it updates the rows it can lock at once (``SKIP LOCKED``) and each of the
  others in a statement of its own, so it cannot close a cycle with a writer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

import attrs
from psycopg import errors

from tulving.adapters.storage.postgres.codec import (
    INSERT_ENTRY,
    SELECT_ENTRY,
    UPDATE_ENTRY,
    as_vector,
    entry_from_row,
    entry_params,
)
from tulving.adapters.storage.postgres.connection import Conn, translate_errors
from tulving.adapters.storage.postgres.filters import where
from tulving.adapters.storage.postgres.vectors import PostgresVectors
from tulving.adapters.storage.rows import json_tuple
from tulving.domain.entry import EntryBrief, MemoryEntry
from tulving.domain.errors import StorageError, ValidationError
from tulving.domain.query import EntryFilter, ScoredId
from tulving.domain.storage_helpers import conflict_sides
from tulving.domain.types import ArchiveReason
from tulving.ports.embedder import Vectors
from tulving.ports.storage import Archival, Supersession, WriteOutcome

T = TypeVar("T")

_LOCK_KEYS = """
    SELECT pg_advisory_xact_lock(h) FROM (
        SELECT DISTINCT hashtextextended(current_schema() || chr(31) || p || chr(31) || k, 0) AS h
        FROM unnest(%s::text[], %s::text[]) AS u(p, k)) s
    ORDER BY h"""


def lock_keys(conn: Conn, pairs: Sequence[tuple[str, str]]) -> None:
    """Serialise writers of these (partition, key) pairs until the transaction ends."""
    if pairs:
        conn.execute(_LOCK_KEYS, ([p for p, _ in pairs], [k for _, k in pairs])).fetchall()


def tsquery_text(match: Sequence[str]) -> str:
    """``'a' | 'b'``: each word a quoted lexeme (stemmed by the english config), ORed."""
    quoted = []
    for word in match:
        word = word.strip()
        if word:
            quoted.append("'" + word.replace("\\", "\\\\").replace("'", "''") + "'")
    return " | ".join(quoted)


def _many(cur: Any, statement: str, rows: Sequence[Any]) -> None:
    """executemany (pipelined) for batches; a plain execute for one row, which saves the
    pipeline's extra synchronisation round trip on the common single write."""
    if len(rows) == 1:
        cur.execute(statement, rows[0])
    elif rows:
        cur.executemany(statement, rows)


def insert_entries(cur: Any, new: Sequence[MemoryEntry],
                   vectors: Sequence[tuple[str, Vectors]]) -> None:
    """New entries, their tags and their vectors (no result read: fit for a pipeline)."""
    _many(cur, INSERT_ENTRY, [entry_params(e) for e in new])
    tags = [(e.id, t) for e in new for t in dict.fromkeys(e.tags)]
    if tags:
        _many(cur, "INSERT INTO entry_tags (entry_id, tag) VALUES (%s, %s)", tags)
    if vectors:
        _many(
            cur,
            "INSERT INTO embeddings (entry_id, vector) VALUES (%s, %b) "
            "ON CONFLICT (entry_id) DO UPDATE SET vector = EXCLUDED.vector, indexed = TRUE",
            vectors,
        )


#: Supersede still-active entries by a targeted update of the supersede fields only.
SUPERSEDE = """UPDATE entries e SET archived_at = u.at, archive_reason = 'superseded',
       superseded_by = u.sby, valid_until = u.until,
       expired_at = COALESCE(e.expired_at, u.at), updated_at = u.at,
       signature = u.sig
   FROM unnest(%s::text[], %s::text[], %s::timestamptz[],
               %s::timestamptz[], %s::text[]) AS u(id, sby, at, until, sig)
   WHERE e.id = u.id AND e.archived_at IS NULL RETURNING e.id"""


def supersede_params(items: Mapping[str, Supersession]) -> tuple[Any, ...]:
    ids = sorted(items)
    return (ids, [items[i].superseded_by for i in ids], [items[i].at for i in ids],
            [items[i].valid_until for i in ids], [items[i].signature for i in ids])


def _set_indexed(conn: Conn, ids: Sequence[str], indexed: bool) -> None:
    """Keep the pgvector index to active entries: archiving un-flags the entry's vector
    (kept as the source of truth), restoring flags it again."""
    if ids:
        conn.execute(
            "UPDATE embeddings SET indexed = %s WHERE entry_id = ANY(%s) AND indexed <> %s",
            (indexed, list(ids), indexed),
        )


class PostgresEntries(PostgresVectors):
    # -- writes ----------------------------------------------------------------------

    @translate_errors
    def write(self, entry: MemoryEntry, embedding: Vectors | None = None) -> WriteOutcome:
        return self.write_many([(entry, embedding)])[0]

    @translate_errors
    def write_many(self, items: Sequence[tuple[MemoryEntry, Vectors | None]]) -> list[WriteOutcome]:
        if not items:
            return []
        vectors = [(e.id, as_vector(v)) for e, v in items if v is not None]
        if vectors:
            self._prepare_vectors(vectors)
        return self._atomic(lambda conn: self._write_batch(conn, items, vectors))

    def _write_batch(
        self,
        conn: Conn,
        items: Sequence[tuple[MemoryEntry, Vectors | None]],
        vectors: list[tuple[str, Vectors]],
    ) -> list[WriteOutcome]:
        pairs = sorted({(e.partition, e.key) for e, _ in items if e.key is not None})
        active: dict[tuple[str, str], MemoryEntry] = {}
        if pairs:
            lock_keys(conn, pairs)
            rows = conn.execute(
                f"SELECT {SELECT_ENTRY} FROM entries e "
                "WHERE (e.partition, e.key) IN (SELECT * FROM unnest(%s::text[], %s::text[])) "
                "AND e.archived_at IS NULL ORDER BY e.id FOR UPDATE OF e",
                ([p for p, _ in pairs], [k for _, k in pairs]),
            ).fetchall()
            for row in rows:
                found = entry_from_row(row)
                active[(found.partition, found.key or "")] = found
        new: dict[str, MemoryEntry] = {}
        archived_old: dict[str, MemoryEntry] = {}
        outcomes: list[WriteOutcome] = []
        for entry, _ in items:
            superseded = None
            if entry.key is not None:
                slot = (entry.partition, entry.key)
                previous = active.get(slot)
                if previous is not None:
                    at = entry.created_at
                    superseded = attrs.evolve(
                        previous,
                        archived_at=at,
                        archive_reason=ArchiveReason.SUPERSEDED,
                        superseded_by=entry.id,
                        expired_at=at,
                        updated_at=at,
                    )
                    if previous.id in new:
                        new[previous.id] = superseded
                    else:
                        archived_old[previous.id] = superseded
                    entry = attrs.evolve(entry, supersedes=previous.id)
                active[slot] = entry
            if entry.id in new:
                raise ValidationError(f"entry id {entry.id} appears twice in one batch")
            new[entry.id] = entry
            outcomes.append(WriteOutcome(entry=entry, superseded=superseded))
        with conn.cursor() as cur:
            if archived_old:
                _many(cur, UPDATE_ENTRY, [entry_params(e) for e in archived_old.values()])
            try:
                insert_entries(cur, list(new.values()), vectors)
            except errors.UniqueViolation as exc:
                raise StorageError(f"write rejected by the store: {exc}") from exc
            gone = [*archived_old, *(i for i, e in new.items() if e.archived_at is not None)]
            if gone:
                _set_indexed(conn, gone, False)
        return outcomes

    @translate_errors
    def replace(self, entry: MemoryEntry) -> None:
        def work(conn: Conn) -> None:
            if entry.key is not None and entry.archived_at is None:
                lock_keys(conn, [(entry.partition, entry.key)])
            try:
                cur = conn.execute(UPDATE_ENTRY, entry_params(entry))
            except errors.UniqueViolation as exc:
                raise StorageError(
                    f"key {entry.key!r} is already held by another active entry in "
                    f"{entry.partition!r}"
                ) from exc
            if cur.rowcount == 0:
                raise StorageError(f"no entry {entry.id} to replace")
            _set_indexed(conn, [entry.id], entry.archived_at is None)
            conn.execute("DELETE FROM entry_tags WHERE entry_id = %s", (entry.id,))
            tags = [(entry.id, t) for t in dict.fromkeys(entry.tags)]
            if tags:
                conn.cursor().executemany(
                    "INSERT INTO entry_tags (entry_id, tag) VALUES (%s, %s)", tags
                )

        self._atomic(work)

    @translate_errors
    def archive(self, archivals: Sequence[Archival]) -> int:
        unique: dict[str, Archival] = {}
        for a in archivals:
            unique.setdefault(a.entry_id, a)
        if not unique:
            return 0
        ids = sorted(unique)

        def work(conn: Conn) -> int:
            conn.execute(
                "SELECT 1 FROM entries WHERE id = ANY(%s) AND archived_at IS NULL "
                "ORDER BY id FOR UPDATE",
                (ids,),
            ).fetchall()
            cur = conn.execute(
                """UPDATE entries e SET archived_at = a.at, archive_reason = a.reason,
                       superseded_by = COALESCE(a.sby, e.superseded_by),
                       expired_at = COALESCE(e.expired_at, a.at), updated_at = a.at
                   FROM unnest(%s::text[], %s::text[], %s::timestamptz[], %s::text[])
                       AS a(id, reason, at, sby)
                   WHERE e.id = a.id AND e.archived_at IS NULL RETURNING e.id""",
                (
                    ids,
                    [unique[i].reason.value for i in ids],
                    [unique[i].at for i in ids],
                    [unique[i].superseded_by for i in ids],
                ),
            )
            changed = [row["id"] for row in cur.fetchall()]
            _set_indexed(conn, changed, False)
            return len(changed)

        return self._atomic(work)

    @translate_errors
    def unarchive(self, entry_ids: Sequence[str], at: datetime) -> int:
        ids = sorted(set(entry_ids))
        if not ids:
            return 0

        def work(conn: Conn) -> int:
            keyed = conn.execute(
                "SELECT partition, key FROM entries WHERE id = ANY(%s) "
                "AND archived_at IS NOT NULL AND key IS NOT NULL",
                (ids,),
            ).fetchall()
            lock_keys(conn, sorted({(r["partition"], r["key"]) for r in keyed}))
            rows = conn.execute(
                "SELECT id, partition, key FROM entries WHERE id = ANY(%s) "
                "AND archived_at IS NOT NULL ORDER BY id FOR UPDATE",
                (ids,),
            ).fetchall()
            claimed: dict[tuple[str, str], str] = {}
            for row in rows:
                if row["key"] is None:
                    continue
                slot = (row["partition"], row["key"])
                if slot in claimed:
                    raise StorageError(
                        f"cannot restore: entries {claimed[slot]} and {row['id']} both hold key "
                        f"{row['key']!r}; unarchive one of them"
                    )
                claimed[slot] = row["id"]
            if claimed:
                holders = conn.execute(
                    "SELECT id, partition, key FROM entries WHERE archived_at IS NULL AND "
                    "(partition, key) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
                    ([p for p, _ in claimed], [k for _, k in claimed]),
                ).fetchall()
                if holders:
                    h = holders[0]
                    raise StorageError(
                        f"cannot restore {claimed[(h['partition'], h['key'])]}: key "
                        f"{h['key']!r} is held by active entry {h['id']}"
                    )
            restored = [r["id"] for r in rows]
            cur = conn.execute(
                "UPDATE entries SET archived_at = NULL, archive_reason = NULL, "
                "expired_at = NULL, updated_at = %s WHERE id = ANY(%s) AND archived_at IS NOT NULL",
                (at, restored),
            )
            _set_indexed(conn, restored, True)
            return cur.rowcount

        return self._atomic(work)

    @translate_errors
    def delete(self, entry_ids: Sequence[str]) -> int:
        ids = sorted(set(entry_ids))
        if not ids:
            return 0

        def work(conn: Conn) -> int:
            conn.execute(
                "SELECT 1 FROM entries WHERE id = ANY(%s) ORDER BY id FOR UPDATE", (ids,)
            ).fetchall()
            conn.execute("DELETE FROM embeddings WHERE entry_id = ANY(%s)", (ids,))
            conn.execute("DELETE FROM strong_embeddings WHERE entry_id = ANY(%s)", (ids,))
            return conn.execute("DELETE FROM entries WHERE id = ANY(%s)", (ids,)).rowcount

        return self._atomic(work)

    @translate_errors
    def touch(self, entry_ids: Sequence[str], at: datetime) -> None:
        ids = sorted(entry_ids)
        if not ids:
            return
        counts = "(SELECT u.id, count(*) AS n FROM unnest(%s::text[]) AS u(id) GROUP BY u.id) c"
        if self._outer() is not None:  # inside a caller's transaction: its lock order
            self._atomic(lambda conn: self._touch_locked(conn, ids, at, counts))
            return
        # One access per occurrence: an id listed twice was read twice.
        done = self._atomic(lambda conn: {row["id"] for row in conn.execute(
            f"UPDATE entries e SET access_count = e.access_count + c.n, last_accessed_at = %s "
            f"FROM {counts} WHERE e.id = c.id AND e.id IN (SELECT id FROM entries "
            "WHERE id = ANY(%s) ORDER BY id FOR UPDATE SKIP LOCKED) RETURNING e.id",
            (at, ids, sorted(set(ids)))).fetchall()})
        for entry_id in sorted(set(ids) - done):  # held by a writer: wait, holding nothing
            n = ids.count(entry_id)
            self._atomic(lambda conn, i=entry_id, n=n: conn.execute(
                "UPDATE entries SET access_count = access_count + %s, last_accessed_at = %s "
                "WHERE id = %s", (n, at, i)))

    @staticmethod
    def _touch_locked(conn: Conn, ids: list[str], at: datetime, counts: str) -> None:
        conn.execute(
            "SELECT 1 FROM entries WHERE id = ANY(%s) ORDER BY id FOR UPDATE", (ids,)
        ).fetchall()
        conn.execute(
            f"UPDATE entries e SET access_count = e.access_count + c.n, last_accessed_at = %s "
            f"FROM {counts} WHERE e.id = c.id", (at, ids))

    @translate_errors
    def link_conflicts(self, pairs: Sequence[tuple[str, str]], at: datetime) -> int:
        wanted = conflict_sides(pairs)
        if not wanted:
            return 0

        def work(conn: Conn) -> int:
            rows = conn.execute(
                "SELECT id, conflict_ids FROM entries WHERE id = ANY(%s) ORDER BY id FOR UPDATE",
                (sorted(wanted),)).fetchall()
            held = {row["id"]: list(json_tuple(row["conflict_ids"])) for row in rows}
            ids, values = [], []
            for entry_id in sorted(held):
                current = held[entry_id]
                added = [o for o in dict.fromkeys(wanted[entry_id])
                         if o in held and o not in current]
                if added:
                    ids.append(entry_id)
                    values.append(json.dumps([*current, *added]))
            if ids:
                conn.execute(
                    "UPDATE entries e SET conflict_ids = u.c, updated_at = %s "
                    "FROM unnest(%s::text[], %s::text[]) AS u(id, c) WHERE e.id = u.id",
                    (at, ids, values))
            return len(ids)

        return self._atomic(work)

    @translate_errors
    def supersede_entries(self, items: Sequence[Supersession]) -> list[str]:
        unique = {i.entry_id: i for i in items}
        if not unique:
            return []
        ids = sorted(unique)

        def work(conn: Conn) -> list[str]:
            conn.execute(
                "SELECT 1 FROM entries WHERE id = ANY(%s) AND archived_at IS NULL "
                "ORDER BY id FOR UPDATE", (ids,)).fetchall()
            rows = conn.execute(SUPERSEDE, supersede_params(unique)).fetchall()
            changed = sorted(row["id"] for row in rows)
            _set_indexed(conn, changed, False)
            return changed

        return self._atomic(work)

    # -- reads -----------------------------------------------------------------------
    @translate_errors
    def written_since(self, mark: int, partitions: Sequence[str], ids: Sequence[str] = ()
                      ) -> tuple[list[MemoryEntry], list[tuple[MemoryEntry, Vectors | None]]]:
        """``WriteMarks``: in one statement, the entries ``ids`` as they are now, and the
        active entries of ``partitions`` that writing transactions after ``mark`` wrote
        (``entry_writes``, migration 5) with their vectors."""
        if not ids and not partitions:
            return [], []
        asked = sorted(set(ids))
        with self._read() as conn, conn.cursor(binary=True) as cur:
            cur.execute(
                f"SELECT {SELECT_ENTRY}, e.id = ANY(%s) AS asked, "
                "coalesce(w.write_seq > %s AND e.archived_at IS NULL, FALSE) AS written, "
                "CASE WHEN w.write_seq > %s THEN v.vector END AS vec "
                "FROM entries e LEFT JOIN entry_writes w ON w.entry_id = e.id "
                "LEFT JOIN embeddings v ON v.entry_id = e.id "
                "WHERE e.id = ANY(%s) OR e.id IN (SELECT entry_id FROM entry_writes "
                "WHERE partition = ANY(%s) AND write_seq > %s)",
                (asked, mark, mark, asked, sorted(set(partitions)), mark))
            rows = cur.fetchall()
        now, written = [], []
        for row in rows:
            entry = entry_from_row(row)
            if row["asked"]:
                now.append(entry)
            if row["written"]:
                written.append((entry, row["vec"]))
        return now, written


    @translate_errors
    def get(self, entry_id: str) -> MemoryEntry | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {SELECT_ENTRY} FROM entries e WHERE e.id = %s", (entry_id,)
            ).fetchone()
        return entry_from_row(row) if row else None

    @translate_errors
    def get_many(self, entry_ids: Sequence[str]) -> list[MemoryEntry]:
        return self._by_ids(SELECT_ENTRY, entry_ids, entry_from_row)

    @translate_errors
    def get_briefs(self, entry_ids: Sequence[str]) -> list[EntryBrief]:
        """Four columns, not forty: what search's rerank reads (see the storage port)."""
        return self._by_ids(
            "e.id, e.content, e.valid_from, e.source_entry_ids", entry_ids,
            lambda r: EntryBrief(r["id"], r["content"], r["valid_from"],
                                 json_tuple(r["source_entry_ids"])))

    def _by_ids(self, columns: str, entry_ids: Sequence[str],
                decode: Callable[[Any], T]) -> list[T]:
        """``columns`` of the entries with these ids, decoded, in the order of the ids."""
        if not entry_ids:
            return []
        with self._read() as conn:
            rows = conn.execute(f"SELECT {columns} FROM entries e WHERE e.id = ANY(%s)",
                                (list(set(entry_ids)),)).fetchall()
        found = {row["id"]: decode(row) for row in rows}
        return [found[i] for i in entry_ids if i in found]

    @translate_errors
    def active_by_key(self, partitions: Sequence[str], key: str) -> MemoryEntry | None:
        if not partitions:
            return None
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {SELECT_ENTRY} FROM entries e WHERE e.partition = ANY(%s) "
                "AND e.key = %s AND e.archived_at IS NULL",
                (list(partitions), key),
            ).fetchall()
        by_partition = {row["partition"]: row for row in rows}
        for partition in partitions:
            if partition in by_partition:
                return entry_from_row(by_partition[partition])
        return None

    @translate_errors
    def query(
        self,
        flt: EntryFilter,
        *,
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[MemoryEntry]:
        clause, params = where(flt)
        order = "DESC" if newest_first else "ASC"
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {SELECT_ENTRY} FROM entries e WHERE {clause} "
                f"ORDER BY e.id {order} LIMIT %s OFFSET %s",
                [*params, limit, max(0, offset)],
            ).fetchall()
        return [entry_from_row(row) for row in rows]

    @translate_errors
    def count(self, flt: EntryFilter) -> int:
        clause, params = where(flt)
        with self._read() as conn:
            row = conn.execute(
                f"SELECT count(*) AS n FROM entries e WHERE {clause}", params
            ).fetchone()
        return int(row["n"]) if row else 0

    @translate_errors
    def ids_matching(self, flt: EntryFilter) -> set[str]:
        clause, params = where(flt)
        with self._read() as conn, conn.cursor() as cur:
            cur.execute(f"SELECT e.id FROM entries e WHERE {clause}", params)
            return {row["id"] for row in cur}

    @translate_errors
    def lexical_search(self, match: Sequence[str], flt: EntryFilter, limit: int) -> list[ScoredId]:
        text = tsquery_text(match)
        if not text or limit <= 0:
            return []
        clause, params = where(flt)
        with self._read() as conn:
            rows = conn.execute(
                "SELECT e.id, ts_rank_cd(e.search_tsv, q, 1) AS score "
                "FROM entries e, to_tsquery('english', %s) AS q "
                f"WHERE e.search_tsv @@ q AND {clause} "
                "ORDER BY score DESC, e.id LIMIT %s",
                [text, *params, limit],
            ).fetchall()
        return [ScoredId(row["id"], float(row["score"])) for row in rows]

    @translate_errors
    def adjacent(self, entry_ids: Sequence[str], flt: EntryFilter) -> dict[str, tuple[str, ...]]:
        """One round trip: per id, two index probes bounded to its event time (the
        ``(valid_from, id)`` index), joined laterally so ids without neighbours stay."""
        ids = list(dict.fromkeys(entry_ids))
        if not ids:
            return {}
        clause, params = where(flt)
        side = ("(SELECT e.id FROM entries e WHERE e.valid_from = s.valid_from AND e.id {} s.id"
                f" AND {clause} ORDER BY e.valid_from {{}}, e.id {{}} LIMIT 1)")
        sql = (
            "SELECT s.id AS src, n.id AS other FROM entries s LEFT JOIN LATERAL ("
            + side.format("<", "DESC", "DESC") + " UNION ALL "
            + side.format(">", "ASC", "ASC") + ") n ON TRUE WHERE s.id = ANY(%s)"
        )
        found: dict[str, list[str]] = {}
        with self._read() as conn:
            for row in conn.execute(sql, [*params, *params, ids]).fetchall():
                others = found.setdefault(row["src"], [])
                if row["other"] is not None:
                    others.append(row["other"])
        return {i: tuple(sorted(v)) for i, v in found.items()}

    @translate_errors
    def tag_counts(self, flt: EntryFilter) -> dict[str, int]:
        clause, params = where(flt)
        with self._read() as conn:
            rows = conn.execute(
                "SELECT t.tag, count(*) AS n FROM entry_tags t JOIN entries e ON e.id = t.entry_id "
                f"WHERE {clause} GROUP BY t.tag",
                params,
            ).fetchall()
        return {row["tag"]: int(row["n"]) for row in rows}
