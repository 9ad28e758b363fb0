"""The storage contract suite against PostgreSQL (a fresh schema per test).

Runs on the server of ``TULVING_TEST_PG_URL`` or a throwaway one; skips loudly when no
server can be had, and fails instead when ``CI`` is set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row

from contract_tests.governance import BackChannel
from contract_tests.storage import StorageContract
from tulving.ports.storage import Storage
from tulving.testing.postgres import drop_schema, new_schema_name, require_server

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="session")
def pg_url() -> str:
    return require_server()


class PostgresBackChannel:
    """A separate psycopg connection reading the schema's tables directly (every row of
    every table, rendered as text), behind the adapter's back."""

    def __init__(self, url: str, schema: str) -> None:
        self.url, self.schema = url, schema

    def entry_rows(self) -> Sequence[Mapping[str, Any]]:
        with psycopg.connect(self.url, row_factory=dict_row) as conn:
            query = sql.SQL("SELECT id, partition, content FROM {}.entries")
            return conn.execute(query.format(sql.Identifier(self.schema))).fetchall()

    def holds_text(self, text: str) -> bool:
        with psycopg.connect(self.url) as conn:
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                    (self.schema,),
                )
            ]
            for table in tables:
                query = sql.SQL(
                    "SELECT EXISTS (SELECT 1 FROM {}.{} AS t WHERE strpos(t::text, %s) > 0)"
                )
                row = conn.execute(
                    query.format(sql.Identifier(self.schema), sql.Identifier(table)), (text,)
                ).fetchone()
                if row and row[0]:
                    return True
        return False


class TestPostgresStorage(StorageContract):
    @pytest.fixture
    def make_storage(self, pg_url: str) -> Iterator[Callable[..., Storage]]:
        from tulving.adapters.storage.postgres import create
        from tulving.plugins.registry import AdapterContext

        base = new_schema_name("contract")
        made: list[str] = []

        def make(name: str = "default") -> Storage:
            schema = f"{base}_{name}"
            made.append(schema)
            store: Storage = create(AdapterContext(location=pg_url), schema=schema, max_size=6)
            return store

        yield make
        for schema in set(made):
            drop_schema(pg_url, schema)

    @pytest.fixture
    def back_channel(self, storage: Storage, pg_url: str) -> BackChannel:
        schema = getattr(storage, "schema", None)
        assert schema
        return PostgresBackChannel(pg_url, schema)
