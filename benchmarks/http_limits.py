"""Bounded requests (issue 42): a real ``tulving serve`` on 127.0.0.1, one large
``remember`` at its size limit beside a stream of small calls, then one over the limit,
then one cut by ``--timeout``. Prints the largest ``remember`` accepted, its time, the
server's resident memory before and at its peak (``VmHWM``), and what the small calls saw
(their latency while the large one ran, and whether any was refused).

    PYTHONPATH=. .venv/bin/python benchmarks/http_limits.py [--embedder local] \\
        [--chars 100000] [--timeout 60]

The text is a transcript of two speakers (``Ann: ...`` / ``Bob: ...``) of about 80
characters a turn: every turn becomes a memory, which is what makes a large remember
expensive. The raw cost beside it: the same text through ``Memory.remember`` in this
process, without the server.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def transcript(chars: int, seed: int = 42) -> str:
    rng = random.Random(seed)
    words = ("review deploy budget friday cluster design meeting module lunch database "
             "release plan team notes moved after said about part").split()
    lines, size = [], 0
    while size < chars:
        line = f"{rng.choice(['Ann', 'Bob'])}: " + " ".join(rng.choice(words) for _ in range(12))
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:chars]


def cli(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "tulving.interfaces.cli.main", *args],
                         capture_output=True, text=True, cwd=str(ROOT), check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    return out.stdout


def rss_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(folder: str, embedder: str, *extra: str) -> tuple[subprocess.Popen[bytes], str, dict[str, str]]:
    path = f"{folder}/server.db"
    common = ["--path", path, "--embedder", embedder]
    token = json.loads(cli("serve", "token", "create", "bench", "--bind-user", "u1",
                           *common, "--json"))["token"]
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tulving.interfaces.cli.main", "serve",
                             *common, "--port", str(port), *extra], cwd=str(ROOT),
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL,
                            stderr=open(f"{folder}/server.log", "wb"))  # noqa: SIM115
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.1)
    return proc, url, {"Authorization": f"Bearer {token}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--chars", type=int, default=100_000,
                        help="the largest remember to send (the server's default limit)")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    text = transcript(args.chars)
    folder = tempfile.mkdtemp()
    proc, url, headers = serve(folder, args.embedder, "--timeout", str(args.timeout),
                               "--max-remember-chars", str(args.chars))
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=600) as c:
            c.post("/v1/store", json={"content": "warm up the model", "type": "FACT"})
            idle = rss_mb(proc.pid, "VmRSS")
            small: list[tuple[float, int]] = []
            done = threading.Event()

            def beside() -> None:
                with httpx.Client(base_url=url, headers=headers, timeout=600) as s:
                    while not done.is_set():
                        began = time.perf_counter()
                        r = s.post("/v1/search", json={"query": "budget review"})
                        small.append((time.perf_counter() - began, r.status_code))
                        time.sleep(0.2)

            thread = threading.Thread(target=beside)
            thread.start()
            began = time.perf_counter()
            big = c.post("/v1/remember", json={"text": text})
            took = time.perf_counter() - began
            done.set()
            thread.join()
            peak = rss_mb(proc.pid, "VmHWM")
            entries = len(big.json().get("entries", [])) if big.status_code == 200 else 0
            over_began = time.perf_counter()
            over = c.post("/v1/remember", json={"text": transcript(1_900_000)})
            over_took = time.perf_counter() - over_began
        lat = sorted(t for t, _ in small)
        print(f"embedder {args.embedder}; server --timeout {args.timeout:g}, "
              f"--max-remember-chars {args.chars}; load average {os.getloadavg()[0]:.1f}\n")
        print("| measure | value |\n|---|---|")
        print(f"| largest remember accepted | {len(text):,} characters, {entries} memories, "
              f"status {big.status_code} |")
        print(f"| its time | {took:.1f} s ({len(text) / took:,.0f} characters/s) |")
        print(f"| server resident memory: idle / peak | {idle:.0f} MB / {peak:.0f} MB |")
        if lat:
            print(f"| small searches beside it | {len(lat)} calls, p50 "
                  f"{statistics.median(lat) * 1000:.0f} ms, max {lat[-1] * 1000:.0f} ms, "
                  f"statuses {sorted({s for _, s in small})} |")
        print(f"| 1.9 M characters | status {over.status_code} in {over_took * 1000:.0f} ms: "
              f"{over.json()['error']['message'][:90]} |")
    finally:
        proc.terminate()
        proc.wait(30)
        log = Path(f"{folder}/server.log").read_text(errors="replace")
        if "Traceback" in log:
            print("\nserver log:\n" + log[-3000:])
    # the raw cost beside it: the same remember in this process, no server
    from tulving import Memory

    with Memory(":memory:", agent_id="raw", embedder=args.embedder, vectors="exact") as m:
        m.store("warm up the model", type="FACT")
        began = time.perf_counter()
        m.remember(text)
        raw = time.perf_counter() - began
    print(f"| raw Memory.remember of the same text, in process | {raw:.1f} s "
          f"(server / raw {took / raw:.2f}x) |")


if __name__ == "__main__":
    main()
