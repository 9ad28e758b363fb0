"""A real ``tulving serve`` watched from outside (issue 43): a client's trace continues
through the server into the library's spans and their engines, as a real OTLP/HTTP
receiver process decodes what the SDK's exporter sends; ``/metrics`` parsed with the
Prometheus client's own parser before and after traffic, against what was sent; one
JSON access line per request carrying the same trace; and nothing of a query, a memory
or a key in any of the three."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.proto")
pytest.importorskip("prometheus_client")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace.propagation.tracecontext import (
    TraceContextTextMapPropagator,
)
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import FAST, ROOT, clean_env
from tests.http.conftest import cli, free_port, wait_healthy
from tulving.application.plumbing.telemetry import tenant_hash
from tulving.domain.identity import tenant_key

SECRET_WORD = "quokkasaurus"  # in a stored memory
SECRET_QUERY = "platypodium"  # in a query
SECRET_KEY = "vault/nebulosa"  # a key, read back by URL
TOKEN_SHAPE = "ghp_" + "Zq8" * 12


class Watched:
    def __init__(self, url: str, token: str, proc: subprocess.Popen[bytes], log: Path,
                 spans: Path, receiver: subprocess.Popen[str]) -> None:
        self.url, self.token, self.proc, self.log = url, token, proc, log
        self.spans_file, self.receiver = spans, receiver

    def headers(self, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", **extra}

    def scrape(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        response = httpx.get(f"{self.url}/metrics", timeout=10)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/plain")
        self.last_scrape = response.text
        samples = {}
        for family in text_string_to_metric_families(response.text):
            for s in family.samples:
                samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return samples

    def spans(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.spans_file.read_text().splitlines()]

    def access_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()
                if line.startswith("{")]


def start_receiver(folder: Path) -> tuple[subprocess.Popen[str], int, Path]:
    out = folder / "spans.jsonl"
    out.touch()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tulving.testing.otlp_receiver", "--port", "0",
         "--out", str(out)], stdout=subprocess.PIPE, text=True, env=clean_env(),
        cwd=str(ROOT))
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("listening on "), line
    return proc, int(line.split()[-1]), out


def start_watched(folder: Path, **env: str) -> Watched:
    """A receiver process and a server that exports its spans to it (``env`` added to
    the server's environment), with one token of user u1; the server is healthy."""
    receiver, otlp_port, spans = start_receiver(folder)
    path = folder / "server.db"
    token = json.loads(cli("serve", "token", "create", "alice", "--bind-user", "u1",
                           "--path", str(path), *FAST, "--json"))["token"]
    port = free_port()
    log = folder / "server.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tulving.interfaces.cli.main", "serve", "--path", str(path),
             *FAST, "--port", str(port), "--otlp-endpoint", f"http://127.0.0.1:{otlp_port}",
             "--metrics-refresh", "0", "--access-log", "all"],
            env=clean_env(OTEL_BSP_SCHEDULE_DELAY="100", **env),
            cwd=str(ROOT), stdout=sink, stderr=sink)
    url = f"http://127.0.0.1:{port}"
    watched = Watched(url, token, proc, log, spans, receiver)
    try:
        wait_healthy(url, proc, log.read_text, timeout=30)
    except AssertionError:
        close_watched(watched)
        raise
    return watched


def close_watched(watched: Watched) -> None:
    """SIGTERM to the server (it flushes its queued spans), then the receiver stops."""
    if watched.proc.poll() is None:
        watched.proc.send_signal(signal.SIGTERM)
        watched.proc.wait(timeout=20)
    watched.receiver.terminate()
    watched.receiver.wait(timeout=10)


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    made = start_watched(tmp_path_factory.mktemp("observed"),
                         OTEL_SERVICE_NAME="memory-test")
    try:
        yield made
    finally:
        close_watched(made)


def stop(watched: Watched) -> None:
    """SIGTERM: the server exits cleanly and flushes the spans still queued."""
    watched.proc.send_signal(signal.SIGTERM)
    assert watched.proc.wait(timeout=20) == 0


def delta(after: dict[Any, float], before: dict[Any, float], name: str,
          **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


def test_one_request_followed_by_trace_metrics_and_logs(watched: Watched) -> None:
    client_tracing = TracerProvider()
    tracer = client_tracing.get_tracer("an agent framework")
    before = watched.scrape()
    assert before[("tulving_entries", ())] == 0

    budgets, used = [120, 200], []
    with tracer.start_as_current_span("agent turn") as turn:
        carrier: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(carrier)
        h = watched.headers(**carrier, **{"X-Request-ID": "req-0001"})
        for i in range(3):
            r = httpx.post(f"{watched.url}/v1/store", headers=h, timeout=30, json={
                "content": f"the {SECRET_WORD} cache number {i} lives in redis",
                "type": "FACT", "key": SECRET_KEY if i == 0 else None})
            assert r.status_code == 200, r.text
            assert r.headers["x-request-id"] == "req-0001"
        for budget in budgets:
            r = httpx.post(f"{watched.url}/v1/curate", headers=h, timeout=30, json={
                "query": f"where is the cache {SECRET_QUERY} {TOKEN_SHAPE}",
                "token_budget": budget})
            assert r.status_code == 200, r.text
            used.append(r.json()["curated"]["token_count"])
        r = httpx.post(f"{watched.url}/v1/search", headers=h, timeout=30,
                       json={"query": f"{SECRET_QUERY} redis", "top_k": 0})
        assert r.status_code == 422  # refused by the schema: counted as what it was
        r = httpx.get(f"{watched.url}/v1/memory/{SECRET_KEY}", headers=h, timeout=30)
        assert r.status_code == 200, r.text
    client_trace = format(turn.get_span_context().trace_id, "032x")
    client_span = format(turn.get_span_context().span_id, "016x")

    after = watched.scrape()
    # --- metrics: what was sent, counted ----------------------------------------
    assert delta(after, before, "tulving_http_requests_total", method="POST",
                 route="/v1/store", status="200") == 3
    assert delta(after, before, "tulving_http_requests_total", method="POST",
                 route="/v1/curate", status="200") == 2
    assert delta(after, before, "tulving_http_requests_total", method="POST",
                 route="/v1/search", status="422") == 1
    assert delta(after, before, "tulving_http_request_duration_seconds_count",
                 method="POST", route="/v1/store", status="200") == 3
    assert delta(after, before, "tulving_operation_duration_seconds_count",
                 operation="store", outcome="ok") == 3
    assert delta(after, before, "tulving_operation_duration_seconds_count",
                 operation="curate", outcome="ok") == 2
    assert delta(after, before, "tulving_curate_budget_tokens_total") == sum(budgets)
    assert delta(after, before, "tulving_curate_used_tokens_total") == sum(used)
    assert delta(after, before, "tulving_curate_budget_used_ratio_count") == 2
    assert delta(after, before, "tulving_write_lock_wait_seconds_count") >= 3
    assert delta(after, before, "tulving_write_lock_hold_seconds_count") >= 3
    assert after[("tulving_entries", ())] == 3
    assert after[("tulving_tenants", ())] == 1
    assert after[("tulving_tenant_entries_bucket", (("le", "10.0"),))] == 1
    assert after[("tulving_jobs_pending", ())] == 0
    assert after[("tulving_sync_deltas", (("state", "quarantined"),))] == 0
    assert after[("tulving_store_read_failures", ())] == 0
    labels = {k for (_name, pairs) in after for k, _v in pairs}
    assert "tenant" not in labels  # not unless --metrics-tenant-label

    # --- logs: one JSON line per request, the client's trace in each ----------------
    lines = [line for line in watched.access_lines() if line.get("request_id") == "req-0001"]
    assert [(line["route"], line["status"]) for line in lines] == (
        [("/v1/store", 200)] * 3 + [("/v1/curate", 200)] * 2 + [("/v1/search", 422),
                                                                 ("/v1/memory/{memory_id}", 200)])
    tenant = tenant_hash(tenant_key("u1", None))
    for line in lines:
        assert line["trace_id"] == client_trace
        assert line["method"] in ("GET", "POST") and line["duration_ms"] > 0
    assert all(line["tenant"] == tenant for line in lines if line["status"] == 200)
    assert lines[0]["operation"] == "store" and lines[3]["operation"] == "curate"

    # the Python client carries the caller's trace by itself (no header written by hand)
    from tulving.client import AsyncTulvingClient, TulvingClient

    with tracer.start_as_current_span("client turn") as by_client, \
            TulvingClient(watched.url, watched.token) as memory:
        memory.recall("where is the cache", limit=3)

    async def async_turn() -> str:
        with tracer.start_as_current_span("async client turn") as span:
            async with AsyncTulvingClient(watched.url, watched.token) as memory:
                await memory.stats()
            return format(span.get_span_context().span_id, "016x")

    import anyio

    async_span = anyio.run(async_turn)

    # --- traces, as the collector decoded them ---------------------------------------
    stop(watched)
    spans = watched.spans()
    mine = [s for s in spans if s["trace_id"] == client_trace]
    servers = [s for s in mine if s["kind"] == "SERVER"]
    assert {s["name"] for s in servers} >= {"POST /v1/store", "POST /v1/curate",
                                            "GET /v1/memory/{memory_id}"}
    assert all(s["parent_span_id"] == client_span for s in servers)
    assert all(s["service"] == "memory-test" for s in mine)
    store_server = next(s for s in servers if s["name"] == "POST /v1/store")
    assert store_server["attributes"]["http.route"] == "/v1/store"
    assert store_server["attributes"]["http.response.status_code"] == 200
    by_parent: dict[str, list[dict[str, Any]]] = {}
    for s in mine:
        by_parent.setdefault(s["parent_span_id"], []).append(s)
    (operation,) = [s for s in by_parent[store_server["span_id"]]
                    if s["name"] == "update_memory store"]
    assert operation["attributes"]["gen_ai.memory.store.id"] == tenant
    engines = {s["name"] for s in by_parent[operation["span_id"]]}
    assert "write_many sqlite" in engines
    assert any(name.startswith("embeddings ") for name in engines)
    curate_server = next(s for s in servers if s["name"] == "POST /v1/curate")
    (curate,) = [s for s in by_parent[curate_server["span_id"]]
                 if s["name"] == "search_memory curate"]
    assert curate["attributes"]["tulving.curate.token_budget"] in budgets
    below = {s["attributes"].get("tulving.engine") for s in by_parent[curate["span_id"]]}
    assert {"lexical", "vector", "embedding", "packing"} <= below
    failed = next(s for s in servers if s["name"] == "POST /v1/search")
    assert failed["attributes"]["http.response.status_code"] == 422
    client_ctx = by_client.get_span_context()
    (recall,) = [s for s in spans if s["name"] == "POST /v1/recall"]
    assert recall["trace_id"] == format(client_ctx.trace_id, "032x")
    assert recall["parent_span_id"] == format(client_ctx.span_id, "016x")
    (stats,) = [s for s in spans if s["name"] == "GET /v1/stats"]
    assert stats["parent_span_id"] == async_span

    # --- nothing of a query, a memory or a key anywhere --------------------------------
    for text in (watched.spans_file.read_text(), watched.log.read_text(),
                 watched.last_scrape):
        for secret in (SECRET_WORD, SECRET_QUERY, SECRET_KEY, TOKEN_SHAPE):
            assert secret not in text
