"""``kill -9`` of a replica under load: no acknowledged write lost, none duplicated.

Four clients write through the replicas: unique facts (a failure is retried through the
next replica with the same body, as a load balancer would), keyed writes over two shared
keys, and ``remember`` calls with an idempotency key hedged to two replicas at once (a
client cutting its tail latency). One replica is killed mid-run and started again. Then
every acknowledged fact is there exactly once, every idempotency key wrote one set of
entries, each key has one active entry and a complete chain, and the agent has one open
implicit session.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import httpx
import pytest

from tests.replicas.checks import (
    duplicate_actives,
    link_problems,
    open_implicit_sessions,
    tenant_entries,
)

pytestmark = pytest.mark.postgres

CLIENTS = 4
RUN_S = 5.0
KILL_AFTER_S = 1.5
AGENT = "loader"


def test_kill_minus_nine_under_load(cluster: Any, back: Any) -> None:
    urls = [r.url for r in cluster.replicas]
    headers = cluster.headers("kill")
    victim = cluster.replicas[2]
    acknowledged: dict[str, str] = {}  # fact text -> entry id
    remembered: dict[str, set[str]] = {}  # idempotency key -> entry ids
    statuses: Counter[int | str] = Counter()
    split: list[str] = []  # keys whose two hedges answered with different entries
    lock = threading.Lock()
    stop = time.monotonic() + RUN_S

    def send(http: httpx.Client, url: str, path: str, body: dict[str, Any]) -> Any:
        try:
            response = http.post(url + path, json=body, headers=headers, timeout=30)
        except httpx.TransportError:
            with lock:
                statuses["transport"] += 1
            return None
        with lock:
            statuses[response.status_code] += 1
        return response if response.status_code == 200 else None

    def retried(http: httpx.Client, first: int, path: str, body: dict[str, Any]) -> Any:
        for attempt in range(6):
            response = send(http, urls[(first + attempt) % len(urls)], path, body)
            if response is not None:
                return response.json()
        return None

    def client(i: int) -> None:
        with httpx.Client() as http:
            n = 0
            while time.monotonic() < stop:
                n += 1
                kind = n % 3
                if kind == 0:
                    text = f"fact {i}-{n}: the {i}th loader wrote line {n} of its log"
                    got = retried(http, i + n, "/v1/store", {"content": text, "type": "FACT",
                                                             "agent_id": AGENT})
                    if got is not None:
                        with lock:
                            acknowledged[text] = got["stored"]["id"]
                elif kind == 1:
                    retried(http, i + n, "/v1/store",
                            {"content": f"owner {i}-{n}", "type": "FACT",
                             "key": f"kill/k{n % 2}", "agent_id": AGENT})
                else:
                    key = f"hedge-{i}-{n}"
                    body = {"text": f"User: I want marker{i}x{n}y deployed on Tuesday.",
                            "idempotency_key": key, "agent_id": AGENT}
                    answers: list[Any] = [None, None]

                    def hedge(slot: int, body: dict[str, Any] = body, n: int = n,
                              answers: list[Any] = answers) -> None:
                        answers[slot] = retried(http, i + n + slot, "/v1/remember", body)

                    pair = [threading.Thread(target=hedge, args=(s,)) for s in (0, 1)]
                    for t in pair:
                        t.start()
                    for t in pair:
                        t.join(60)
                    got_ids = [{e["id"] for e in a["entries"]} for a in answers if a]
                    if got_ids:
                        with lock:
                            remembered[key] = set().union(*got_ids)
                            if any(ids != got_ids[0] for ids in got_ids):
                                split.append(key)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    time.sleep(KILL_AFTER_S)
    victim.kill()
    for t in threads:
        t.join(120)
    victim.start()
    victim.wait_ready()
    print(f"\nkill -9 under load: {dict(statuses)}; {len(acknowledged)} facts and "
          f"{len(remembered)} hedged remembers acknowledged")
    assert not [s for s in statuses if isinstance(s, int) and s >= 500], dict(statuses)
    assert acknowledged and remembered
    assert split == [], f"{len(split)} keys answered with two sets of entries"
    entries = tenant_entries(back, "u-kill")
    by_text = Counter(e["content"] for e in entries.values())
    lost = [t for t in acknowledged if by_text[t] == 0]
    doubled = [t for t, count in by_text.items() if count > 1 and t.startswith("fact ")]
    assert lost == [] and doubled == []
    for key, ids in remembered.items():
        marker = "marker" + key.removeprefix("hedge-").replace("-", "x") + "y"
        stored = {e["id"] for e in entries.values() if marker in e["content"]}
        assert stored == ids, f"{key}: {len(stored)} entries for a set of {len(ids)}"
    assert link_problems(entries) == []
    assert duplicate_actives(entries) == []
    assert len(open_implicit_sessions(back, AGENT)) == 1
