"""What tracing costs ``store`` and ``curate`` (issue 43), in four states:

- ``off``: ``TULVING_TRACING=off`` (as without opentelemetry-api: nothing is wrapped);
- ``api, no SDK``: opentelemetry-api installed, no SDK configured (the default of an
  application that never set one up): the facade's spans go to the no-op tracer and the
  engines are not wrapped;
- ``SDK, no exporter``: an SDK ``TracerProvider`` with no processor: every span of the
  facade and the engines is made and dropped;
- ``SDK + batch OTLP``: the SDK's ``BatchSpanProcessor`` and OTLP/HTTP exporter sending
  to a real receiver process (``tulving.testing.otlp_receiver``) on 127.0.0.1.

    nice .venv/bin/python benchmarks/telemetry_overhead.py [--entries 2000] [--ops 300] [--rounds 3]

One Memory per state, each over its own copy of the same data (SQLite + usearch, the
hashing embedder: no model, so the engines are fast and what tracing adds shows rather
than hides under embedding time), all in one process: each operation runs in the four
states back to back, in an order that rotates, so a busy machine slows every state
alike. The state is switched with ``tulving.telemetry.configure`` before each call (the
engines' proxies were installed, or not, when each Memory opened). A raw SQLite FTS5 bm25
query over the same texts is timed in the same run as the engines' own floor.
Reported: the median time of each state, and the median over operations of the state's
time divided by ``off``'s time for the same operation (paired, so load cancels).
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MODES = ("off", "api", "sdk", "batch")
LABELS = {"off": "off", "api": "api, no SDK", "sdk": "SDK, no exporter",
          "batch": "SDK + batch OTLP"}
OPS = ("store", "curate")
WORDS = (
    "deploy release auth token cache index shard replica backup schedule migrate "
    "rollback latency budget agent memory vector lexical curate policy tenant audit "
    "retention erasure signature review trust source webhook"
).split()


def texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(14)) + f" item{seed}-{i}"
            for i in range(n)]


def switchers(receiver: str) -> tuple[dict[str, Callable[[], None]], list[Any]]:
    """For each state, what puts the library in it (and the SDK providers to shut down)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from tulving import telemetry
    from tulving.application.plumbing.telemetry import tracer

    def state(**settings: Any) -> Callable[[], None]:
        def put() -> None:
            telemetry.configure(**settings)
            tracer()  # looked up now, not inside the timed call (an application's is cached)
        return put

    dropped = TracerProvider()  # no processor: spans are made and go nowhere
    batched = TracerProvider()
    batched.add_span_processor(BatchSpanProcessor(
        OTLPSpanExporter(endpoint=f"{receiver}/v1/traces")))
    return {
        "off": state(enabled=False, tracer_provider=None),
        "api": state(enabled=None, tracer_provider=None),
        "sdk": state(enabled=None, tracer_provider=dropped),
        "batch": state(enabled=None, tracer_provider=batched),
    }, [dropped, batched]


def run(folder: Path, entries: int, ops: int, rounds: int, receiver: str
        ) -> dict[str, dict[str, list[float]]]:
    from tulving import Memory

    switch, providers = switchers(receiver)
    memories = {}
    corpus = texts(entries, 1)
    for mode in MODES:
        switch[mode]()  # the engines' proxies are installed (or not) as the store opens
        memory = Memory(folder / f"{mode}.db", agent_id="bench", embedder="hashing")
        memory.startup()
        for i in range(0, entries, 500):
            memory.store_many([{"content": t, "type": "FACT"} for t in corpus[i:i + 500]])
        memories[mode] = memory
    rng = random.Random(5)
    queries = [" ".join(rng.choice(WORDS) for _ in range(4)) for _ in range(ops * rounds)]
    new = texts(ops * rounds, 2)
    laps: dict[str, dict[str, list[float]]] = {op: {m: [] for m in MODES} for op in OPS}
    for warm in range(20):  # tokenizer, index pages, caches: out of the timing
        for mode in MODES:
            switch[mode]()
            memories[mode].curate(queries[warm], token_budget=1000)
    for i, (text, query) in enumerate(zip(new, queries, strict=True)):
        order = MODES[i % 4:] + MODES[:i % 4]
        for mode in order:
            switch[mode]()
            memory = memories[mode]
            t0 = time.perf_counter()
            memory.store(text, type="FACT")
            t1 = time.perf_counter()
            memory.curate(query, token_budget=1000)
            t2 = time.perf_counter()
            laps["store"][mode].append(t1 - t0)
            laps["curate"][mode].append(t2 - t1)
    for memory in memories.values():
        memory.close()
    for provider in providers:
        provider.shutdown()  # the batch exporter sends what is queued
    return laps


def raw_fts(entries: int, ops: int) -> float:
    """Median microseconds of a plain FTS5 bm25 top-10 query over the same texts."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    conn.executemany("INSERT INTO t(body) VALUES (?)", [(x,) for x in texts(entries, 1)])
    rng = random.Random(5)
    laps = []
    for _ in range(ops):
        q = " OR ".join(rng.choice(WORDS) for _ in range(4))
        t0 = time.perf_counter()
        conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10",
                     (q,)).fetchall()
        laps.append(time.perf_counter() - t0)
    return statistics.median(laps) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--ops", type=int, default=300, help="operations a round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.environ.pop("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", None)
    with tempfile.TemporaryDirectory() as tmp:
        spans = Path(tmp) / "spans.jsonl"
        receiver = subprocess.Popen(
            [sys.executable, "-m", "tulving.testing.otlp_receiver", "--port", "0",
             "--out", str(spans)], stdout=subprocess.PIPE, text=True)
        try:
            assert receiver.stdout is not None
            port = int(receiver.stdout.readline().split()[-1])
            laps = run(Path(tmp), args.entries, args.ops, args.rounds,
                       f"http://127.0.0.1:{port}")
        finally:
            time.sleep(0.5)
            receiver.terminate()
            receiver.wait(timeout=10)
        exported = sum(1 for _ in spans.open()) if spans.exists() else 0
    raw = raw_fts(args.entries, args.ops)
    load = os.getloadavg()
    n = args.ops * args.rounds
    print(f"telemetry overhead: {args.entries} entries, {n} operations of each kind per "
          f"state, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"raw SQLite FTS5 bm25 top-10 (the engine floor): {raw:.0f} us")
    print(f"spans the receiver decoded (SDK + batch OTLP): {exported} "
          f"({exported / (2 * n):.1f} an operation)")
    print()
    print("| tracing | store median (ms) | store / off (paired) | store added (us) "
          "| curate median (ms) | curate / off (paired) | curate added (us) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for mode in MODES:
        cells = []
        for op in OPS:
            mine, base = laps[op][mode], laps[op]["off"]
            ratio = statistics.median(a / b for a, b in zip(mine, base, strict=True))
            added = statistics.median(a - b for a, b in zip(mine, base, strict=True))
            cells += [f"{statistics.median(mine) * 1e3:.2f}", f"{ratio:.3f}",
                      f"{added * 1e6:+.0f}"]
        print(f"| {LABELS[mode]} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
