"""The SQLite store's read journal (``ports.storage.ReadJournal``): ``<store>.reads``.

Why a file of its own: SQLite has one write lock per database file, so a read that
appended its audit record (or its access counts) to the store waited for whatever write
held that lock (a remember of 100,000 characters, an import of 10,000 entries). The
journal is a second SQLite database beside the store, written only by the store's
writer process (the writer lock), in WAL mode with ``synchronous = NORMAL`` like the
store: a journaled read is in its WAL when ``journal_read`` returns, so it survives the
process being killed (a power loss may lose the last ones, as it may the store's own last
commits). Its only contention is between reads of this process (one insert each, about
20 us). It is encrypted with the store's key when the store is (SQLCipher, a salt of its
own), erased text never reaches it (it holds ids and hashes only, as the audit log does),
and it is removed when the store closes with nothing left to settle.

Exactly once: a writing transaction of the store settles journaled reads after the
position recorded in the store's ``meta`` (``reads_settled``: the journal's id and the
last settled position), writes their audit records and access counts, and moves that
position in the same transaction; the settled rows are deleted from the journal only
once it has committed. A crash before the commit settles nothing; after it, the rows left
in the journal are at or below the recorded position and are skipped and deleted.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Sequence
from contextlib import suppress
from datetime import datetime
from typing import Any

from tulving.adapters.storage.journaled_reads import Settlement, drafts_json
from tulving.adapters.storage.rows import parse_ts, ts
from tulving.adapters.storage.sqlite.connection import JOURNAL_SUFFIX
from tulving.adapters.storage.sqlite.encryption import ERRORS, Keying
from tulving.adapters.storage.sqlite.entries import SQLiteEntries
from tulving.adapters.storage.sqlite.records import SQLiteRecords
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.errors import StorageError
from tulving.domain.records import AuditDraft

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS reads (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " at TEXT NOT NULL, drafts TEXT NOT NULL, touched TEXT NOT NULL)",
)
_MARK = "reads_settled"


class JournalFile:
    """One connection to the journal, shared by the threads of the writer process."""

    def __init__(self, store_path: str, key: EncryptionKey | None, salt: bytes) -> None:
        """``salt``: the store's (an encrypted journal keys its pages with a subkey of the
        store's key under it)."""
        self.path = store_path if store_path == ":memory:" else store_path + JOURNAL_SUFFIX
        self._keying = Keying(self.path, key, label="read journal page key",
                              salt=salt if key is not None else None)
        self._conn: Any = None
        self.id = ""
        self.lock = threading.Lock()

    def exists(self) -> bool:
        return self._conn is not None or (self.path != ":memory:"
                                          and os.path.exists(self.path))

    def connection(self) -> Any:
        """(Lock held.) The journal, opened (and created) on first use."""
        if self._conn is None:
            self._keying.check_file()
            conn = self._keying.connect(isolation_level=None, check_same_thread=False,
                                        timeout=30)
            try:
                for pragma in ("busy_timeout = 30000", "journal_mode = WAL",
                               "synchronous = NORMAL", "secure_delete = ON",
                               *self._keying.pragmas):
                    conn.execute(f"PRAGMA {pragma}")
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute("INSERT OR IGNORE INTO meta(name, value) VALUES ('id', ?)",
                             (uuid.uuid4().hex,))
                self.id = str(conn.execute(
                    "SELECT value FROM meta WHERE name = 'id'").fetchone()[0])
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def after(self, through: int, limit: int | None) -> list[Any]:
        with self.lock:
            return list(self.connection().execute(
                "SELECT seq, at, drafts, touched FROM reads WHERE seq > ? ORDER BY seq"
                " LIMIT ?", (through, -1 if limit is None else int(limit))))

    def count_after(self, through: int) -> int:
        with self.lock:
            return int(self.connection().execute(
                "SELECT count(*) FROM reads WHERE seq > ?", (through,)).fetchone()[0])

    def drop_through(self, through: int) -> None:
        with self.lock, suppress(*ERRORS):  # left for the next settle to skip and drop
            self.connection().execute("DELETE FROM reads WHERE seq <= ?", (through,))

    def close(self, *, remove: bool) -> None:
        with self.lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if remove and self.path != ":memory:":
                with suppress(FileNotFoundError):
                    os.unlink(self.path)


class SQLiteReadJournal(SQLiteRecords, SQLiteEntries):
    _read_journal: JournalFile | None = None

    def _journal(self) -> JournalFile:
        if self._read_journal is None:
            self._read_journal = JournalFile(self.path, self._keying.key,
                                             self._keying.written_head())
        return self._read_journal

    def _settled_through(self, journal: JournalFile) -> int:
        """The last settled position of ``journal`` as this thread sees the store."""
        row = self._fetch("SELECT value FROM meta WHERE name = ?", (_MARK,))
        if not row:
            return 0
        journal_id, _, seq = str(row[0][0]).partition(" ")
        return int(seq) if journal_id == journal.id else 0

    def _opened_journal(self) -> JournalFile:
        """The journal, open, with what an earlier process settled but could not delete
        (it died between its commit and the delete) deleted now."""
        journal = self._journal()
        if not journal.id:
            with journal.lock:
                journal.connection()
            journal.drop_through(self._settled_through(journal))
        return journal

    def journal_read(self, drafts: Sequence[AuditDraft], touched: Sequence[str],
                     at: datetime) -> None:
        self._refuse_write()
        if not drafts and not touched:
            return
        self._c  # noqa: B018  (raises if the store is closed)
        try:  # a read whose records cannot be kept fails: no read goes unaudited
            journal = self._opened_journal()
            with journal.lock:
                journal.connection().execute(
                    "INSERT INTO reads(at, drafts, touched) VALUES (?, ?, ?)",
                    (ts(at), drafts_json(drafts), json.dumps(list(touched))))
        except ERRORS as exc:
            raise StorageError(f"the read journal {self._journal().path} refused a "
                               f"read's records: {exc}") from exc

    #: One writer process: any write may settle journaled reads (keeping the audit log
    #: in call order), with no lock order to break.
    settle_with_writes = True

    def settle_reads(self, limit: int | None = None) -> int:
        self._refuse_write()
        try:
            return self._settle(limit)
        except ERRORS as exc:
            raise StorageError(f"settling journaled reads failed (they stay journaled): "
                               f"{exc}") from exc

    def _settle(self, limit: int | None) -> int:
        journal = self._journal()
        if not journal.exists():
            return 0
        journal = self._opened_journal()
        with self.transaction():  # the caller's, or one of its own
            rows = journal.after(self._settled_through(journal), limit)
            if not rows:
                return 0
            batch = Settlement()
            for _, at, drafts, touched in rows:
                moment = parse_ts(at)
                assert moment is not None
                batch.add(drafts, json.loads(touched), moment)
            if batch.drafts:  # the audit first: tenants' locks before rows, as writes
                self.append_audit(batch.drafts)
            self._touch_counted(batch.touched)
            last = int(rows[-1][0])
            self._c.execute("INSERT OR REPLACE INTO meta(name, value) VALUES (?, ?)",
                            (_MARK, f"{journal.id} {last}"))
            self._after_commit.append(lambda: journal.drop_through(last))
        return batch.reads

    def journaled_reads(self) -> int:
        journal = self._journal()
        if not journal.exists():
            return 0
        journal = self._opened_journal()
        return journal.count_after(self._settled_through(journal))

    def close(self) -> None:
        journal, self._read_journal = self._read_journal, None
        if journal is not None:
            remove = False
            if journal.exists() and self._conn is not None and not self.read_only:
                with suppress(*ERRORS):
                    remove = journal.count_after(self._settled_through(journal)) == 0
            journal.close(remove=remove)
        super().close()
