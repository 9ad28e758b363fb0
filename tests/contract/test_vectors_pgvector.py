"""The vector index contract suite against pgvector (a fresh schema per index name).

Runs on the server of ``TULVING_TEST_PG_URL`` or a throwaway one; skips loudly when no
server can be had, and fails instead when ``CI`` is set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from contract_tests.vectors import VectorIndexContract
from tulving.testing.postgres import drop_schema, new_schema_name, require_server

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="session")
def pg_url() -> str:
    return require_server()


class TestPgVectorIndex(VectorIndexContract):
    # The vectors live in PostgreSQL and survive a reopen without persist(), which the
    # persistent checks (written for on-disk caches) would read as partial state.
    persistent = False

    @pytest.fixture
    def make_index(self, pg_url: str) -> Iterator[Callable[..., Any]]:
        from tulving.adapters.storage.postgres import create as create_storage
        from tulving.adapters.vectors.pgvector import create as create_index
        from tulving.plugins.registry import AdapterContext

        base = new_schema_name("vec")
        stores: list[Any] = []

        def make(dimension: int, name: str = "default") -> Any:
            store = create_storage(AdapterContext(location=pg_url), schema=f"{base}_{name}")
            store.open()
            stores.append(store)
            index = create_index(AdapterContext(location=pg_url, storage=store))
            index.open(dimension)
            return index

        yield make
        for store in stores:
            store.close()
        for schema in {s.schema for s in stores}:
            drop_schema(pg_url, schema)

    @pytest.fixture
    def store_vector(self) -> Callable[[Any, str, Any], None]:
        """Writes an entry with its vector through the PostgreSQL store the index lives in
        (what ``Memory.store`` does), never through the index."""
        from contract_tests.builders import Clockwork, make_entry

        clock = Clockwork()

        def write(index: Any, entry_id: str, vector: Any) -> None:
            import attrs

            entry = attrs.evolve(make_entry(clock, f"stored {entry_id}"), id=entry_id)
            index._storage.write(entry, vector)

        return write

