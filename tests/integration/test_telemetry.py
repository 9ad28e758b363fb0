"""The library's spans, read with the OpenTelemetry SDK's in-memory exporter (issue 43):
GenAI memory conventions on the facade's operations, engine spans beneath them, nothing
of a query or a memory unless the user opts in (and then redacted), and the timings the
server's metrics listen to."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from tulving import AsyncMemory, Memory, MemoryType, ValidationError
from tulving.application.plumbing import telemetry
from tulving.application.plumbing.telemetry import OperationRecord, tenant_hash

SENTINEL = "zephyrine"
SECRET = "ghp_" + "Zq8" * 12  # a GitHub token's shape: redaction masks it


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(tracer_provider=provider, capture_content=False)
    yield exporter
    telemetry.configure(tracer_provider=None, capture_content=None)
    provider.shutdown()


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def children(exporter: InMemorySpanExporter, parent: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans()
            if s.parent is not None and s.parent.span_id == parent.context.span_id]


def descendants(exporter: InMemorySpanExporter, parent: ReadableSpan) -> list[ReadableSpan]:
    found = []
    for child in children(exporter, parent):
        found += [child, *descendants(exporter, child)]
    return found


def every_value(exporter: InMemorySpanExporter) -> str:
    """All the text the spans carry: names, attributes, events, status descriptions."""
    parts = []
    for s in exporter.get_finished_spans():
        parts += [s.name, json.dumps(dict(s.attributes or {}), default=str),
                  str(s.status.description)]
        parts += [json.dumps(dict(e.attributes or {}), default=str) for e in s.events]
    return "\n".join(parts)


def test_store_is_update_memory_with_its_engines_beneath(
        make_memory: Callable[..., Memory], spans: InMemorySpanExporter) -> None:
    m = make_memory(user_id="u1")
    m.startup()
    opened = named(spans, "create_memory_store startup")
    assert len(opened) == 1 and opened[0].attributes["tulving.storage"] == "sqlite"
    entry = m.store("We deploy on Tuesdays", type=MemoryType.DECISION, key="deploy/day")
    (span,) = named(spans, "update_memory store")
    a = span.attributes
    assert a["gen_ai.operation.name"] == "update_memory"
    assert a["gen_ai.provider.name"] == "tulving"
    assert a["gen_ai.memory.store.id"] == tenant_hash(m.identity.tenant)
    assert a["gen_ai.memory.record.id"] == entry.id
    assert a["gen_ai.memory.record.count"] == 1
    assert a["gen_ai.memory.scope"] == "agent" and a["tulving.memory.scope"] == "agent"
    assert span.kind is SpanKind.INTERNAL
    below = {s.name for s in descendants(spans, span)}
    assert "embeddings hashing-v1" in below or any(n.startswith("embeddings ") for n in below)
    assert "write_many sqlite" in below
    assert "lock_tenant_writes sqlite" in below
    write = named(spans, "write_many sqlite")[0]
    assert write.attributes["db.system.name"] == "sqlite"
    # a second store is not a second create_memory_store: the store is open
    m.store("We deploy on Thursdays now", type=MemoryType.DECISION, key="deploy/day")
    assert len(named(spans, "create_memory_store startup")) == 1


def test_search_and_curate_spans_carry_counts_not_content(
        make_memory: Callable[..., Memory], spans: InMemorySpanExporter) -> None:
    m = make_memory()
    for i in range(6):
        m.store(f"{SENTINEL} fact number {i} about the release train", type=MemoryType.FACT)
    spans.clear()
    results = m.search(f"{SENTINEL} release {SECRET}", top_k=3, min_score=0.0)
    (search,) = named(spans, "search_memory search")
    a = search.attributes
    assert a["gen_ai.memory.record.count"] == len(results) == 3
    assert a["gen_ai.memory.search.similarity.threshold"] == 0.0
    assert a["tulving.search.mode"] == "hybrid" and a["tulving.search.top_k"] == 3
    engines = {s.attributes.get("tulving.engine") for s in descendants(spans, search)}
    assert {"lexical", "vector", "embedding"} <= engines
    curated = m.curate(f"{SENTINEL} release {SECRET}", token_budget=60)
    (curate,) = named(spans, "search_memory curate")
    c = curate.attributes
    assert c["tulving.curate.token_budget"] == 60
    assert c["tulving.curate.tokens_used"] == curated.token_count
    assert c["tulving.curate.candidates"] == curated.sources_consulted
    assert c["tulving.curate.omitted"] == curated.omitted
    assert c["gen_ai.memory.record.count"] == len(curated.entries)
    assert any(s.name == "curate.pack" for s in descendants(spans, curate))
    text = every_value(spans)
    assert SENTINEL not in text and SECRET not in text
    assert "gen_ai.memory.query.text" not in text and "gen_ai.memory.records" not in text


def test_content_only_when_opted_in_and_then_redacted(
        make_memory: Callable[..., Memory], spans: InMemorySpanExporter) -> None:
    m = make_memory()
    m.store(f"{SENTINEL}: the deploy key is {SECRET}", type=MemoryType.FACT)
    m.store("db password", type=MemoryType.FACT, key="db/password")
    telemetry.configure(capture_content=True)
    spans.clear()
    m.search(f"{SENTINEL} {SECRET}", top_k=5)
    (search,) = named(spans, "search_memory search")
    assert SENTINEL in search.attributes["gen_ai.memory.query.text"]
    records = json.loads(search.attributes["gen_ai.memory.records"])
    assert any(SENTINEL in r["content"] for r in records)
    assert all({"id", "content", "score"} <= set(r) for r in records)
    assert SECRET not in every_value(spans)


def test_capture_follows_the_genai_environment_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    telemetry.configure(capture_content=None)
    monkeypatch.delenv(telemetry.CAPTURE_ENV, raising=False)
    assert telemetry.capture_content() is False
    monkeypatch.setenv(telemetry.CAPTURE_ENV, "true")
    assert telemetry.capture_content() is True
    monkeypatch.setenv(telemetry.CAPTURE_ENV, "NO_CONTENT")
    assert telemetry.capture_content() is False


def test_deletes_and_errors(make_memory: Callable[..., Memory],
                            spans: InMemorySpanExporter) -> None:
    m = make_memory(user_id="u9")
    entry = m.store("a note to forget", type=MemoryType.FACT)
    m.forget(entry.id)
    (forget,) = named(spans, "delete_memory forget")
    assert forget.attributes["gen_ai.memory.record.id"] == entry.id
    m.store("another", type=MemoryType.FACT, scope="personal")
    assert m.clear(scope="personal", confirm=True) == 1
    (clear,) = named(spans, "delete_memory clear")
    assert clear.attributes["gen_ai.memory.record.count"] == 1
    assert clear.attributes["gen_ai.memory.scope"] == "user"
    m.erase(user_id="u9")
    assert named(spans, "delete_memory_store erase")
    with pytest.raises(ValidationError):
        m.search(f"{SENTINEL} anything", top_k=0)
    (failed,) = named(spans, "search_memory search")
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "ValidationError"
    assert not failed.events  # no exception event: its message may quote the query
    assert SENTINEL not in every_value(spans)


def test_a_callers_span_is_the_parent_also_through_async_memory(
        tmp_path: Any, spans: InMemorySpanExporter) -> None:
    provider = telemetry._state.provider
    tracer = provider.get_tracer("the agent framework")

    async def run() -> None:
        async with AsyncMemory(tmp_path / "a.db", agent_id="a", embedder="hashing",
                               vectors="exact") as memory:
            with tracer.start_as_current_span("agent step"):
                await memory.store("the cache lives in redis", type="FACT")
                await memory.curate("where is the cache?", token_budget=80)

    anyio.run(run)
    (step,) = named(spans, "agent step")
    under = {s.name for s in children(spans, step)}
    assert {"update_memory store", "search_memory curate"} <= under
    assert all(s.context.trace_id == step.context.trace_id
               for s in descendants(spans, step))


def test_no_sdk_means_no_proxies_and_no_spans(make_memory: Callable[..., Memory]) -> None:
    telemetry.configure(tracer_provider=None)
    m = make_memory()
    m.startup()
    assert type(m.ctx.storage).__name__ == "SQLiteStorage"
    assert telemetry.engines_traced() is False
    m.store("plain", type=MemoryType.FACT)


def test_tracing_off_switch(make_memory: Callable[..., Memory],
                            spans: InMemorySpanExporter) -> None:
    telemetry.configure(enabled=False)
    try:
        make_memory().store("untraced", type=MemoryType.FACT)
    finally:
        telemetry.configure(enabled=None)
    assert spans.get_finished_spans() == ()


class Recorder:
    def __init__(self) -> None:
        self.operations: list[OperationRecord] = []
        self.locks: list[tuple[float, float]] = []

    def operation(self, record: OperationRecord) -> None:
        self.operations.append(record)

    def write_lock(self, wait_seconds: float, hold_seconds: float) -> None:
        self.locks.append((wait_seconds, hold_seconds))


def test_listeners_hear_outermost_operations_and_write_locks(
        make_memory: Callable[..., Memory]) -> None:
    recorder = Recorder()
    telemetry.add_listener(recorder)
    try:
        m = make_memory(user_id="u1")
        m.startup()
        m.store("first", type=MemoryType.FACT)
        m.store_many([{"content": "second", "type": "FACT"},
                      {"content": "third", "type": "FACT"}])
        curated = m.curate("first", token_budget=50)
        m.procedures("how to deploy")  # runs a search inside: counted once, as procedures
        with pytest.raises(ValidationError):
            m.curate("x", token_budget=-1)
    finally:
        telemetry.remove_listener(recorder)
    methods = [r.method for r in recorder.operations]
    assert methods == ["startup", "store", "store_many", "curate", "procedures", "curate"]
    curate = recorder.operations[3]
    assert (curate.token_budget, curate.tokens_used) == (50, curated.token_count)
    assert recorder.operations[-1].error == "ValidationError"
    assert all(r.tenant == tenant_hash(m.identity.tenant) for r in recorder.operations)
    # one write transaction per store call (startup writes too), each timed once
    assert len(recorder.locks) >= 2
    assert all(wait >= 0 and hold > 0 for wait, hold in recorder.locks)


def test_a_broken_description_never_fails_the_operation(
        spans: InMemorySpanExporter) -> None:
    from tulving.application.plumbing.telemetry import traced_operation
    from tulving.domain.identity import Identity

    class Facade:
        identity = Identity("agent-x")

        def lookup(self) -> int:
            return 7

    def broken(*_args: Any) -> dict[str, Any]:
        raise KeyError("a bug in telemetry")

    Facade.lookup = traced_operation(Facade.lookup, "search_memory", broken)  # type: ignore[method-assign]
    assert Facade().lookup() == 7
    (span,) = named(spans, "search_memory lookup")
    assert span.attributes["tulving.telemetry.error"] == "describe"
    assert span.status.status_code is not StatusCode.ERROR


def test_an_unsampled_trace_makes_no_span_at_all(make_memory: Callable[..., Memory]) -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(tracer_provider=provider)
    try:
        m = make_memory()
        m.store("not sampled", type=MemoryType.FACT)
        m.curate("sampled?", token_budget=50)
        assert type(m.ctx.storage).__name__ == "TracedSQLiteStorage"  # wrapped, yet quiet
    finally:
        telemetry.configure(tracer_provider=None)
    assert exporter.get_finished_spans() == ()
