"""What a store holds, read with plain ``sqlite3`` beside the process that serves it.

A door cannot confirm itself: "nothing was written" and "nothing was recorded" are read
here, from the SQLite file, not through the door under test (the way zarr's conformance
suite checks an adapter through a back channel).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def _rows(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    # closed at once: read-only connections left for the collector, beside the library
    # door's writer in this process, left its store malformed once another process had
    # written it (reproduced, root cause not found; see tests/doors/test_redaction.py)
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return list(db.execute(sql, args))
    finally:
        db.close()


def fingerprint(path: Path) -> tuple[Any, ...]:
    """Every entry (id, version, state) and session: changes when anything is written."""
    entries = _rows(path, "SELECT id, updated_at, archived_at, superseded_by, content_hash "
                          "FROM entries ORDER BY id")
    sessions = _rows(path, "SELECT id, ended_at FROM sessions ORDER BY id")
    return tuple(entries), tuple(sessions)


def recorded(path: Path) -> tuple[int, int, int, int]:
    """(entries, audit records, accesses counted, sessions): what a reader must not add."""
    (row,) = _rows(path, "SELECT (SELECT count(*) FROM entries), "
                         "(SELECT count(*) FROM audit_log), "
                         "(SELECT coalesce(sum(access_count), 0) FROM entries), "
                         "(SELECT count(*) FROM sessions)")
    return row[0], row[1], row[2], row[3]


def stored(path: Path, entry_id: str) -> str | None:
    """The raw content of an entry, whoever owns it (None: no such row)."""
    rows = _rows(path, "SELECT content FROM entries WHERE id = ?", entry_id)
    return str(rows[0][0]) if rows else None


def refusals(path: Path) -> list[str]:
    """The audit details of every refused access, as stored."""
    return [str(r[0]) for r in _rows(path, "SELECT details FROM audit_log "
                                           "WHERE action = 'refused'")]


def files_beside(path: Path) -> dict[str, int]:
    """Every file of the store's folder but SQLite's own WAL and shared memory, with its
    modification time: a reader must add or touch none."""
    return {p.name: p.stat().st_mtime_ns for p in path.parent.iterdir()
            if p.is_file() and not p.name.endswith(("-wal", "-shm"))}


def access_lines(log: Path, after: int = 0) -> list[dict[str, Any]]:
    """The server's access-log lines (JSON, ``event`` ``request``) written after byte
    ``after`` of its log (``log_size`` before a call): which route each request reached,
    as the server recorded it."""
    import json

    with open(log, "rb") as handle:
        handle.seek(after)
        text = handle.read().decode("utf-8", "replace")
    lines = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("event") == "request":
            lines.append(record)
    return lines


def log_size(log: Path) -> int:
    return log.stat().st_size
