"""The governance contract (back-channel tenancy checks) against PostgreSQL.

Kept beside ``test_storage_postgres.py`` rather than inside it so the back channel (a
second psycopg connection on the adapter's schema) stays with the governance tests.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from contract_tests.builders import Clockwork
from contract_tests.governance import BackChannel, GovernanceContract
from tulving.ports.storage import Storage
from tulving.testing.postgres import drop_schema, new_schema_name, require_server

from .back_channels import PostgresBackChannel

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="session")
def pg_url() -> str:
    return require_server()


class TestPostgresGovernance(GovernanceContract):
    @pytest.fixture
    def schema(self, pg_url: str) -> Iterator[str]:
        name = new_schema_name("governance")
        yield name
        drop_schema(pg_url, name)

    @pytest.fixture
    def storage(self, pg_url: str, schema: str) -> Iterator[Storage]:
        from tulving.adapters.storage.postgres import create
        from tulving.plugins.registry import AdapterContext

        store: Storage = create(AdapterContext(location=pg_url), schema=schema, max_size=4)
        store.open()
        yield store
        store.close()

    @pytest.fixture
    def clock(self) -> Clockwork:
        return Clockwork()

    @pytest.fixture
    def back_channel(self, storage: Storage, pg_url: str, schema: str) -> BackChannel:
        return PostgresBackChannel(pg_url, schema)
