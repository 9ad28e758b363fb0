"""Back channels of the built-in storage adapters: the raw store, read behind their back."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tulving.adapters.storage.memory import InMemoryStorage


class SQLiteBackChannel:
    """sqlite3 on the file (a second connection), plus the raw bytes of the db and WAL."""

    def __init__(self, path: str) -> None:
        self.path = path

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        return conn

    def entry_rows(self) -> Sequence[Mapping[str, Any]]:
        conn = self._connect()
        try:
            return [dict(r) for r in conn.execute("SELECT * FROM entries")]
        finally:
            conn.close()

    def holds_text(self, text: str) -> bool:
        needle = text.encode("utf-8")
        for suffix in ("", "-wal"):
            file = Path(self.path + suffix)
            if file.exists() and needle in file.read_bytes():
                return True
        conn = self._connect()
        try:
            tables = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            ]
            for table in tables:
                for row in conn.execute(f'SELECT * FROM "{table}"'):
                    if any(text in str(v) for v in tuple(row)):
                        return True
        finally:
            conn.close()
        return False


class InMemoryBackChannel:
    """The adapter's dicts, read directly."""

    def __init__(self, storage: InMemoryStorage) -> None:
        self.storage = storage

    def entry_rows(self) -> Sequence[Mapping[str, Any]]:
        return [
            {"id": e.id, "partition": e.partition, "content": e.content}
            for e in self.storage._entries.values()
        ]

    def holds_text(self, text: str) -> bool:
        return text in repr(vars(self.storage))


class PostgresBackChannel:
    """A separate psycopg connection reading the adapter's schema directly."""

    def __init__(self, url: str, schema: str) -> None:
        self.url = url
        self.schema = schema

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            return list(conn.execute(sql, params).fetchall())

    def entry_rows(self) -> Sequence[Mapping[str, Any]]:
        rows = self._rows(f'SELECT id, partition, content FROM "{self.schema}".entries')
        return [{"id": r[0], "partition": r[1], "content": r[2]} for r in rows]

    def holds_text(self, text: str) -> bool:
        tables = self._rows(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (self.schema,),
        )
        for (table,) in tables:
            found = self._rows(
                f'SELECT 1 FROM "{self.schema}"."{table}" t WHERE t::text LIKE %s LIMIT 1',
                ("%" + text.replace("%", r"\%").replace("_", r"\_") + "%",),
            )
            if found:
                return True
        return False
