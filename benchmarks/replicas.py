"""Server replicas over one PostgreSQL: throughput, latency, lock hold, where the time goes.

Usage::

    .venv/bin/python benchmarks/replicas.py                        # 2,000 entries, 480 requests
    .venv/bin/python benchmarks/replicas.py --entries 500 --requests 120   # a quick look

One PostgreSQL store (``TULVING_TEST_PG_URL``, else a throwaway server; give it one of its
own, as the transaction counts are the whole database's) holds ``--entries`` realistic
synthetic memories of one tenant (hashing embedder: the model's cost is its own
benchmark). For 1, 2 and 3 ``tulving serve`` replicas, ``--clients`` concurrent clients
(httpx, one connection each, loopback; client ``i`` talks to replica ``i mod R`` as a
round-robin balancer would) run two workloads in that one tenant, the worst case for
writes, which commit one at a time per tenant: ``writes`` (every call a ``store`` of a
new fact) and ``mixed`` (one ``store`` for every three ``recall`` searches), ``--requests``
calls each. Printed per run: req/s and the ratio to one replica, p50/p95 of reads and
writes, errors; how long each write held its tenant's write lock (p50/p95, timed inside
the replicas by ``_lock_hold.py``: from ``lock_tenant_writes`` returning to the end of
the transaction); PostgreSQL transactions per request (``pg_stat_database`` commits and
rollbacks, read after the backends reported them); lock waits sampled every 20 ms from
``pg_stat_activity``; deadlocks; and where the CPU went (replicas, PostgreSQL's
backends, the clients, from ``/proc``) per request. From the CPU per request a model on
paper follows: where three replica machines and one database machine of 4, 8 and 16
cores top out, and one tenant's write ceiling (1 / the lock's mean hold). The reference,
same data, same run: the same calls in-process on one ``Memory`` (no HTTP, one caller),
and the same search and insert as plain SQL on the store's own tables (the raw engine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from _corpus import realistic_queries, realistic_texts

from tulving import Memory

ROOT = Path(__file__).resolve().parents[1]
TICKS = os.sysconf("SC_CLK_TCK")
READS_PER_WRITE = 3


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (all its threads) so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def postgres_pids(url: str) -> Any:
    """A function listing this server's processes (its postmaster and every child), read
    from the data folder's ``postmaster.pid``; every ``postgres`` process on the machine
    when the role may not read ``data_directory`` (other servers would then count too)."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as conn:
            folder = conn.execute("SHOW data_directory").fetchone()[0]  # type: ignore[index]
        master = int(Path(folder, "postmaster.pid").read_text().split()[0])
    except Exception:
        master = _postmaster_by_port(url)

    def pids() -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                comm = (entry / "comm").read_text().strip()
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            pid = int(entry.name)
            if (master is None and comm == "postgres") or pid == master or ppid == master:
                found.append(pid)
        return found

    return pids


def _postmaster_by_port(url: str) -> int | None:
    """The postmaster listening on the URL's port, found by its command line (a role
    that may not read ``data_directory`` can still be measured alone)."""
    from urllib.parse import urlsplit

    port = urlsplit(url).port or 5432
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args and args[0].endswith(b"postgres") and b"-p" in args:
            at = args.index(b"-p")
            if at + 1 < len(args) and args[at + 1] == str(port).encode():
                return int(entry.name)
    return None


class LockSampler:
    """Samples pg_stat_activity every 20 ms: backends waiting on locks, and which."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.conn = psycopg.connect(url, autocommit=True)
        self.samples = 0
        self.with_waiters = 0
        self.waiting = 0
        self.kinds: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            rows = self.conn.execute(
                "SELECT wait_event_type, wait_event FROM pg_stat_activity WHERE "
                "datname = current_database() AND state = 'active' AND pid <> "
                "pg_backend_pid()").fetchall()
            locks = [f"{t}:{e}" for t, e in rows if t == "Lock"]
            self.samples += 1
            self.waiting += len(locks)
            self.with_waiters += bool(locks)
            self.kinds.update(locks)
            self._stop.wait(0.02)

    def stats(self) -> tuple[int, int]:
        row = self.conn.execute("SELECT deadlocks, xact_commit FROM pg_stat_database "
                                "WHERE datname = current_database()").fetchone()
        assert row is not None
        return int(row[0]), int(row[1])

    def __enter__(self) -> LockSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def start_replica(config: Path, env: dict[str, str], holds: Path
                  ) -> tuple[subprocess.Popen[bytes], str]:
    """A replica whose writes' lock holds go to ``holds`` when it exits (_lock_hold.py)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("_lock_hold.py")),
                             str(holds), "serve", "--config", str(config), "--port",
                             str(port), "--concurrency", "8"],
                            env=env, cwd=ROOT, stderr=subprocess.DEVNULL)
    return proc, f"http://127.0.0.1:{port}"


def wait_ready(procs: list[Any], urls: list[str]) -> None:
    for proc, url in zip(procs, urls, strict=True):
        while True:
            try:
                if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
            if proc.poll() is not None:
                raise SystemExit("a replica did not start")


async def load(urls: list[str], token: str, clients: int, total: int, queries: list[str],
               texts: list[str], offset: int, reads_per_write: int = READS_PER_WRITE
               ) -> dict[str, Any]:
    """``total`` calls from ``clients`` clients: a ``store`` of a new fact every
    ``reads_per_write + 1`` calls and ``recall`` otherwise (0: stores only)."""
    reads: list[float] = []
    writes: list[float] = []
    errors: Counter[int] = Counter()
    per_client = max(1, total // clients)

    async def worker(w: int) -> None:
        async with httpx.AsyncClient(base_url=urls[w % len(urls)], timeout=120,
                                     headers={"Authorization": f"Bearer {token}"}) as http:
            for j in range(per_client):
                i = w * per_client + j
                began = time.perf_counter()
                if i % (reads_per_write + 1) == 0:
                    text = f"{texts[(offset + i) % len(texts)]} (note {offset + i})"
                    response = await http.post("/v1/store", json={"content": text,
                                                                  "type": "FACT"})
                    writes.append(time.perf_counter() - began)
                else:
                    response = await http.post("/v1/recall", json={
                        "query": queries[i % len(queries)], "limit": 10})
                    reads.append(time.perf_counter() - began)
                if response.status_code != 200:
                    errors[response.status_code] += 1

    began = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(clients)))
    return {"reads": reads, "writes": writes, "errors": errors,
            "elapsed": time.perf_counter() - began}


def in_process(memory: Memory, total: int, queries: list[str], texts: list[str]
               ) -> dict[str, float]:
    """The same mix on one Memory, one caller: the cost of the calls without HTTP, and how
    long a write holds its tenant's write lock (timed as in the replicas, ``_lock_hold``):
    what bounds one tenant's writes, however many replicas there are."""
    from _lock_hold import patch

    held: list[tuple[float, float, float]] = []
    patch(held)
    reads: list[float] = []
    writes: list[float] = []
    began_all = time.perf_counter()
    for i in range(total):
        began = time.perf_counter()
        if i % (READS_PER_WRITE + 1) == 0:
            memory.store(f"{texts[i % len(texts)]} (in-process {i})", type="FACT")
            writes.append(time.perf_counter() - began)
        else:
            memory.search(queries[i % len(queries)], 10)
            reads.append(time.perf_counter() - began)
    rate = total / (time.perf_counter() - began_all)
    holds = [h for _, h, _ in held]
    return {"rate": rate, "read_p50": pct(reads, .5), "write_p50": pct(writes, .5),
            "lock_p50": pct(holds, .5), "lock_p95": pct(holds, .95)}


def raw_sql(url: str, schema: str, total: int) -> dict[str, float]:
    """The engine underneath: the store's full-text search and a one-row insert, as plain
    SQL on the same tables (a floor no layer above PostgreSQL can go under)."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema)))
        queries = realistic_queries(50)
        began = time.perf_counter()
        for i in range(total):
            words = " | ".join(w for w in queries[i % len(queries)].split() if w.isalpha())
            conn.execute("SELECT id FROM entries, to_tsquery('english', %s) q "
                         "WHERE search_tsv @@ q ORDER BY ts_rank_cd(search_tsv, q) DESC "
                         "LIMIT 10", (words or "deploy",)).fetchall()
        search = (time.perf_counter() - began) / total
        conn.execute("CREATE TEMP TABLE raw_insert (id TEXT PRIMARY KEY, body TEXT)")
        began = time.perf_counter()
        for i in range(total):
            conn.execute("INSERT INTO raw_insert VALUES (%s, %s)", (f"r{i}", "x" * 200))
        insert = (time.perf_counter() - began) / total
    return {"search_ms": 1000 * search, "insert_ms": 1000 * insert}


WORKLOADS = {"writes": 0, "mixed": READS_PER_WRITE}


def run_once(url: str, procs: list[Any], urls: list[str], token: str, clients: int,
             requests: int, queries: list[str], texts: list[str], offset: int,
             reads_per_write: int, pg_pids: Any, probe: int) -> dict[str, Any]:
    """One workload on running replicas, with its CPU, lock waits and transactions."""
    from pg_transactions import SETTLE_S, database_transactions

    time.sleep(SETTLE_S)  # every backend has reported its counters
    xacts0 = database_transactions(url)
    with LockSampler(url) as sampler:
        dead0, _ = sampler.stats()
        pg = {pid: cpu_seconds(pid) for pid in pg_pids()}
        replica0 = [cpu_seconds(p.pid) for p in procs]
        own0 = os.times()
        began_epoch = time.time()
        result = asyncio.run(load(urls, token, clients, requests, queries, texts, offset,
                                  reads_per_write))
        ended_epoch = time.time()
        pg_cpu = sum(cpu_seconds(pid) - pg.get(pid, 0.0) for pid in pg_pids())
        replica_cpu = sum(cpu_seconds(p.pid) for p in procs) - sum(replica0)
        own1 = os.times()
        dead1, _ = sampler.stats()
    time.sleep(SETTLE_S)
    # the sampler's own queries and this reading's connection are not the replicas'
    xacts = database_transactions(url) - xacts0 - probe - sampler.samples - 2
    done = len(result["reads"]) + len(result["writes"])
    return {**result, "done": done, "rate": done / result["elapsed"],
            "window": (began_epoch, ended_epoch),
            "replica_cpu": replica_cpu, "pg_cpu": pg_cpu,
            "client_cpu": own1.user + own1.system - own0.user - own0.system,
            "xacts": xacts / max(1, done), "deadlocks": dead1 - dead0,
            "lock_share": sampler.with_waiters / max(1, sampler.samples),
            "kinds": sampler.kinds}


def capacity(rows: list[dict[str, Any]], quiet_hold: float) -> list[str]:
    """The model on paper: CPU per request (three replicas' runs) against what 3 replica
    machines and one database machine of N cores each offer; one tenant's writes are
    bounded by the database's CPU per write and by 1 / the lock's hold, taken as measured
    with one caller (``quiet_hold``: the database's own time; under the benchmark's load
    on a small machine the hold stretches with the wait for a core, printed beside)."""
    mixed = [r for r in rows if r["workload"] == "mixed"]
    writes = [r for r in rows if r["workload"] == "writes"]
    if not mixed:
        return []
    last = max(mixed, key=lambda r: r["replicas"])
    replica_ms = 1000 * last["replica_cpu"] / last["done"]
    pg_ms = 1000 * last["pg_cpu"] / last["done"]
    write_pg_ms = (1000 * max(writes, key=lambda r: r["replicas"])["pg_cpu"]
                   / max(writes, key=lambda r: r["replicas"])["done"]) if writes else pg_ms
    holds = [h for r in rows for h in r["holds"]]
    loaded_hold = statistics.fmean(holds) if holds else float("nan")
    lock_writes = 1 / quiet_hold
    lines = [f"model (CPU per request, {last['replicas']} replicas: mixed, replica "
             f"{replica_ms:.1f} ms and PostgreSQL {pg_ms:.1f} ms; a write, PostgreSQL "
             f"{write_pg_ms:.1f} ms; the tenant lock held {1000 * quiet_hold:.2f} ms with "
             f"one caller, {1000 * loaded_hold:.2f} ms on average in these runs):",
             f"{'cores':>6} {'3 replicas req/s':>17} {'database req/s':>15} "
             f"{'one tenant, mixed req/s':>24} {'one tenant writes/s':>20}"]
    for cores in (4, 8, 16):
        replicas_cap = 3 * cores * 1000 / replica_ms
        db_cap = cores * 1000 / pg_ms
        tenant_mixed = min(replicas_cap, db_cap, lock_writes * (READS_PER_WRITE + 1))
        tenant_writes = min(lock_writes, cores * 1000 / write_pg_ms)
        lines.append(f"{cores:6d} {replicas_cap:17.0f} {db_cap:15.0f} {tenant_mixed:24.0f} "
                     f"{tenant_writes:20.0f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=2_000)
    parser.add_argument("--requests", type=int, default=480)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--workloads", nargs="+", choices=sorted(WORKLOADS),
                        default=["writes", "mixed"])
    args = parser.parse_args()
    from tulving.testing.postgres import drop_schema, new_schema_name, server_url

    url = server_url()
    if url is None:
        raise SystemExit("no PostgreSQL server could be had")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TULVING_")}
    env["TULVING_PLUGINS"] = "tulving"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cores = os.cpu_count() or 1
    pg_pids = postgres_pids(url)
    print(f"load average {os.getloadavg()[0]:.2f} on {cores} cores; "
          f"{args.entries:,} entries, {args.requests} requests per run, "
          f"{args.clients} clients", file=sys.stderr)
    schema = new_schema_name("replicabench")
    texts = realistic_texts(args.entries + args.requests * 8)
    queries = realistic_queries(200)
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "tulving.toml"
            config.write_text(f'[tulving]\npath = {url!r}\nembedder = "hashing"\n'
                              f'[tulving.options.storage]\nschema = "{schema}"\n'
                              f'max_size = 12\n')
            options = {"storage": {"schema": schema, "max_size": 4}}
            with Memory(url, agent_id="default", user_id="bench", embedder="hashing",
                        options=options) as memory:
                for i in range(0, args.entries, 1000):
                    memory.store_many({"content": t, "type": "FACT"}
                                      for t in texts[i:min(i + 1000, args.entries)])
                base = in_process(memory, args.requests // 2, queries, texts[args.entries:])
                from tulving.interfaces.auth.bearer_tokens import registry_for

                token = registry_for(memory).create("bench", user_id="bench")[1]
            raw = raw_sql(url, schema, 200)
            print(f"\nin-process (one Memory, one caller): {base['rate']:.1f} calls/s; "
                  f"search p50 {1000 * base['read_p50']:.2f} ms, store p50 "
                  f"{1000 * base['write_p50']:.2f} ms, of which the tenant's write lock "
                  f"is held p50 {1000 * base['lock_p50']:.2f} / p95 "
                  f"{1000 * base['lock_p95']:.2f} ms")
            print(f"raw PostgreSQL on the same tables: full-text top-10 "
                  f"{raw['search_ms']:.2f} ms, one-row insert {raw['insert_ms']:.2f} ms")
            print(f"\n{'replicas':>8} {'workload':>8} {'req/s':>7} {'vs 1':>5} "
                  f"{'read p50/p95 ms':>16} {'write p50/p95 ms':>17} {'lock held p50/p95':>18} "
                  f"{'xacts':>5} {'planned':>7} {'err':>4} {'lock-wait':>9} {'deadl':>5}  "
                  f"CPU ms a request: replicas/pg/clients")
            from pg_transactions import probe_cost

            probe = probe_cost(url)
            offset = args.entries
            first: dict[str, float] = {}
            kinds: Counter[str] = Counter()
            for replicas in args.replicas:
                holds_files = [Path(tmp) / f"holds-{replicas}-{i}.json"
                               for i in range(replicas)]
                started = [start_replica(config, env, f) for f in holds_files]
                procs, urls = [p for p, _ in started], [u for _, u in started]
                runs = []
                try:
                    wait_ready(procs, urls)
                    asyncio.run(load(urls, token, 4, 16, queries, texts, offset))  # warm
                    offset += 16
                    for workload in args.workloads:
                        run = run_once(url, procs, urls, token, args.clients, args.requests,
                                       queries, texts, offset, WORKLOADS[workload], pg_pids,
                                       probe)
                        offset += args.requests
                        runs.append({**run, "workload": workload, "replicas": replicas})
                    rss = [rss_mb(p.pid) for p in procs]
                finally:
                    for proc in procs:
                        proc.send_signal(signal.SIGTERM)
                    for proc in procs:
                        proc.wait(timeout=60)
                holds = [h for f in holds_files for h in read_holds(f)]
                for run in runs:
                    began, ended = run["window"]
                    mine = [(h, planned) for at, h, planned in holds if began <= at <= ended]
                    run["holds"] = [h for h, _ in mine]
                    run["planned"] = sum(p for _, p in mine) / max(1, len(mine))
                    kinds.update(run["kinds"])
                    rows.append(run)
                    first.setdefault(run["workload"], run["rate"])
                    done = run["done"]
                    print(f"{replicas:8d} {run['workload']:>8} {run['rate']:7.1f} "
                          f"{run['rate'] / first[run['workload']]:5.2f} "
                          f"{1000 * pct(run['reads'], .5):7.1f}/"
                          f"{1000 * pct(run['reads'], .95):<8.1f} "
                          f"{1000 * pct(run['writes'], .5):7.1f}/"
                          f"{1000 * pct(run['writes'], .95):<9.1f} "
                          f"{1000 * pct(run['holds'], .5):8.2f}/"
                          f"{1000 * pct(run['holds'], .95):<9.2f} "
                          f"{run['xacts']:5.2f} {100 * run['planned']:6.0f}% "
                          f"{sum(run['errors'].values()):4d} "
                          f"{100 * run['lock_share']:8.0f}% {run['deadlocks']:5d}  "
                          f"{1000 * run['replica_cpu'] / done:.1f}/"
                          f"{1000 * run['pg_cpu'] / done:.1f}/"
                          f"{1000 * run['client_cpu'] / done:.1f}")
                print(f"{'':8} replica RSS after the runs: "
                      + ", ".join(f"{r:.0f} MB" for r in rss))
            total = sum(kinds.values())
            print("\nlocks waited on (share of lock-wait samples): " + (", ".join(
                f"{k} {100 * n / total:.0f}%" for k, n in kinds.most_common(5)) or "none"))
            print()
            for line in capacity(rows, base["lock_p50"]):
                print(line)
            print(json.dumps({"in_process_calls_s": round(base["rate"], 1),
                              "raw": {k: round(v, 3) for k, v in raw.items()},
                              "runs": [{"replicas": r["replicas"], "workload": r["workload"],
                                        "rate": round(r["rate"], 1),
                                        "lock_p50_ms": round(1000 * pct(r["holds"], .5), 2),
                                        "lock_p95_ms": round(1000 * pct(r["holds"], .95), 2),
                                        "xacts": round(r["xacts"], 2),
                                        "planned": round(r["planned"], 3),
                                        "replica_ms": round(1000 * r["replica_cpu"]
                                                            / r["done"], 2),
                                        "pg_ms": round(1000 * r["pg_cpu"] / r["done"], 2)}
                                       for r in rows]}))
    finally:
        drop_schema(url, schema)


def read_holds(path: Path) -> list[tuple[float, float, float]]:
    """(epoch when the lock was taken, seconds held, 1.0 if planned) of one replica's
    writes."""
    from _lock_hold import read

    return read(str(path))


if __name__ == "__main__":
    main()
