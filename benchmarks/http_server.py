"""The memory server under bounded load, next to the same calls in-process, same run.

Usage::

    .venv/bin/python benchmarks/http_server.py                       # SQLite, 10k entries
    .venv/bin/python benchmarks/http_server.py --postgres            # and PostgreSQL
    .venv/bin/python benchmarks/http_server.py --entries 10000 --requests 200

A store of ``--entries`` realistic synthetic memories (hashing embedder: the embedding
model's cost is its own benchmark) is served by a real ``tulving serve`` on 127.0.0.1.
For 1, 8 and 32 concurrent clients (httpx, one connection each, loopback only), each
client makes its share of ``--requests`` calls to recall, curate (2,000 tokens) and
remember; the table gives p50/p95 latency and requests/s, beside the same calls made
in-process on a Memory of the same store (one caller), and the ratios the targets name:
HTTP p95 at 8 clients against ``2 x in-process p95 + 5 ms``, and remember throughput over
HTTP as a share of in-process. Also: server start to first answered request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from _corpus import realistic_queries, realistic_texts

from tulving import Memory

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--embedder", "hashing"]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cli(*args: str, env: dict[str, str]) -> str:
    run = subprocess.run([sys.executable, "-m", "tulving.interfaces.cli.main", *args],
                         capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    return run.stdout


def start(location: str, extra: list[str], env: dict[str, str]) -> tuple[Any, str, float]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "tulving.interfaces.cli.main", "serve",
                             "--path", location, *FAST, *extra, "--port", str(port)],
                            env=env, cwd=ROOT, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    while True:
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                return proc, url, time.perf_counter() - began
        except httpx.TransportError:
            time.sleep(0.02)
        if proc.poll() is not None:
            raise SystemExit("the server did not start")


CALLS = {
    "recall": lambda q, i: ("/v1/recall", {"query": q, "limit": 10}),
    "curate": lambda q, i: ("/v1/curate", {"query": q, "token_budget": 2000}),
    "remember": lambda q, i: ("/v1/remember", {"text": f"User: note {i} says {q}"}),
}


async def load(url: str, token: str, kind: str, clients: int, total: int,
               queries: list[str]) -> tuple[list[float], float, int]:
    latencies: list[float] = []
    errors = 0
    per_client = max(1, total // clients)

    async def worker(w: int) -> None:
        nonlocal errors
        async with httpx.AsyncClient(base_url=url, timeout=60,
                                     headers={"Authorization": f"Bearer {token}"}) as http:
            for j in range(per_client):
                i = w * per_client + j
                path, body = CALLS[kind](queries[i % len(queries)], i)
                began = time.perf_counter()
                response = await http.post(path, json=body)
                latencies.append(time.perf_counter() - began)
                errors += response.status_code != 200

    began = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(clients)))
    return latencies, time.perf_counter() - began, errors


def in_process(memory: Memory, kind: str, total: int, queries: list[str]) -> tuple[list[float], float]:
    latencies = []
    began_all = time.perf_counter()
    for i in range(total):
        q = queries[i % len(queries)]
        began = time.perf_counter()
        if kind == "recall":
            memory.search(q, 10)
        elif kind == "curate":
            memory.curate(q, token_budget=2000)
        else:
            memory.remember(f"User: note {i} says {q}")
        latencies.append(time.perf_counter() - began)
    return latencies, time.perf_counter() - began_all


def run(label: str, location: str, extra: list[str], env: dict[str, str], entries: int,
        requests: int, options: dict[str, Any]) -> None:
    texts = realistic_texts(entries)
    queries = realistic_queries(200)
    with Memory(location, agent_id="bench", user_id="u1", embedder="hashing",
                options=options) as memory:
        for i in range(0, entries, 2000):
            memory.store_many({"content": t, "type": "FACT"} for t in texts[i:i + 2000])
        base: dict[str, tuple[list[float], float]] = {
            kind: in_process(memory, kind, requests, queries) for kind in CALLS}
    token = json.loads(cli("serve", "token", "create", f"bench{os.getpid()}{label}",
                           "--bind-user", "u1", "--bind-agent", "bench", "--path", location,
                           *FAST, *extra, "--json", env=env))["token"]
    proc, url, started = start(location, extra, env)
    try:
        print(f"\n{label}: {entries:,} entries; server start to first answer {started:.2f} s")
        print(f"  {'call':9} {'clients':>7} {'p50 ms':>8} {'p95 ms':>8} {'req/s':>8} "
              f"{'errors':>6}   in-process p50/p95 ms, req/s")
        for kind in CALLS:
            local, local_s = base[kind]
            for clients in (1, 8, 32):
                lat, elapsed, errors = asyncio.run(load(url, token, kind, clients, requests,
                                                        queries))
                line = (f"  {kind:9} {clients:7d} {1000 * pct(lat, .5):8.2f} "
                        f"{1000 * pct(lat, .95):8.2f} {len(lat) / elapsed:8.1f} {errors:6d}"
                        f"   {1000 * pct(local, .5):.2f}/{1000 * pct(local, .95):.2f}, "
                        f"{len(local) / local_s:.1f}")
                if clients == 8 and kind != "remember":
                    bound = 2 * pct(local, .95) + 0.005
                    line += f"   p95 {pct(lat, .95) / bound:.2f}x of (2x in-process p95 + 5 ms)"
                if kind == "remember" and clients == 1:
                    line += f"   {100 * (len(lat) / elapsed) / (len(local) / local_s):.0f}% of in-process"
                print(line)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=256)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TULVING_")}
    env["TULVING_PLUGINS"] = "tulving"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    print(f"load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        run("SQLite", str(Path(tmp) / "bench.db"), [], env, args.entries, args.requests, {})
        if args.postgres:
            from tulving.testing.postgres import new_schema_name, server_url

            url = server_url()
            if url is None:
                raise SystemExit("no PostgreSQL server could be had")
            schema = new_schema_name("httpbench")
            config = Path(tmp) / "tulving.toml"
            config.write_text(f'[tulving.options.storage]\nschema = "{schema}"\n')
            run("PostgreSQL", url, ["--config", str(config)], env, args.entries,
                args.requests, {"storage": {"schema": schema}})


if __name__ == "__main__":
    main()
