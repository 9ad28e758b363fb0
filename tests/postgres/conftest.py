"""PostgreSQL fixtures: one server per session, one fresh schema per test.

The server is ``TULVING_TEST_PG_URL`` or a throwaway one started by ``.ci/postgres.sh``;
without one the tests skip loudly, except in CI (``CI`` set) where they fail.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tulving.testing.postgres import drop_schema, new_schema_name, require_server


@pytest.fixture(scope="session")
def pg_url() -> str:
    return require_server()


@pytest.fixture
def pg_schema(pg_url: str) -> Iterator[str]:
    """A schema name of this test's own; dropped (with everything in it) afterwards."""
    schema = new_schema_name("pgtest")
    yield schema
    drop_schema(pg_url, schema)


@pytest.fixture
def make_pg_storage(pg_url: str, pg_schema: str) -> Iterator[Callable[..., Any]]:
    """Opened PostgreSQL stores over this test's schema (several share its data)."""
    from tulving.adapters.storage.postgres import create
    from tulving.plugins.registry import AdapterContext

    opened: list[Any] = []

    def make(**options: Any) -> Any:
        options.setdefault("schema", pg_schema)
        store = create(AdapterContext(location=pg_url), **options)
        store.open()
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()
