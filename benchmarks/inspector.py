"""The inspector on a large store: page load and curate-preview latency in a real browser,
beside the API call it makes and curate() in-process, same store, same run.

Usage::

    .venv/bin/python benchmarks/inspector.py                   # 100k entries
    .venv/bin/python benchmarks/inspector.py --entries 10000 --rounds 20

A store of ``--entries`` realistic synthetic memories (hashing embedder: the model's cost is
its own benchmark) is served by a real ``tulving serve`` on 127.0.0.1 and opened in
Debian's Chromium (headless, Playwright). Measured, p50/p95 over ``--rounds``:

* page load: navigation to ``/ui/#/browse`` until the first page of memories is drawn (the
  assets, the token check and one ``/v1/entries`` page of 50);
* curate preview: moving the budget slider until the new block and its candidate table
  are drawn (the debounce of 200 ms is excluded: the clock starts when the request does);
* the same ``/v1/curate`` call with ``explain`` from httpx, and ``curate()`` in-process
  with and without ``explain`` (what the report itself costs);
* opening one memory (fields, history, audit trail): three API calls.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import httpx
from _corpus import realistic_queries, realistic_texts
from http_server import FAST, cli, pct, start

from tulving import Memory

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage"]


def build(path: Path, entries: int) -> None:
    began = time.perf_counter()
    texts = realistic_texts(entries)
    with Memory(path, embedder="hashing", agent_id="default") as memory:
        for i in range(0, entries, 2000):
            memory.store_many({"content": t, "type": ("FACT", "DECISION", "OBSERVATION")[j % 3],
                               "tags": [f"t{j % 20}"]}
                              for j, t in enumerate(texts[i:i + 2000], start=i))
    print(f"built {entries:,} entries in {time.perf_counter() - began:.0f} s", file=sys.stderr)


def ms(values: list[float]) -> str:
    return f"p50 {pct(values, 0.5) * 1000:7.1f} ms   p95 {pct(values, 0.95) * 1000:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--budget", type=int, default=2000)
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("needs Debian's chromium: bash .ci/browser.sh install")
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="tulving-inspector-"))
    path = folder / "store.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TULVING_")}
    build(path, args.entries)
    token = json.loads(cli("serve", "token", "create", "bench", "--path", str(path), *FAST,
                           "--json", env=env))["token"]
    queries = realistic_queries(args.rounds)
    headers = {"Authorization": f"Bearer {token}"}

    with Memory(path, embedder="hashing", agent_id="default") as memory:
        memory.curate(queries[0], token_budget=args.budget)  # warm
        plain, explained = [], []
        for q in queries:
            t = time.perf_counter()
            memory.curate(q, token_budget=args.budget)
            plain.append(time.perf_counter() - t)
            t = time.perf_counter()
            memory.curate(q, token_budget=args.budget, explain=True)
            explained.append(time.perf_counter() - t)

    proc, url, ready = start(str(path), [], env)
    try:
        api_times = []
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            http.post("/v1/curate", json={"query": queries[0], "token_budget": args.budget})
            for q in queries:
                t = time.perf_counter()
                r = http.post("/v1/curate", json={"query": q, "token_budget": args.budget,
                                                 "explain": True})
                api_times.append(time.perf_counter() - t)
                assert r.status_code == 200, r.text
            some_id = http.get("/v1/entries", params={"limit": 1}).json()["entries"][0]["id"]

        loads, previews, opens = [], [], []
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=chromium, args=FLAGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/ui/")
            page.fill("#token", token)
            page.click("#login button[type=submit]")
            for i in range(args.rounds):
                t = time.perf_counter()
                page.goto(f"{url}/ui/?r={i}#/browse")
                page.wait_for_selector("#browse-result tbody tr")
                loads.append(time.perf_counter() - t)
            for i, q in enumerate(queries):
                page.goto(f"{url}/ui/#/curate")
                page.fill("#curate-query", q)
                page.click("#curate-form button[type=submit]")
                page.wait_for_selector("#curated-block")
                page.evaluate("document.getElementById('curate-summary').remove()")
                budget = str(args.budget - 50 * (1 + i % 10))
                with page.expect_request("**/v1/curate") as sent:
                    page.fill("#budget", budget)
                t_request = time.perf_counter()
                sent.value  # noqa: B018 - the request has left: the clock starts here
                page.wait_for_selector("#curate-summary")
                page.wait_for_selector("#curate-result tbody tr")
                previews.append(time.perf_counter() - t_request)
            for _ in range(args.rounds):
                t = time.perf_counter()
                page.goto(f"{url}/ui/#/memory/{some_id}")
                page.wait_for_selector("#history li")
                opens.append(time.perf_counter() - t)
                page.goto(f"{url}/ui/#/timeline")
            browser.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        shutil.rmtree(folder, ignore_errors=True)

    print(f"\nInspector on {args.entries:,} entries (SQLite + hnswlib, hashing embedder), "
          f"{args.rounds} rounds, budget {args.budget} tokens; server ready in {ready:.2f} s")
    print(f"  page load (browse, first page drawn)     {ms(loads)}")
    print(f"  curate preview (slider -> block + table)  {ms(previews)}")
    print(f"  open one memory (fields+history+audit)   {ms(opens)}")
    print(f"  /v1/curate explain=true via httpx        {ms(api_times)}")
    print(f"  curate() in-process, explain=True         {ms(explained)}")
    print(f"  curate() in-process                       {ms(plain)}")
    print(f"  ratios: preview / in-process curate p50 = "
          f"{pct(previews, 0.5) / pct(plain, 0.5):.2f}x; explain / plain p50 = "
          f"{pct(explained, 0.5) / pct(plain, 0.5):.2f}x")


if __name__ == "__main__":
    main()
