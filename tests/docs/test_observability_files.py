"""The operations page's Grafana dashboard and Prometheus alerts (issue 43): valid JSON
and YAML of the right shape, and every metric they query is one the server exposes (read
from a real scrape of an app with traffic, not from a list kept by hand)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")
yaml = pytest.importorskip("yaml")

from fastapi.testclient import TestClient  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from tulving import Memory  # noqa: E402
from tulving.interfaces.auth.bearer_tokens import registry_for  # noqa: E402
from tulving.interfaces.http import create_app  # noqa: E402

DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations"
METRIC = re.compile(r"\btulving_[a-z_]+")
#: Exposed only where they apply: over PostgreSQL (pool), with --metrics-tenant-label, or
#: once a write queued background work (a series per kind and state).
CONDITIONAL = {"tulving_pg_pool_connections", "tulving_pg_pool_connections_idle",
               "tulving_pg_pool_connections_max", "tulving_pg_pool_requests_waiting",
               "tulving_tenant_active_entries", "tulving_tenant_operations_total",
               "tulving_enrichment_tasks"}


@pytest.fixture(scope="module")
def exposed() -> set[str]:
    memory = Memory(None, agent_id="root", storage="memory", embedder="hashing",
                    vectors="exact")
    memory.startup()
    registry = registry_for(memory)
    _r, token = registry.create("a", user_id="u1", workspace_id=None, agent_id=None,
                                read_only=False)
    with TestClient(create_app(memory, registry=registry), client=("127.0.0.1", 1)) as c:
        h = {"Authorization": f"Bearer {token}"}
        c.post("/v1/store", headers=h, json={"content": "a note", "type": "FACT"})
        c.post("/v1/curate", headers=h, json={"query": "note", "token_budget": 100})
        text = c.get("/metrics").text
    return {s.name for family in text_string_to_metric_families(text) for s in family.samples
            if not s.name.endswith("_created")}  # the client's creation-time gauges


def family(name: str) -> str:
    return re.sub(r"_(bucket|count|sum|gcount|gsum)$", "", name)


def names_in(text: str) -> set[str]:
    return set(METRIC.findall(text))


def test_the_dashboard_is_grafana_json_over_exposed_metrics(exposed: set[str]) -> None:
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())
    assert dashboard["title"] and dashboard["uid"]
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels) >= 10
    for panel in panels:
        assert {"h", "w", "x", "y"} <= set(panel["gridPos"])
        assert panel["targets"] and all(t["expr"] and t["refId"] for t in panel["targets"])
    used = names_in(" ".join(t["expr"] for p in panels for t in p["targets"]))
    assert used - exposed - CONDITIONAL == set()
    # every family the server exposes unconditionally has a panel
    assert {family(n) for n in exposed} - {family(n) for n in used} == set()


def test_the_alerts_are_prometheus_rules_over_exposed_metrics(exposed: set[str]) -> None:
    rules = yaml.safe_load((DOCS / "prometheus-alerts.yml").read_text())
    alerts = [r for group in rules["groups"] for r in group["rules"]]
    names = {r["alert"] for r in alerts}
    assert {"TulvingServerErrors", "TulvingWriteLockWait", "TulvingQuarantineGrowing"} <= names
    for rule in alerts:
        assert rule["expr"].strip() and rule["annotations"]["summary"]
    used = names_in(" ".join(r["expr"] for r in alerts))
    assert used - exposed - CONDITIONAL == set()


def test_the_page_documents_every_exposed_metric(exposed: set[str]) -> None:
    page = (DOCS / "observability.md").read_text()
    assert {family(n) for n in exposed} - names_in(page) == set()


def test_the_extras_the_page_installs_exist() -> None:
    page = (DOCS / "observability.md").read_text()
    named = {e for m in re.findall(r'pip install "tulving-memory\[([^\]]+)\]"', page)
             for e in m.split(",")}
    pyproject = tomllib.loads((DOCS.parents[1] / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    assert {"otel-export", "metrics"} <= named <= set(extras)
    assert extras["otel"] == [d for d in extras["otel"] if d.startswith("opentelemetry-api")]
    assert all(f"{e}" in extras["all"][0] for e in ("otel", "otel-export", "metrics"))
