"""What tracing costs ``store`` and ``curate`` (issue 43): four states of one process, each
in a fresh child process over the same data, interleaved over several rounds:

- ``off``: ``TULVING_TRACING=off`` (as without opentelemetry-api: nothing is wrapped);
- ``api, no SDK``: opentelemetry-api installed, no SDK configured (the default of an
  application that never set one up): the facade's spans go to the no-op tracer and the
  engines are not wrapped;
- ``SDK, no exporter``: an SDK ``TracerProvider`` with no processor: every span of the
  facade and the engines is made and dropped;
- ``SDK + batch OTLP``: the SDK's ``BatchSpanProcessor`` and OTLP/HTTP exporter sending
  to a real receiver process (``tulving.testing.otlp_receiver``) on 127.0.0.1.

    nice .venv/bin/python benchmarks/telemetry_overhead.py [--entries 2000] [--ops 300] [--rounds 3]

The store is SQLite + usearch with the hashing embedder (no model: the engines are fast,
so what tracing adds shows rather than hides under embedding time). A raw SQLite FTS5
bm25 query over the same texts is timed in the same run as the engines' own floor.
Figures are medians over rounds of each child's median; ratios are against ``off``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODES = ("off", "api", "sdk", "batch")
LABELS = {"off": "off", "api": "api, no SDK", "sdk": "SDK, no exporter",
          "batch": "SDK + batch OTLP"}
WORDS = (
    "deploy release auth token cache index shard replica backup schedule migrate "
    "rollback latency budget agent memory vector lexical curate policy tenant audit "
    "retention erasure signature review trust source webhook"
).split()


def texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(14)) + f" item{seed}-{i}"
            for i in range(n)]


def setup_tracing(mode: str, receiver: str | None) -> Any:
    from tulving.application.plumbing import telemetry

    if mode == "off":
        telemetry.configure(enabled=False)
        return None
    if mode == "api":
        return None
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider()
    if mode == "batch":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider.add_span_processor(BatchSpanProcessor(
            OTLPSpanExporter(endpoint=f"{receiver}/v1/traces")))
    trace.set_tracer_provider(provider)
    return provider


def percentile(laps: list[float], q: float) -> float:
    ordered = sorted(laps)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def child(mode: str, folder: Path, entries: int, ops: int, receiver: str | None) -> dict[str, Any]:
    provider = setup_tracing(mode, receiver)
    from tulving import Memory

    memory = Memory(folder / f"{mode}.db", agent_id="bench", embedder="hashing")
    memory.startup()
    corpus = texts(entries, 1)
    for i in range(0, entries, 500):
        memory.store_many([{"content": t, "type": "FACT"} for t in corpus[i:i + 500]])
    rng = random.Random(5)
    queries = [" ".join(rng.choice(WORDS) for _ in range(4)) for _ in range(ops)]
    new = texts(ops, 2)
    for q in queries[:20]:  # warm caches (tokenizer, index pages) out of the timing
        memory.curate(q, token_budget=1000)
    laps: dict[str, list[float]] = {"store": [], "curate": [], "search": []}
    for text, query in zip(new, queries, strict=True):
        t0 = time.perf_counter()
        memory.store(text, type="FACT")
        t1 = time.perf_counter()
        memory.curate(query, token_budget=1000)
        t2 = time.perf_counter()
        memory.search(query, top_k=10)
        t3 = time.perf_counter()
        laps["store"].append(t1 - t0)
        laps["curate"].append(t2 - t1)
        laps["search"].append(t3 - t2)
    memory.close()
    if provider is not None:
        provider.shutdown()  # the batch exporter sends what is queued
    return {op: {"median_us": statistics.median(v) * 1e6, "p90_us": percentile(v, 0.9) * 1e6}
            for op, v in laps.items()}


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
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--receiver", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, Path(args.folder), args.entries, args.ops,
                               args.receiver)))
        return 0
    env = {**os.environ, "TULVING_PLUGINS": "tulving"}
    env.pop("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", None)
    results: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        spans = Path(tmp) / "spans.jsonl"
        receiver = subprocess.Popen(
            [sys.executable, "-m", "tulving.testing.otlp_receiver", "--port", "0",
             "--out", str(spans)], stdout=subprocess.PIPE, text=True, env=env)
        try:
            assert receiver.stdout is not None
            port = int(receiver.stdout.readline().split()[-1])
            for round_no in range(args.rounds):
                for mode in MODES:
                    folder = Path(tmp) / f"r{round_no}"
                    folder.mkdir(exist_ok=True)
                    out = subprocess.run(
                        [sys.executable, __file__, "--child", mode, "--folder", str(folder),
                         "--entries", str(args.entries), "--ops", str(args.ops),
                         "--receiver", f"http://127.0.0.1:{port}"],
                        env=env, capture_output=True, text=True, check=True)
                    results[mode].append(json.loads(out.stdout.splitlines()[-1]))
                    print(f"round {round_no + 1} {LABELS[mode]}: done", file=sys.stderr)
        finally:
            receiver.terminate()
            receiver.wait(timeout=10)
        exported = sum(1 for _ in spans.open()) if spans.exists() else 0
    raw = raw_fts(args.entries, args.ops)
    load = os.getloadavg()
    print(f"telemetry overhead: {args.entries} entries, {args.ops} ops a child, "
          f"{args.rounds} rounds, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"raw SQLite FTS5 bm25 top-10 (engine floor): {raw:.0f} us")
    print(f"spans the receiver decoded (batch rows): {exported}")
    print()
    print("| tracing | store median us | store p90 us | store / off | curate median us "
          "| curate p90 us | curate / off | search median us | search / off |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    base = {op: statistics.median(r[op]["median_us"] for r in results["off"])
            for op in ("store", "curate", "search")}
    for mode in MODES:
        med = {op: statistics.median(r[op]["median_us"] for r in results[mode])
               for op in ("store", "curate", "search")}
        p90 = {op: statistics.median(r[op]["p90_us"] for r in results[mode])
               for op in ("store", "curate")}
        print(f"| {LABELS[mode]} | {med['store']:.0f} | {p90['store']:.0f} | "
              f"{med['store'] / base['store']:.3f} | {med['curate']:.0f} | {p90['curate']:.0f} | "
              f"{med['curate'] / base['curate']:.3f} | {med['search']:.0f} | "
              f"{med['search'] / base['search']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
