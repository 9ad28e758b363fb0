"""``/metrics``: the memory server in Prometheus' text format (``prometheus_client``, the
``metrics`` extra).

Three sources. Requests, timed by the observability middleware. The library's own work,
heard as a ``telemetry`` listener: each memory operation's duration, the tokens curate
used against its budget, the write lock's wait and hold. And the store's state, read
when Prometheus scrapes (at most once per ``census_interval`` seconds, so a scrape every
few seconds costs no more): active entries and their spread over tenants, sync deltas
pending and quarantined, background jobs pending, enrichment tasks by kind and state,
the PostgreSQL pool.

Labels stay bounded: a route is its template (``/v1/memory/{memory_id}``), never
the path asked; an operation is a facade method's name; a tenant appears only as a hash
and only with ``tenant_labels`` (``tulving serve --metrics-tenant-label``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeHistogramMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from tulving.application.plumbing.telemetry import OperationRecord, tenant_hash
from tulving.domain.sync_records import DELTA_PENDING, DELTA_QUARANTINED

if TYPE_CHECKING:
    from tulving.interfaces.http.tenancy import Tenancy

#: Request and operation latency buckets (seconds).
LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: The write lock is held for milliseconds when all is well.
LOCK = (0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)
#: Buckets of the spread of entries over tenants.
TENANT_SIZES = (10, 100, 1_000, 10_000, 100_000, 1_000_000)


class ServerMetrics:
    """The server's registry of metrics (one per app, not the process-wide default, so
    several apps in one process keep their own counts)."""

    def __init__(self, tenancy: Tenancy, *, tenant_labels: bool = False,
                 census_interval: float = 60.0) -> None:
        # no `_created` series beside every counter and histogram: half the series, and
        # Prometheus reads resets from the counters themselves (process-wide setting)
        disable_created_metrics()  # type: ignore[no-untyped-call]  # unannotated upstream
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "tulving_http_requests", "HTTP requests answered, by route template and status",
            ["method", "route", "status"], registry=r)
        self.request_seconds = Histogram(
            "tulving_http_request_duration_seconds", "Time to answer an HTTP request",
            ["method", "route", "status"], buckets=LATENCY, registry=r)
        self.in_flight = Gauge("tulving_http_requests_in_flight",
                               "HTTP requests being answered now", registry=r)
        self.operation_seconds = Histogram(
            "tulving_operation_duration_seconds",
            "Time of a memory operation in the library (store, search, curate, ...)",
            ["operation", "outcome"], buckets=LATENCY, registry=r)
        self.budget_tokens = Counter(
            "tulving_curate_budget_tokens", "Token budgets curate was asked to fill", registry=r)
        self.used_tokens = Counter(
            "tulving_curate_used_tokens", "Tokens curate's blocks used of their budgets",
            registry=r)
        self.budget_ratio = Histogram(
            "tulving_curate_budget_used_ratio", "Share of its budget one curated block used",
            buckets=(0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 1.0), registry=r)
        self.lock_wait = Histogram(
            "tulving_write_lock_wait_seconds",
            "Wait for a tenant's write transaction and lock", buckets=LOCK, registry=r)
        self.lock_hold = Histogram(
            "tulving_write_lock_hold_seconds",
            "Time a write transaction held its tenant's write lock", buckets=LOCK, registry=r)
        self.tenant_operations = (
            Counter("tulving_tenant_operations", "Memory operations by tenant hash",
                    ["tenant", "operation"], registry=r) if tenant_labels else None)
        r.register(_StoreCollector(tenancy, tenant_labels, census_interval))

    # the middleware's side ------------------------------------------------------------
    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        labels = (method, route, str(status))
        self.requests.labels(*labels).inc()
        self.request_seconds.labels(*labels).observe(seconds)

    # telemetry.Listener -----------------------------------------------------------------
    def operation(self, record: OperationRecord) -> None:
        outcome = "ok" if record.error is None else "error"
        self.operation_seconds.labels(record.method, outcome).observe(record.seconds)
        if record.token_budget is not None and record.tokens_used is not None:
            self.budget_tokens.inc(record.token_budget)
            self.used_tokens.inc(record.tokens_used)
            if record.token_budget > 0:
                self.budget_ratio.observe(record.tokens_used / record.token_budget)
        if self.tenant_operations is not None:
            self.tenant_operations.labels(record.tenant, record.method).inc()

    def write_lock(self, wait_seconds: float, hold_seconds: float) -> None:
        self.lock_wait.observe(wait_seconds)
        self.lock_hold.observe(hold_seconds)

    def render(self) -> bytes:
        """The text format Prometheus scrapes (reads the store: call off the event loop)."""
        return bytes(generate_latest(self.registry))


class _StoreCollector(Collector):
    """Gauges read from the store at scrape time, cached ``interval`` seconds."""

    def __init__(self, tenancy: Tenancy, tenant_labels: bool, interval: float) -> None:
        self.tenancy, self.tenant_labels, self.interval = tenancy, tenant_labels, interval
        self._cached: list[Metric] = []
        self._at = float("-inf")
        self._lock = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            if time.monotonic() - self._at >= self.interval:
                try:
                    self._cached = list(self._read())
                except Exception:  # the store is closing or gone: say so, serve the rest
                    self._cached = [GaugeMetricFamily(
                        "tulving_store_read_failures",
                        "Store figures the last scrape could not read", value=1)]
                self._at = time.monotonic()
            yield from self._cached
        try:
            yield from list(self._pool())  # live: a pool's use changes by the second
        except Exception:
            return

    def _read(self) -> Iterator[Metric]:
        census = self.tenancy.root.operator.store_census(_token_tenants(self.tenancy))
        if census.entries_by_tenant is not None:
            yield from self._entries(census.entries_by_tenant)
        if census.jobs_pending is not None:
            yield GaugeMetricFamily("tulving_jobs_pending",
                                    "Background jobs (remember(wait=False)) not run yet",
                                    value=census.jobs_pending)
        if census.enrichment is not None:
            tasks = GaugeMetricFamily("tulving_enrichment_tasks",
                                      "Enrichment tasks (work derived from writes) by kind "
                                      "and state", labels=["kind", "state"])
            for kind, backlog in census.enrichment.items():
                for state in ("pending", "running", "failed"):
                    tasks.add_metric([kind, state], getattr(backlog, state))
            yield tasks
        if census.deltas_pending is not None and census.deltas_quarantined is not None:
            family = GaugeMetricFamily("tulving_sync_deltas", "Sync deltas by state",
                                       labels=["state"])
            family.add_metric([DELTA_PENDING], census.deltas_pending)
            family.add_metric([DELTA_QUARANTINED], census.deltas_quarantined)
            yield family
        yield GaugeMetricFamily("tulving_store_read_failures",
                                "Store figures the last scrape could not read",
                                value=census.failures)

    def _entries(self, census: Mapping[str, int]) -> Iterator[Metric]:
        yield GaugeMetricFamily("tulving_entries", "Active entries in the store",
                                value=sum(census.values()))
        yield GaugeMetricFamily("tulving_tenants", "Tenants with at least one active entry",
                                value=sum(1 for n in census.values() if n > 0))
        buckets, running = [], 0
        counts = sorted(census.values())
        for bound in TENANT_SIZES:
            while running < len(counts) and counts[running] <= bound:
                running += 1
            buckets.append((str(float(bound)), running))
        buckets.append(("+Inf", len(counts)))
        yield GaugeHistogramMetricFamily(
            "tulving_tenant_entries", "How many tenants hold how many active entries",
            buckets=buckets, gsum_value=sum(counts))
        if self.tenant_labels:
            per = GaugeMetricFamily("tulving_tenant_active_entries",
                                    "Active entries of one tenant (by hash)", labels=["tenant"])
            for tenant, count in sorted(census.items()):
                per.add_metric([tenant_hash(tenant)], count)
            yield per

    def _pool(self) -> Iterator[Metric]:
        stats = self.tenancy.root.operator.pool_stats()
        if stats is None:
            return
        for name, key, help_text in (
                ("tulving_pg_pool_connections", "pool_size", "Connections the pool holds"),
                ("tulving_pg_pool_connections_idle", "pool_available",
                 "Pooled connections not in use"),
                ("tulving_pg_pool_connections_max", "pool_max", "The pool's largest size"),
                ("tulving_pg_pool_requests_waiting", "requests_waiting",
                 "Callers waiting for a connection")):
            yield GaugeMetricFamily(name, help_text, value=int(stats.get(key, 0)))


def _token_tenants(tenancy: Tenancy) -> set[str]:
    from tulving.domain.identity import tenant_key

    return {tenant_key(r.user_id, r.workspace_id) for r in tenancy.registry.records()}
