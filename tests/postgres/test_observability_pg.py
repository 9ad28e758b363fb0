"""The memory server's metrics over PostgreSQL: the connection pool's use and the census
of entries per tenant come from the store the replicas share; the engines' spans name
PostgreSQL and pgvector."""

from __future__ import annotations

import pytest

pytest.importorskip("prometheus_client")
pytest.importorskip("opentelemetry.sdk")

from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from prometheus_client.parser import text_string_to_metric_families

from tulving import Memory
from tulving.application.plumbing import telemetry
from tulving.interfaces.auth.bearer_tokens import registry_for
from tulving.interfaces.http import create_app
from tulving.interfaces.http.observability import ObservabilityOptions

pytestmark = pytest.mark.postgres


def test_pool_and_census_over_postgres(pg_url: str, pg_schema: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(tracer_provider=provider)
    try:
        memory = Memory(pg_url, agent_id="root", embedder="hashing",
                        options={"storage": {"schema": pg_schema}})
        memory.startup()
        registry = registry_for(memory)
        _r, token = registry.create("a", user_id="u1", workspace_id="w1", agent_id=None,
                                    read_only=False)
        app = create_app(memory, registry=registry,
                         observability=ObservabilityOptions(census_interval=0.0))
        with TestClient(app, client=("127.0.0.1", 5000)) as client:
            h = {"Authorization": f"Bearer {token}"}
            for i in range(3):
                assert client.post("/v1/store", headers=h, json={
                    "content": f"replica note {i}", "type": "FACT"}).status_code == 200
            assert client.post("/v1/search", headers=h,
                               json={"query": "replica note"}).status_code == 200
            text = client.get("/metrics").text
    finally:
        telemetry.configure(tracer_provider=None)
        provider.shutdown()
    v = {(s.name, tuple(sorted(s.labels.items()))): s.value
         for family in text_string_to_metric_families(text) for s in family.samples}
    assert v[("tulving_entries", ())] == 3
    assert v[("tulving_tenants", ())] == 1
    assert v[("tulving_pg_pool_connections", ())] >= 1
    assert v[("tulving_pg_pool_connections_max", ())] >= v[("tulving_pg_pool_connections", ())]
    assert v[("tulving_pg_pool_requests_waiting", ())] == 0
    names = {s.name for s in exporter.get_finished_spans()}
    assert "write_many postgres" in names and "search_memory search" in names
    systems = {s.attributes.get("db.system.name") for s in exporter.get_finished_spans()}
    assert "postgresql" in systems
    assert any(n.startswith("vector query pgvector") for n in names)
