"""PostgreSQL transactions per request of a real ``tulving serve``: recall and store.

Usage::

    TULVING_TEST_PG_URL=postgresql://... .venv/bin/python benchmarks/pg_transactions.py
    .venv/bin/python benchmarks/pg_transactions.py --gap 2.5   # a quiet client: 2.5 s apart

Give it a PostgreSQL server of its own (``TULVING_PG_PORT=55433 bash .ci/postgres.sh
start`` prints the export line): the count is read from ``pg_stat_database`` (commits +
rollbacks of the whole database), so anything else using the database counts too.

One replica over one schema (hashing embedder, one tenant holding ``--entries``
memories, one token); after a warm-up (the tenant's view, its session), one client sends
``--requests`` recalls one after another, then as many stores of new facts. Around each
run: wait until every backend has reported its counters (PostgreSQL flushes a backend's
counters at most once a second while busy and ten seconds after it goes idle), read the
database's transactions, run, wait again, read again. The server's idle background work
(its job worker's poll) is measured over a quiet window of the same length and
subtracted, and so is this script's own reading. The writes a read causes (access
statistics, the read audit) are flushed by the server on their own schedule (batches of
up to 2 s): what a run caused and the server flushed within the window counts; ``--gap``
spaces requests as a quiet client would (then each batch of those writes holds fewer
requests).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
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
#: How long after its last transaction an idle backend's counters reach pg_stat_database
#: (PGSTAT_IDLE_INTERVAL is 10 s), with a margin.
SETTLE_S = 11.5


def database_transactions(url: str) -> int:
    """Commits + rollbacks of the current database, as the statistics collector has them.
    A connection of its own, closed at once (a closing backend reports its counters)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database "
                           "WHERE datname = current_database()").fetchone()
    assert row is not None
    return int(row[0])


def probe_cost(url: str) -> int:
    """Transactions one ``database_transactions`` reading adds (its connection's own)."""
    database_transactions(url)
    time.sleep(SETTLE_S)
    first = database_transactions(url)
    time.sleep(SETTLE_S)
    return database_transactions(url) - first


def counted(url: str, run: Any, idle_per_s: float, probe: int) -> tuple[float, float]:
    """Transactions ``run()`` caused (the idle rate over its window and the probe taken
    off) and the window's length."""
    time.sleep(SETTLE_S)
    before = database_transactions(url)
    began = time.perf_counter()
    run()
    time.sleep(SETTLE_S)
    window = time.perf_counter() - began
    after = database_transactions(url)
    return after - before - probe - idle_per_s * window, window


def start_replica(config: Path) -> tuple[subprocess.Popen[bytes], str]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TULVING_")}
    env["TULVING_PLUGINS"] = "tulving"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "tulving.interfaces.cli.main", "serve",
                             "--config", str(config), "--port", str(port)],
                            env=env, cwd=ROOT, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.05)
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the replica did not start")


def measure(url: str, schema: str, *, entries: int, requests: int, gap: float,
            idle_s: float) -> dict[str, float]:
    """Transactions per recall and per store on one fresh replica over ``schema``."""
    texts = realistic_texts(entries + 4 * requests + 20)
    queries = realistic_queries(max(requests, 20))
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "tulving.toml"
        config.write_text(f'[tulving]\npath = {url!r}\nembedder = "hashing"\n'
                          f'[tulving.options.storage]\nschema = "{schema}"\n')
        with Memory(url, agent_id="default", user_id="bench", embedder="hashing",
                    options={"storage": {"schema": schema, "max_size": 2}}) as memory:
            memory.store_many({"content": t, "type": "FACT"} for t in texts[:entries])
            from tulving.interfaces.auth.bearer_tokens import registry_for

            token = registry_for(memory).create(f"tx-{time.time_ns()}", user_id="bench")[1]
        proc, base = start_replica(config)
        fresh = iter(texts[entries:])
        try:
            with httpx.Client(base_url=base, timeout=60,
                              headers={"Authorization": f"Bearer {token}"}) as http:

                def recall(i: int) -> None:
                    r = http.post("/v1/recall", json={"query": queries[i % len(queries)],
                                                      "limit": 10})
                    r.raise_for_status()

                def store(i: int) -> None:
                    r = http.post("/v1/store", json={"content": f"{next(fresh)} (tx {i})",
                                                     "type": "FACT"})
                    r.raise_for_status()

                for i in range(5):  # warm: the view, the session, the pool
                    recall(i)
                    store(i)
                probe = probe_cost(url)
                idle, window = counted(url, lambda: time.sleep(idle_s), 0.0, probe)
                idle_per_s = max(0.0, idle / window)

                def run(call: Any) -> Any:
                    def go() -> None:
                        for i in range(requests):
                            call(i)
                            if gap:
                                time.sleep(gap)
                    return go

                recalls, _ = counted(url, run(recall), idle_per_s, probe)
                stores, _ = counted(url, run(store), idle_per_s, probe)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
    return {"recall": recalls / requests, "store": stores / requests,
            "idle_per_s": idle_per_s, "probe": probe}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=300)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--gap", type=float, default=0.0,
                        help="seconds between two requests of one client")
    parser.add_argument("--idle", type=float, default=20.0,
                        help="seconds of the quiet window that measures background work")
    args = parser.parse_args()
    from tulving.testing.postgres import drop_schema, new_schema_name, server_url

    url = server_url()
    if url is None:
        raise SystemExit("no PostgreSQL server could be had")
    schema = new_schema_name("txcount")
    print(f"load average {os.getloadavg()[0]:.2f}; {args.entries} memories, "
          f"{args.requests} requests of each kind, {args.gap} s apart", file=sys.stderr)
    try:
        result = measure(url, schema, entries=args.entries, requests=args.requests,
                         gap=args.gap, idle_s=args.idle)
    finally:
        drop_schema(url, schema)
    print(f"transactions per recall {result['recall']:.2f}, per store {result['store']:.2f} "
          f"(idle background {result['idle_per_s']:.2f}/s subtracted)")
    print(json.dumps({k: round(v, 3) for k, v in result.items()}))


if __name__ == "__main__":
    main()
