"""SQLite storage: one file, WAL, FTS5, the embedded default.

Writes go through one main connection shared by the threads of a process behind a
re-entrant lock (SQLite serialises writers anyway, and one connection keeps transactions
simple); a second *process* is refused by the writer lock. Reads outside the calling
thread's own transaction run on pooled reader connections without that lock (WAL gives
each the last committed state), so a search never queues behind a write or another
search; bookkeeping written in the background (access statistics) has a connection of
its own. Embedding BLOBs are the source of truth for vectors; the vector index beside
the file is a cache rebuilt from them.
"""

from __future__ import annotations

import json
import os
import queue
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from typing import Any

import attrs
import numpy as np

from tulving.adapters.storage.rows import (
    COLUMNS,
    READ_COLUMNS,
    entry_to_row,
    json_tuple,
    parse_ts,
    ts,
    values_to_entry,
)
from tulving.adapters.storage.sqlite.encryption import (
    DATABASE_ERRORS,
    ERRORS,
    INTEGRITY_ERRORS,
    OPERATIONAL_ERRORS,
    Keying,
)
from tulving.adapters.storage.sqlite.filters import where
from tulving.adapters.storage.sqlite.fulltext_mirror import (
    CLEAR_DIRTY,
    INLINE_BUILD_ROWS,
    TAKE_DIRTY,
    TRACKING,
    FullTextMirror,
)
from tulving.adapters.storage.sqlite.lock import WriterLock
from tulving.adapters.storage.sqlite.schema import MIGRATIONS
from tulving.adapters.storage.sqlite.sync_log import SyncLogMixin
from tulving.adapters.storage.tenant_locks import TenantLocks
from tulving.domain.audit_chain import GENESIS, record_hash
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.entry import EntryBrief, MemoryEntry
from tulving.domain.errors import ConfigError, ReadOnlyError, StorageError
from tulving.domain.identity import tenant_key
from tulving.domain.query import EntryFilter, ScoredId
from tulving.domain.records import (
    AuditDraft,
    AuditRecord,
    JobRecord,
    SessionRecord,
    TokenRecord,
)
from tulving.domain.types import ArchiveReason
from tulving.ports.embedder import Vectors
from tulving.ports.storage import (
    Archival,
    StorageCapabilities,
    Supersession,
    WriteOutcome,
    conflict_sides,
)

#: Every connection that writes: erased text must not linger in free pages of any of them.
_WRITER_PRAGMAS = ("synchronous = NORMAL", "foreign_keys = ON", "secure_delete = ON")
#: Reads on the hot path (a search loads tens of rows at random) go through memory-mapped
#: pages and a 32 MB page cache instead of one read() system call per page: measured
#: 15-20 % off search at 100k entries.
_READ_PRAGMAS = ("mmap_size = 268435456", "cache_size = -32768")
#: From this many rows full-text search goes through the in-memory mirror of the index:
#: below it FTS5 answers in well under a millisecond and the mirror's memory is not worth it.
MIRROR_FROM = 5_000
#: The most rows a filtered full-text query asks the mirror for before it lets FTS5 join
#: the whole match list with the filter instead (a filter that keeps few of the matches).
MIRROR_WIDEST = 5000
#: A store too large to build its mirror inline builds it only once this process has asked
#: this many full-text queries: a one-shot command (``tulving search``, a CLI curate) is
#: answered by FTS5 and exits without paying for a build it would not use (13.8 s of a
#: core and ~1.2 GB at a million memories); a server builds it on a thread after its first
#: queries, FTS5 answering meanwhile.
MIRROR_AFTER_QUERIES = 16

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


#: On-disk vector formats (``vector_format``) and their numpy types.
VECTOR_FORMATS: dict[str, Any] = {"float32": np.float32, "float16": np.float16}


class SQLiteStorage(SyncLogMixin):
    name = "sqlite"

    def __init__(self, path: str, *, lock: bool = True, busy_timeout_ms: int = 5000,
                 fulltext_mirror_from: int | None = MIRROR_FROM,
                 encryption: EncryptionKey | None = None,
                 vector_format: str | None = None, read_only: bool = False,
                 new_store_format: str = "float32") -> None:
        """``fulltext_mirror_from``: from how many rows full-text search is answered by
        the in-memory mirror of the index (:mod:`.fulltext_mirror`); None: never.
        ``encryption``: the key of an encrypted (SQLCipher) store (:mod:`.encryption`).
        ``vector_format``: how vectors are kept on disk, ``float32`` or ``float16`` (half
        the bytes; read back as float32); None keeps the store's own (float32 for a new
        one, ``new_store_format``: the factory gives ``float16``, the embedded default). A
        store kept in the other format is converted when it opens, in one transaction
        (see ``_settle_vector_format``).
        ``read_only``: open beside a writer in another process (WAL lets any number of
        readers see its committed state): no writer lock, no migration (a store that
        needs one is refused), no format conversion, no full-text mirror (it follows
        the writer's own commits), and every write raises ``ReadOnlyError``."""
        if vector_format is not None and vector_format not in VECTOR_FORMATS:
            raise ConfigError(f"vector_format must be one of {', '.join(VECTOR_FORMATS)}, "
                              f"got {vector_format!r}")
        if new_store_format not in VECTOR_FORMATS:
            raise ConfigError(f"new_store_format must be one of {', '.join(VECTOR_FORMATS)}")
        self._wanted_format = vector_format
        self._new_store_format = new_store_format
        self._created = False  # this open created the store (migrations from version 0)
        self._dtype: Any = np.float32
        self.read_only = bool(read_only)
        self.path = path
        self.location = path
        self._keying = Keying(path, encryption)
        self.capabilities = StorageCapabilities(
            persistent=path != ":memory:", concurrent_reads=path != ":memory:",
            encrypted_at_rest=encryption is not None)
        self._use_lock = lock and path != ":memory:" and not self.read_only
        self._busy_timeout_ms = busy_timeout_ms
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self._depth = 0
        self._tx_thread: int | None = None
        self._writer_lock: WriterLock | None = None
        self._side: sqlite3.Connection | None = None
        self._side_lock = threading.Lock()
        self._idle_readers: queue.SimpleQueue[tuple[int, sqlite3.Connection]] = (
            queue.SimpleQueue())
        self._generation = 0  # readers of an earlier open() are closed, never reused
        self._mirror_from = (None if path == ":memory:" or self.read_only
                             else fulltext_mirror_from)
        self._mirror: FullTextMirror | None = None
        self._fulltext_queries = 0  # full-text queries this process asked (see MIRROR_AFTER)
        self._tracking = False  # the writer connection notes rows whose text changes
        self._commits = 0  # transactions committed on the writer connection
        self._rows, self._rows_at_commit = 0, -1  # see _row_count
        self._merge_locks = TenantLocks()  # sync merge claims (sync_log)

    # lifecycle ---------------------------------------------------------------------
    def open(self) -> None:
        with self._lock:
            if self._conn is not None:
                return
            if self.read_only:
                self._open_read_only()
                return
            if self.path != ":memory:":
                self._make_parent()
            if self._use_lock:
                self._writer_lock = WriterLock(self.path + ".lock")
                self._writer_lock.acquire()
            try:
                self._keying.check_file()
                conn = self._connect("journal_mode = WAL", *_WRITER_PRAGMAS, *_READ_PRAGMAS)
                self._conn = conn
                self._migrate()
                self._settle_vector_format()
            except DATABASE_ERRORS as exc:
                self._abort_open()
                raise StorageError(f"cannot open SQLite store {self.path}: {exc}") from exc
            except BaseException:
                self._abort_open()
                raise

    def _make_parent(self) -> None:
        """Create the folder of a new store (a per-project ``.tulving/``, a first encrypted
        store in a new folder), private to its owner (0700); an existing one is left as
        it is. A path through a file, or a folder that cannot be made, is a StorageError
        naming it."""
        parent = os.path.dirname(os.path.abspath(self.path))
        if os.path.isdir(parent):
            return
        try:
            os.makedirs(parent, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create the store's folder {parent}: "
                               f"{exc.strerror or exc}") from exc

    def _open_read_only(self) -> None:
        if self.path == ":memory:" or not os.path.isfile(self.path):
            raise ReadOnlyError(f"no store at {self.path} to open read-only")
        try:
            self._keying.check_file()
            self._conn = self._connect("query_only = ON", *_READ_PRAGMAS)
            row = self._c.execute(
                "SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
            current = int(row[0]) if row else 0
            if current > len(MIGRATIONS):
                raise StorageError(
                    f"{self.path} has schema version {current}, newer than this Tulving "
                    f"({len(MIGRATIONS)}); upgrade tulving")
            if current < len(MIGRATIONS):
                raise ReadOnlyError(
                    f"{self.path} has schema version {current} and this Tulving needs "
                    f"{len(MIGRATIONS)}: a read-only open never migrates. Open it once for "
                    "writing (any command that writes, or Memory(path) without read_only) "
                    "while no other process holds it")
            row = self._c.execute(
                "SELECT value FROM meta WHERE name = 'vector_format'").fetchone()
            recorded = str(row[0]) if row else "float32"
            if recorded not in VECTOR_FORMATS:
                raise StorageError(f"{self.path} keeps vectors as {recorded!r}, unknown here")
            self._dtype = VECTOR_FORMATS[recorded]
        except DATABASE_ERRORS as exc:
            self._abort_open()
            raise StorageError(f"cannot open SQLite store {self.path}: {exc}") from exc
        except BaseException:
            self._abort_open()
            raise

    def _refuse_write(self) -> None:
        if self.read_only:
            raise ReadOnlyError(f"{self.path} is open read-only: nothing can be written "
                                "through it")

    def _abort_open(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._writer_lock is not None:
            self._writer_lock.release()
            self._writer_lock = None

    def close(self) -> None:
        mirror, self._mirror = self._mirror, None
        if mirror is not None:
            mirror.close()
        with self._side_lock:
            if self._side is not None:
                self._side.close()
                self._side = None
        # A reader still in use is closed when it is handed back (see _read).
        self._generation += 1
        while True:
            try:
                _, reader = self._idle_readers.get_nowait()
            except queue.Empty:
                break
            reader.close()
        with self._lock:
            if self._conn is not None:
                if not self.read_only:
                    with suppress(*ERRORS):
                        self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self._conn.close()
                self._conn = None
                self._tracking = False
                self._rows_at_commit = -1
            if self._writer_lock is not None:
                self._writer_lock.release()
                self._writer_lock = None

    def change_encryption(self, new: EncryptionKey | None,
                          before_switch: Any = None) -> Any:
        """Re-write the (closed) store file from this store's key to ``new`` (None:
        plain), crash-safe; ``before_switch()`` runs just before the new file replaces
        the old one. See :mod:`.conversion`."""
        from tulving.adapters.storage.sqlite.conversion import convert

        if self._conn is not None:
            raise StorageError("close the store before changing its encryption")
        return convert(self.path, self._keying.key, new, before_switch)

    def _migrate(self) -> None:
        conn = self._c
        conn.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        row = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
        current = int(row[0]) if row else 0
        self._created = current == 0
        if current > len(MIGRATIONS):
            raise StorageError(
                f"{self.path} has schema version {current}, newer than this Tulving "
                f"({len(MIGRATIONS)}); upgrade tulving"
            )
        for version, statements in enumerate(MIGRATIONS[current:], start=current + 1):
            with self.transaction():
                for statement in statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT OR REPLACE INTO meta(name, value) VALUES ('schema_version', ?)",
                    (str(version),),
                )

    def _settle_vector_format(self) -> None:
        """Convert every stored vector when the store was kept in another format. One
        transaction: a crash leaves the old format whole (and its meta saying so), and the
        conversion runs again at the next open."""
        conn = self._c
        row = conn.execute("SELECT value FROM meta WHERE name = 'vector_format'").fetchone()
        recorded = str(row[0]) if row else "float32"
        if recorded not in VECTOR_FORMATS:
            raise StorageError(f"{self.path} keeps vectors as {recorded!r}, unknown here")
        if self._created and row is None:
            recorded = self._new_store_format  # no vector written yet: nothing to convert
            with self.transaction():
                conn.execute("INSERT OR REPLACE INTO meta(name, value) "
                             "VALUES ('vector_format', ?)", (recorded,))
        wanted = self._wanted_format or recorded
        self._dtype = VECTOR_FORMATS[wanted]
        if recorded == wanted:
            return
        source, target = VECTOR_FORMATS[recorded], self._dtype

        def convert(blob: bytes) -> bytes:
            return bytes(np.frombuffer(blob, dtype=source).astype(target).tobytes())

        conn.create_function("tulving_convert_vector", 1, convert, deterministic=True)
        with self.transaction():
            conn.execute("UPDATE embeddings SET vector = tulving_convert_vector(vector)")
            conn.execute("INSERT OR REPLACE INTO meta(name, value) VALUES ('vector_format', ?)",
                         (wanted,))

    def _blob(self, vector: Vectors) -> bytes:
        return np.ascontiguousarray(vector, dtype=np.float32).reshape(-1).astype(
            self._dtype, copy=False).tobytes()

    def _vector(self, blob: bytes) -> Vectors:
        return np.frombuffer(blob, dtype=self._dtype).astype(np.float32)

    @property
    def _c(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StorageError("storage is not open")
        return self._conn

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self._refuse_write()
        with self._lock:
            conn = self._c
            if self._depth == 0:
                try:
                    conn.execute("BEGIN IMMEDIATE")
                except ERRORS as exc:
                    raise _storage_error("could not start a write", exc) from exc
                self._tx_thread = threading.get_ident()
            self._depth += 1
            try:
                yield
            except BaseException as exc:
                self._depth -= 1
                if self._depth == 0:
                    self._tx_thread = None
                    with suppress(*ERRORS):  # SQLite may have rolled back already
                        conn.execute("ROLLBACK")
                if isinstance(exc, ERRORS):  # a full disk, an I/O error: typed, all undone
                    raise _storage_error("the write failed and was undone", exc) from exc
                raise
            else:
                self._depth -= 1
                if self._depth == 0:
                    self._tx_thread = None
                    try:
                        added, removed = self._take_changed_rows(conn)
                        conn.execute("COMMIT")
                    except ERRORS as exc:
                        with suppress(*ERRORS):
                            conn.execute("ROLLBACK")
                        raise _storage_error("the commit failed and was undone", exc) from exc
                    self._commits += 1
                    if self._mirror is not None:
                        if removed:
                            self._mirror.forget()
                        elif added:
                            self._mirror.mark(added)

    def _take_changed_rows(self, conn: sqlite3.Connection) -> tuple[list[int], bool]:
        """Rows this transaction added to the full-text index, and whether it deleted or
        rewrote any (for the mirror); emptied in the same transaction so a rollback
        leaves nothing behind."""
        if not self._tracking:
            return [], False
        changed = conn.execute(TAKE_DIRTY).fetchall()
        if changed:
            conn.execute(CLEAR_DIRTY)
        return [r for r, _ in changed], any(removed for _, removed in changed)

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """The connection for a read: the main one under the lock (see :meth:`_on_main`),
        otherwise an idle pooled reader, used without the lock."""
        if self._on_main():
            with self._lock:
                yield self._c
            return
        while True:
            try:
                generation, reader = self._idle_readers.get_nowait()
            except queue.Empty:
                generation, reader = self._generation, self._new_reader()
                break
            if generation == self._generation:
                break
            reader.close()  # left over from before a close()
        try:
            yield reader
        finally:
            if generation == self._generation:
                self._idle_readers.put((generation, reader))
            else:
                reader.close()

    def _new_reader(self) -> sqlite3.Connection:
        self._c  # noqa: B018  (raises if the store is closed)
        return self._connect("query_only = ON", *_READ_PRAGMAS)

    def _connect(self, *pragmas: str) -> sqlite3.Connection:
        conn: sqlite3.Connection = self._keying.connect(
            isolation_level=None, check_same_thread=False, timeout=30)
        conn.row_factory = self._keying.Row
        for pragma in (f"busy_timeout = {int(self._busy_timeout_ms)}", *pragmas,
                       *self._keying.pragmas):
            conn.execute(f"PRAGMA {pragma}")
        return conn

    def _on_main(self) -> bool:
        """Whether this thread must use the main connection: it holds a transaction there
        (and must see its own writes, which another connection would wait on), or the
        database lives in memory (one connection is the whole database)."""
        return self.path == ":memory:" or self._tx_thread == threading.get_ident()

    def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._read() as conn:
            return conn.execute(sql, params).fetchall()

    # entries -----------------------------------------------------------------------
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

    def _side_connection(self) -> sqlite3.Connection:
        """A second connection to the same file for background bookkeeping, so reads go on
        while it writes: on the main connection (and its lock) every read waited for the
        batch (curate p95 at 100k entries: 36 ms, against 22 ms with none of these writes).
        It writes with the main connection's settings, secure deletion included."""
        self._c  # noqa: B018  (raises if the store is closed)
        if self._side is None:
            self._side = self._connect(*_WRITER_PRAGMAS)
        return self._side

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
        mirror = self._started_mirror(eager=False)
        return None if mirror is None else mirror.search(terms, head)

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

    # vectors ------------------------------------------------------------------------
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

    # the vector change log (migration 4; see ports.storage.VectorChangeLog) ---------------
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

    # meta ---------------------------------------------------------------------------
    def get_meta(self, name: str) -> str | None:
        rows = self._fetch("SELECT value FROM meta WHERE name = ?", (name,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, name: str, value: str) -> None:
        with self.transaction():
            self._c.execute("INSERT OR REPLACE INTO meta(name, value) VALUES (?, ?)", (name, value))

    # sessions -----------------------------------------------------------------------
    def put_session(self, session: SessionRecord) -> None:
        try:
            self._put_session(session)
        except INTEGRITY_ERRORS as exc:
            raise StorageError(f"session {session.id} rejected by the store: {exc}") from exc

    def _put_session(self, session: SessionRecord) -> None:
        with self.transaction():
            # An upsert by id (not INSERT OR REPLACE, which would delete another open
            # session that the one-open-session index finds in the way).
            self._c.execute(
                "INSERT INTO sessions(id, agent_id, tenant, started_at,"
                " last_activity_at, goal, ended_at, end_reason, summary_id, implicit)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
                " agent_id = excluded.agent_id, tenant = excluded.tenant,"
                " started_at = excluded.started_at,"
                " last_activity_at = excluded.last_activity_at, goal = excluded.goal,"
                " ended_at = excluded.ended_at, end_reason = excluded.end_reason,"
                " summary_id = excluded.summary_id, implicit = excluded.implicit",
                (session.id, session.agent_id, session.tenant, ts(session.started_at),
                 ts(session.last_activity_at), session.goal, ts(session.ended_at),
                 session.end_reason, session.summary_id, int(session.implicit)),
            )

    def get_session(self, session_id: str) -> SessionRecord | None:
        rows = self._fetch("SELECT * FROM sessions WHERE id = ?", (session_id,))
        return _session(rows[0]) if rows else None

    def open_sessions(self, agent_id: str, tenant: str) -> list[SessionRecord]:
        rows = self._fetch(
            "SELECT * FROM sessions WHERE agent_id = ? AND tenant = ? AND ended_at IS NULL"
            " ORDER BY started_at",
            (agent_id, tenant),
        )
        return [_session(r) for r in rows]

    # audit --------------------------------------------------------------------------
    def append_audit(self, drafts: Sequence[AuditDraft]) -> list[AuditRecord]:
        out: list[AuditRecord] = []
        with self.transaction():
            for d in drafts:
                row = self._c.execute(
                    "SELECT hash FROM audit_log WHERE tenant = ? ORDER BY seq DESC LIMIT 1",
                    (d.tenant,),
                ).fetchone()
                prev = row[0] if row else GENESIS
                seq_row = self._c.execute(
                    "SELECT seq FROM sqlite_sequence WHERE name = 'audit_log'"
                ).fetchone()
                seq = (int(seq_row[0]) if seq_row else 0) + 1
                details = dict(d.details)
                d = attrs.evolve(d, at=d.at.astimezone(UTC))  # the hash must survive a read-back
                digest = record_hash(
                    prev, seq, d.tenant, d.at, d.actor, d.action, d.entry_id, d.input_hash, details
                )
                self._c.execute(
                    "INSERT INTO audit_log(seq, tenant, at, actor, action, entry_id, input_hash,"
                    " details, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (seq, d.tenant, ts(d.at), d.actor, d.action, d.entry_id, d.input_hash,
                     json.dumps(details, sort_keys=True), prev, digest),
                )
                out.append(AuditRecord(seq, d.tenant, d.at, d.actor, d.action, d.entry_id,
                                       d.input_hash, details, prev, digest))
        return out

    def audit_records(
        self, tenant: str | None = None, *, entry_id: str | None = None
    ) -> list[AuditRecord]:
        conditions = [(c, v) for c, v in (("tenant = ?", tenant), ("entry_id = ?", entry_id))
                      if v is not None]
        where_sql = " AND ".join(c for c, _ in conditions) or "1"
        rows = self._fetch(f"SELECT * FROM audit_log WHERE {where_sql} ORDER BY seq",
                           [v for _, v in conditions])
        return [
            AuditRecord(int(r["seq"]), r["tenant"], _at(r["at"]), r["actor"], r["action"],
                        r["entry_id"], r["input_hash"], json.loads(r["details"]),
                        r["prev_hash"], r["hash"])
            for r in rows
        ]

    # jobs ---------------------------------------------------------------------------
    def enqueue(self, job: JobRecord) -> JobRecord:
        with self.transaction():
            if job.idempotency_key is not None:
                rows = self._c.execute(
                    "SELECT * FROM jobs WHERE idempotency_key = ?", (job.idempotency_key,)
                ).fetchall()
                if rows:
                    return _job(rows[0])
            self._c.execute(
                "INSERT INTO jobs(id, kind, payload, created_at, status, attempts,"
                " idempotency_key, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (job.id, job.kind, json.dumps(dict(job.payload)), ts(job.created_at),
                 job.status, job.attempts, job.idempotency_key, job.error),
            )
        return job

    def pending_jobs(self, kind: str | None = None) -> list[JobRecord]:
        if kind is None:
            rows = self._fetch("SELECT * FROM jobs WHERE status = 'pending' ORDER BY created_at, id")
        else:
            rows = self._fetch(
                "SELECT * FROM jobs WHERE status = 'pending' AND kind = ? ORDER BY created_at, id",
                (kind,),
            )
        return [_job(r) for r in rows]

    def finish_job(self, job_id: str, *, error: str | None = None) -> None:
        with self.transaction():
            self._c.execute(
                "UPDATE jobs SET status = ?, attempts = attempts + 1, error = ? WHERE id = ?",
                ("failed" if error else "done", error, job_id),
            )

    # shared state ---------------------------------------------------------------
    # One process writes a SQLite store (the writer lock), and its transactions are
    # BEGIN IMMEDIATE under one lock: every statement below is atomic by construction.
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

    def open_session(self, session: SessionRecord) -> SessionRecord:
        with self.transaction():
            cur = self._c.execute(
                "INSERT OR IGNORE INTO sessions(id, agent_id, tenant, started_at,"
                " last_activity_at, goal, ended_at, end_reason, summary_id, implicit)"
                " VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?)",
                (session.id, session.agent_id, session.tenant, ts(session.started_at),
                 ts(session.last_activity_at), session.goal, int(session.implicit)))
            if cur.rowcount:
                return attrs.evolve(session, ended_at=None, end_reason=None, summary_id=None)
            row = self._c.execute(
                "SELECT * FROM sessions WHERE agent_id = ? AND tenant = ? AND implicit = ?"
                " AND ended_at IS NULL",
                (session.agent_id, session.tenant, int(session.implicit))).fetchone()
        if row is None:
            raise StorageError(f"session id {session.id} exists already")
        return _session(row)

    def end_session(self, session_id: str, at: datetime, reason: str) -> SessionRecord | None:
        with self.transaction():
            cur = self._c.execute(
                "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?"
                " AND ended_at IS NULL", (ts(at), reason, session_id))
            if not cur.rowcount:
                return None
            row = self._c.execute("SELECT * FROM sessions WHERE id = ?",
                                  (session_id,)).fetchone()
        return _session(row)

    def set_session_summary(self, session_id: str, summary_id: str | None) -> None:
        with self.transaction():
            self._c.execute("UPDATE sessions SET summary_id = ? WHERE id = ?",
                            (summary_id, session_id))

    def note_session_activity(self, session_id: str, at: datetime) -> None:
        with self.transaction():
            self._c.execute(
                "UPDATE sessions SET last_activity_at = ? WHERE id = ? AND ended_at IS NULL"
                " AND last_activity_at < ?", (ts(at), session_id, ts(at)))

    def claim_job(self, job_id: str, owner: str, until: datetime, now: datetime) -> bool:
        with self.transaction():
            cur = self._c.execute(
                "UPDATE jobs SET claimed_by = ?, claimed_until = ? WHERE id = ?"
                " AND status = 'pending' AND (claimed_by IS NULL OR claimed_by = ?"
                " OR claimed_until IS NULL OR claimed_until < ?)",
                (owner, ts(until), job_id, owner, ts(now)))
        return bool(cur.rowcount)

    def take_job(self, job_id: str) -> JobRecord | None:
        with self.transaction():  # BEGIN IMMEDIATE: the caller's, already exclusive
            rows = self._c.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchall()
        job = _job(rows[0]) if rows else None
        return job if job is not None and job.status == "pending" else None

    def get_job(self, job_id: str) -> JobRecord | None:
        rows = self._fetch("SELECT * FROM jobs WHERE id = ?", (job_id,))
        return _job(rows[0]) if rows else None

    def add_token(self, token: TokenRecord) -> bool:
        with self.transaction():
            if self._c.execute("SELECT 1 FROM tokens WHERE id = ?", (token.id,)).fetchone():
                return False
            cur = self._c.execute(
                "INSERT OR IGNORE INTO tokens(id, name, salt, digest, created_at, user_id,"
                " workspace_id, agent_id, read_only) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (token.id, token.name, token.salt, token.digest, ts(token.created_at),
                 token.user_id, token.workspace_id, token.agent_id, int(token.read_only)))
        return bool(cur.rowcount)

    def get_token(self, token_id: str) -> TokenRecord | None:
        rows = self._fetch("SELECT * FROM tokens WHERE id = ? AND revoked_at IS NULL",
                           (token_id,))
        return _token(rows[0]) if rows else None

    def live_tokens(self) -> list[TokenRecord]:
        rows = self._fetch("SELECT * FROM tokens WHERE revoked_at IS NULL"
                           " ORDER BY created_at, id")
        return [_token(r) for r in rows]

    def revoke_token(self, id_or_name: str, at: datetime) -> TokenRecord | None:
        with self.transaction():
            row = self._c.execute(
                "SELECT id FROM tokens WHERE revoked_at IS NULL AND (id = ? OR name = ?)"
                " ORDER BY id = ? DESC LIMIT 1", (id_or_name, id_or_name, id_or_name)
            ).fetchone()
            if row is None:
                return None
            self._c.execute("UPDATE tokens SET revoked_at = ? WHERE id = ?", (ts(at), row[0]))
            found = self._c.execute("SELECT * FROM tokens WHERE id = ?", (row[0],)).fetchone()
        return _token(found)

    # upkeep -------------------------------------------------------------------------
    def active_entries_by_tenant(self) -> Mapping[str, int]:
        """``EntryCensus``: one grouped count over the active entries (the metrics'
        ``tulving_tenant_entries``)."""
        rows = self._fetch("SELECT user_id, workspace_id, count(*) FROM entries"
                           " WHERE archived_at IS NULL GROUP BY user_id, workspace_id")
        return {tenant_key(r[0], r[1]): int(r[2]) for r in rows}

    def stats(self) -> Mapping[str, Any]:
        size = 0
        if self.path != ":memory:":
            for suffix in ("", "-wal", "-shm"):
                with suppress(OSError):
                    size += os.path.getsize(self.path + suffix)
        rows = self._fetch(
            "SELECT (SELECT count(*) FROM entries), (SELECT count(*) FROM embeddings),"
            " (SELECT count(*) FROM audit_log)"
        )[0]
        return {"engine": "sqlite", "path": self.path, "bytes": size, "rows": int(rows[0]),
                "vectors": int(rows[1]), "audit_records": int(rows[2]),
                "sqlite_version": sqlite3.sqlite_version}

    def maintenance(self, action: str) -> Mapping[str, Any]:
        if action != "integrity":
            self._refuse_write()
        with self._lock:
            if action == "vacuum":
                before = self.stats()["bytes"]
                self._c.execute("INSERT INTO entries_fts(entries_fts) VALUES ('optimize')")
                self._c.execute("VACUUM")
                self._c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                return {"action": "vacuum", "bytes_before": before, "bytes_after": self.stats()["bytes"]}
            if action == "checkpoint":
                row = self._c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                return {"action": "checkpoint", "result": list(row)}
            if action == "integrity":
                rows = self._c.execute("PRAGMA integrity_check").fetchall()
                if not self.read_only:  # FTS5's own check is an INSERT command
                    self._c.execute(
                        "INSERT INTO entries_fts(entries_fts) VALUES ('integrity-check')")
                return {"action": "integrity", "ok": rows[0][0] == "ok",
                        "messages": [r[0] for r in rows]}
        raise ConfigError(f"unknown maintenance action {action!r}: vacuum, checkpoint, integrity")


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _at(value: str) -> datetime:
    parsed = parse_ts(value)
    assert parsed is not None
    return parsed


def _session(r: sqlite3.Row) -> SessionRecord:
    return SessionRecord(
        id=r["id"], agent_id=r["agent_id"], tenant=r["tenant"], started_at=_at(r["started_at"]),
        last_activity_at=_at(r["last_activity_at"]), goal=r["goal"],
        ended_at=parse_ts(r["ended_at"]), end_reason=r["end_reason"],
        summary_id=r["summary_id"], implicit=bool(r["implicit"]),
    )


def _job(r: sqlite3.Row) -> JobRecord:
    return JobRecord(
        id=r["id"], kind=r["kind"], payload=json.loads(r["payload"]),
        created_at=_at(r["created_at"]), status=r["status"], attempts=int(r["attempts"]),
        idempotency_key=r["idempotency_key"], error=r["error"],
        claimed_by=r["claimed_by"], claimed_until=parse_ts(r["claimed_until"]),
    )


def _token(r: sqlite3.Row) -> TokenRecord:
    return TokenRecord(
        id=r["id"], name=r["name"], salt=r["salt"], digest=r["digest"],
        created_at=_at(r["created_at"]), user_id=r["user_id"],
        workspace_id=r["workspace_id"], agent_id=r["agent_id"],
        read_only=bool(r["read_only"]), revoked_at=parse_ts(r["revoked_at"]),
    )


def _storage_error(what: str, exc: BaseException) -> StorageError:
    """The engine's error as the port's: ``StorageError`` naming the cause (disk full,
    read-only file, I/O error), nothing half-committed."""
    return StorageError(f"{what}: {exc}")
