"""``/metrics``' door and the store's figures, on an app in this process: who may scrape,
sync deltas pending and quarantined, jobs pending, per-tenant series only when asked,
and a failing request logged with its error's type but never its message."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

pytest.importorskip("prometheus_client")

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from tulving import ConfigError, Memory
from tulving.application.plumbing.telemetry import tenant_hash
from tulving.domain.identity import tenant_key
from tulving.domain.records import JobRecord
from tulving.domain.sync_records import DELTA_QUARANTINED
from tulving.interfaces.auth.bearer_tokens import registry_for
from tulving.interfaces.http import create_app
from tulving.interfaces.http.observability import ACCESS_LOGGER, ObservabilityOptions

LOCAL = ("127.0.0.1", 50000)


@pytest.fixture
def make_app() -> Iterator[Callable[..., tuple[TestClient, str, Memory]]]:
    clients: list[TestClient] = []

    def make(client: tuple[str, int] = LOCAL, **options: Any) -> tuple[TestClient, str, Memory]:
        memory = Memory(None, agent_id="root", storage="memory", embedder="hashing",
                        vectors="exact")
        memory.startup()
        registry = registry_for(memory)
        _record, token = registry.create("alice", user_id="u1", workspace_id=None,
                                         agent_id=None, read_only=False)
        options.setdefault("census_interval", 0.0)
        app = create_app(memory, registry=registry,
                         observability=ObservabilityOptions(**options))
        test_client = TestClient(app, client=client, raise_server_exceptions=False)
        test_client.__enter__()
        clients.append(test_client)
        return test_client, token, memory

    yield make
    for c in clients:
        c.__exit__(None, None, None)


def values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_without_a_token_only_this_machine_may_scrape(make_app: Callable[..., Any]) -> None:
    local, _token, _m = make_app()
    assert local.get("/metrics").status_code == 200
    relayed = local.get("/metrics", headers={"X-Forwarded-For": "203.0.113.9"})
    assert relayed.status_code == 403
    assert "TULVING_METRICS_TOKEN" in relayed.json()["error"]["message"]
    remote, _token, _m = make_app(client=("203.0.113.9", 40000))
    assert remote.get("/metrics").status_code == 403


def test_with_a_token_every_scraper_must_send_it(make_app: Callable[..., Any]) -> None:
    remote, token, _m = make_app(client=("203.0.113.9", 40000), metrics_token="s3cret-scrape")
    assert remote.get("/metrics").status_code == 401
    assert remote.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401
    # a memory token is not the metrics token
    assert remote.get("/metrics", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    ok = remote.get("/metrics", headers={"Authorization": "Bearer s3cret-scrape"})
    assert ok.status_code == 200 and "tulving_entries" in ok.text


def test_no_metrics_route_when_switched_off(make_app: Callable[..., Any]) -> None:
    client, _token, _m = make_app(metrics=False)
    assert client.get("/metrics").status_code == 404
    assert client.get("/v1/health").headers["x-request-id"]


def test_an_unknown_access_log_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        ObservabilityOptions(access_log="verbose")


def test_store_figures_deltas_jobs_and_tenant_labels(make_app: Callable[..., Any]) -> None:
    client, token, memory = make_app(tenant_labels=True)
    h = {"Authorization": f"Bearer {token}"}
    for i in range(4):
        assert client.post("/v1/store", headers=h,
                           json={"content": f"note {i}", "type": "FACT"}).status_code == 200
    storage = memory.ctx.storage
    tenant = tenant_key("u1", None)
    at = datetime(2026, 11, 27, tzinfo=UTC)
    storage.sync_append(tenant, "ab", b"one", e2e=False, at=at)
    storage.sync_append(tenant, "ab", b"two", e2e=False, at=at)
    with storage.sync_merger(tenant):
        storage.sync_settle(tenant, 1, DELTA_QUARANTINED, "a bad delta")
    storage.enqueue(JobRecord(id="job-1", kind="remember", payload={}, created_at=at))
    v = values(client.get("/metrics").text)
    assert v[("tulving_sync_deltas", (("state", "pending"),))] == 1
    assert v[("tulving_sync_deltas", (("state", "quarantined"),))] == 1
    assert v[("tulving_jobs_pending", ())] == 1
    assert v[("tulving_entries", ())] == 4
    assert v[("tulving_tenant_active_entries", (("tenant", tenant_hash(tenant)),))] == 4
    assert v[("tulving_tenant_operations_total",
              (("operation", "store"), ("tenant", tenant_hash(tenant))))] == 4


def test_the_store_figures_are_read_at_most_once_per_interval(
        make_app: Callable[..., Any]) -> None:
    client, token, _memory = make_app(census_interval=3600.0)
    h = {"Authorization": f"Bearer {token}"}
    assert values(client.get("/metrics").text)[("tulving_entries", ())] == 0
    client.post("/v1/store", headers=h, json={"content": "later", "type": "FACT"})
    # the cached figure stands until the interval passes; the request counters do not wait
    v = values(client.get("/metrics").text)
    assert v[("tulving_entries", ())] == 0
    assert v[("tulving_http_requests_total",
              (("method", "POST"), ("route", "/v1/store"), ("status", "200")))] == 1


def test_a_failure_is_logged_by_type_counted_as_5xx_and_quotes_nothing(
        make_app: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    client, token, _memory = make_app()  # access lines of failures only, by default

    def broken(self: Memory) -> dict[str, Any]:
        raise RuntimeError("the memory 'quokkasaurus' broke")

    monkeypatch.setattr(Memory, "stats", broken)
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        assert client.get("/v1/keys", headers={"Authorization": f"Bearer {token}"}
                          ).status_code == 200
        r = client.get("/v1/stats", headers={"Authorization": f"Bearer {token}",
                                             "X-Request-ID": "bad id with spaces"})
    assert r.status_code == 500
    (line,) = [json.loads(rec.getMessage()) for rec in caplog.records
               if rec.name == ACCESS_LOGGER]
    assert line["status"] == 500 and line["level"] == "error"
    assert line["error"] == "RuntimeError" and line["route"] == "/v1/stats"
    assert line["request_id"] != "bad id with spaces" and len(line["request_id"]) == 32
    # (the server's error log keeps the traceback, message included: errors.py)
    assert not any("quokkasaurus" in rec.getMessage() for rec in caplog.records
                   if rec.name == ACCESS_LOGGER)
    v = values(client.get("/metrics").text)
    assert v[("tulving_http_requests_total",
              (("method", "GET"), ("route", "/v1/stats"), ("status", "500")))] == 1


def test_a_refused_operation_is_logged_with_its_error_type(
        make_app: Callable[..., Any], caplog: pytest.LogCaptureFixture) -> None:
    client, token, _memory = make_app(access_log="all")
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        r = client.get("/v1/memory/no/such/key", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 404
    (line,) = [json.loads(rec.getMessage()) for rec in caplog.records
               if rec.name == ACCESS_LOGGER]
    assert line["status"] == 404 and line["level"] == "warning"  # a 4xx (access-log levels)
    assert line["route"] == "/v1/memory/{memory_id}"
    assert line["error"] == r.json()["error"]["type"] and line["operation"] == "get"
    assert "no/such/key" not in caplog.text


def test_labels_stay_bounded_whatever_is_asked(make_app: Callable[..., Any]) -> None:
    client, _token, _memory = make_app()
    for i in range(5):
        client.request("BREW", f"/v1/pot-{i}")
        client.get(f"/v1/memory-{i}/nothing/here")
    v = values(client.get("/metrics").text)
    routes = {dict(k[1]).get("route") for k in v if k[0] == "tulving_http_requests_total"}
    methods = {dict(k[1]).get("method") for k in v if k[0] == "tulving_http_requests_total"}
    assert routes <= {"unmatched", "/metrics"} and methods <= {"_OTHER", "GET"}
    assert v[("tulving_http_requests_total",
              (("method", "_OTHER"), ("route", "unmatched"), ("status", "404")))] == 5
