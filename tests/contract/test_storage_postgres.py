"""The storage contract suite against PostgreSQL (a fresh schema per test).

Runs on the server of ``TULVING_TEST_PG_URL`` or a throwaway one; skips loudly when no
server can be had, and fails instead when ``CI`` is set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from contract_tests.storage import StorageContract
from tulving.ports.storage import Storage
from tulving.testing.postgres import drop_schema, new_schema_name, require_server

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="session")
def pg_url() -> str:
    return require_server()


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
