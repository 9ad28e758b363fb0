"""The first bytes of a store file (plain header or SQLCipher salt), read through SQLite.

Why never with ``open()``: POSIX advisory locks belong to the process, and closing *any*
descriptor of a file drops every lock the process holds on it. SQLite keeps its own
descriptors open while one of its connections holds a lock (it knows its own), but a
descriptor opened beside it is invisible to it. Reading the head with ``open()`` /
``close()`` while a connection of this process held the file (an application's own
``sqlite3`` connection opened before the Memory, a dashboard, a test's back channel)
dropped that connection's SHARED lock; SQLite still believed it held it, so the writer
that opened next ran without one, another process's connection took its EXCLUSIVE lock
on close, decided it was the last user, checkpointed and deleted the WAL and the shared
memory under the live writer, and the store read "database disk image is malformed"
(pages of ``sessions`` read as ``entries``).

So the head is asked of the SQLite library the store itself will use (the stdlib for a
plain store, SQLCipher for an encrypted one): its descriptors are closed only once no
connection of that library holds a lock. A stdlib connection opens a plain database or
answers "file is not a database"; SQLCipher, with any raw key, answers ``PRAGMA
cipher_salt`` with the file's first 16 bytes. Both probes open the file read-only
(``mode=ro``), so they can never checkpoint, delete or write anything.

A store this process already holds answers from :func:`hold_head`'s record, without
another connection: a second probe through the *other* library (a key tried on a plain
store held open) would be a second copy of SQLite on the file, whose closes drop the
first copy's locks in just the same way.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import urllib.parse
from typing import Any

PLAIN_HEADER = b"SQLite format 3\x00"
#: What a plain probe answers for a file the stdlib cannot read as a database.
NOT_PLAIN = b"?"
#: Any raw key lets SQLCipher read the salt; it is never used to read a page.
_PROBE_KEY = "x'" + "00" * 32 + "'"

#: The first bytes of the store files this process holds connections to, by (device,
#: inode), with how many stores hold each.
_held: dict[tuple[int, int], tuple[int, bytes]] = {}
_held_lock = threading.Lock()


def read_only_uri(path: str) -> str:
    """``file:`` URI opening ``path`` read-only at the file level (a connection so opened
    never checkpoints on close, so never deletes the WAL under another connection)."""
    return "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"


def _file_id(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def file_head(path: str, driver: Any) -> bytes:
    """The file's first bytes as ``driver`` (``sqlite3`` or SQLCipher's ``dbapi2``) sees
    them: empty when there is no file yet or it is empty, :data:`PLAIN_HEADER` for a
    plain database (or one the stdlib could not probe for another reason than its
    format), the salt of an encrypted one, :data:`NOT_PLAIN` when the stdlib cannot
    read it as a database."""
    file_id = _file_id(path)
    if file_id is None:
        return b""
    with _held_lock:
        held = _held.get(file_id)
    if held is not None:
        return held[1]
    try:
        if os.path.getsize(path) == 0:
            return b""
    except FileNotFoundError:
        return b""
    conn = driver.connect(read_only_uri(path), uri=True, isolation_level=None)
    try:
        if driver is sqlite3:
            try:
                conn.execute("PRAGMA schema_version").fetchone()
            except sqlite3.DatabaseError as exc:
                # anything but "not a database" (a hot journal a read-only probe cannot
                # roll back, a busy recovery) is the writer connection's to meet
                if getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB":
                    return NOT_PLAIN
            return PLAIN_HEADER
        conn.execute("PRAGMA cipher_log_level = NONE")
        conn.execute(f'PRAGMA key = "{_PROBE_KEY}"')
        row = conn.execute("PRAGMA cipher_salt").fetchone()
        return bytes.fromhex(row[0]) if row and row[0] else b""
    finally:
        conn.close()


def hold_head(path: str, head: bytes) -> tuple[int, int] | None:
    """Record ``head`` as the file's first bytes while a store of this process holds a
    connection to it; the token goes back to :func:`release_head` when it closes."""
    file_id = _file_id(path)
    if file_id is not None:
        with _held_lock:
            count, _ = _held.get(file_id, (0, head))
            _held[file_id] = (count + 1, head)
    return file_id


def release_head(file_id: tuple[int, int] | None) -> None:
    if file_id is None:
        return
    with _held_lock:
        count, head = _held.get(file_id, (1, b""))
        if count <= 1:
            _held.pop(file_id, None)
        else:
            _held[file_id] = (count - 1, head)
