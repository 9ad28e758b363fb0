"""Another tenant's latency while one tenant sends texts built to be costly to mask, on a
real ``tulving serve`` (httpx on 127.0.0.1).

    PYTHONPATH=. .venv/bin/python benchmarks/redaction_fairness.py \\
        [--rounds 3] [--attackers 6] [--searches 60] [--timeout 2] [--concurrency 8]

The victim (user u1, 120 short memories) sends searches one after another;
its p50/p95 are measured quiet, then while ``--attackers`` clients of another tenant (u2)
each send the costliest 100 kB store of ``tests/fixtures/secrets_corpus/adversarial.py``
as soon as the last is answered. Quiet and attacked phases alternate for ``--rounds``
rounds so that the machine's load weighs on both alike; the table gives each round and
the spread, the server's thread count at most, and the attacker's answers (200 stored,
503 past ``--timeout``). The target: the victim's attacked p95 within 2x its quiet p95.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "secrets_corpus"))
import adversarial  # noqa: E402
from http_limits import cli, serve  # noqa: E402

QUERIES = ["what did Ann say about the hiking trip", "dinner plans for friday",
           "the book club meeting", "where is the new office", "weekend in the mountains"]


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return -1


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def searches(url: str, token: str, count: int) -> list[float]:
    laps = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"},
                      timeout=60) as c:
        for i in range(count):
            began = time.perf_counter()
            r = c.post("/v1/search", json={"query": QUERIES[i % len(QUERIES)], "top_k": 5})
            laps.append((time.perf_counter() - began) * 1000)
            if r.status_code != 200:
                raise SystemExit(f"victim got {r.status_code}: {r.text[:300]}")
    return laps


def attack(url: str, token: str, stop: threading.Event, text: str) -> list[int]:
    statuses = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"},
                      timeout=120) as c:
        while not stop.is_set():
            statuses.append(c.post("/v1/store", json={"content": text,
                                                      "type": "FACT"}).status_code)
    return statuses


def pool_watch(pid: int, stop: threading.Event, counts: list[int]) -> threading.Thread:
    """A thread noting the server's thread count every 50 ms until ``stop``."""
    def watch() -> None:
        while not stop.is_set():
            counts.append(threads(pid))
            time.sleep(0.05)
    watcher = threading.Thread(target=watch)
    watcher.start()
    return watcher


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--attackers", type=int, default=6)
    parser.add_argument("--searches", type=int, default=60)
    parser.add_argument("--timeout", default="2")
    parser.add_argument("--concurrency", default="8")
    parser.add_argument("--unit", default="stripe key, spaced",
                        help="the adversarial unit repeated to 99,000 characters")
    args = parser.parse_args()
    folder = tempfile.mkdtemp()
    attacker = json.loads(cli("serve", "token", "create", "attacker", "--bind-user", "u2",
                              "--path", f"{folder}/server.db", "--embedder", "hashing",
                              "--json"))["token"]
    proc, url, victim = serve(folder, "hashing", "--vectors", "exact", "--timeout",
                              args.timeout, "--concurrency", args.concurrency)
    tokens = {"victim": victim["Authorization"].split()[-1], "attacker": attacker}
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {tokens['victim']}"},
                          timeout=60) as c:
            for i in range(120):
                c.post("/v1/store", json={"content": f"{QUERIES[i % 5]}: note {i} about the "
                                                     "week", "type": "FACT"})
        text = adversarial.text_of(adversarial.FIXED[args.unit], 99_000)
        searches(url, tokens["victim"], 10)  # warm up
        rows = []
        for round_ in range(1, args.rounds + 1):
            quiet = searches(url, tokens["victim"], args.searches)
            stop = threading.Event()
            most = threads(proc.pid)
            with concurrent.futures.ThreadPoolExecutor(args.attackers) as pool:
                clients = [pool.submit(attack, url, tokens["attacker"], stop, text)
                           for _ in range(args.attackers)]
                time.sleep(1.0)  # the attack is under way
                counts: list[int] = []
                watcher = pool_watch(proc.pid, stop, counts)
                attacked = searches(url, tokens["victim"], args.searches)
                stop.set()
                statuses = [s for f in clients for s in f.result()]
                watcher.join()
                most = max([most, *counts])
            rows.append((round_, quiet, attacked, most, statuses))
            time.sleep(2.0)  # the last scans end
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
              f"--timeout {args.timeout} --concurrency {args.concurrency}, "
              f"{args.attackers} attackers of {args.unit!r} x 99,000 chars\n")
        print("| round | victim quiet p50 (ms) | quiet p95 | attacked p50 | attacked p95 "
              "| p95 ratio | server threads (max) | attacker 200 / 503 |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        ratios = []
        for round_, quiet, attacked, most, statuses in rows:
            ratio = percentile(attacked, 0.95) / percentile(quiet, 0.95)
            ratios.append(ratio)
            print(f"| {round_} | {statistics.median(quiet):.1f} | {percentile(quiet, 0.95):.1f} "
                  f"| {statistics.median(attacked):.1f} | {percentile(attacked, 0.95):.1f} "
                  f"| {ratio:.2f}x | {most} | {statuses.count(200)} / {statuses.count(503)} |")
        print(f"\np95 ratio: median {statistics.median(ratios):.2f}x, "
              f"spread {min(ratios):.2f}x-{max(ratios):.2f}x (target: within 2x)")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
