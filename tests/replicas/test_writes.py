"""Eight, then sixteen clients storing near-identical texts through three replicas at once.

Texts that differ only in a number are similar enough to flag each other as conflicts,
restatements with a full stop are updates (the new wording supersedes the old one), exact
restatements are no-ops, and keyed writes supersede by key. Whatever the interleaving:
no 5xx, no PostgreSQL deadlock, every link two-way, one active entry per key and per text.
The writes are planned before their tenant's write lock and checked under it (issue 44):
with sixteen clients of one tenant nearly every plan races another write of the same
texts, which is what the check must catch.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import Any

import pytest

from tests.replicas.checks import deadlocks, duplicate_actives, link_problems, tenant_entries

pytestmark = pytest.mark.postgres

#: (clients, stores per client, tenant)
RUNS = [(8, 20, "dup"), (16, 12, "dup16")]
TEMPLATE = "The payments service deploy window is {n} minutes on weekdays for team alpha"


def _body(rng: random.Random) -> dict[str, Any]:
    roll = rng.random()
    text = TEMPLATE.format(n=rng.randint(10, 16))
    if roll < 0.15:
        return {"content": f"config value {rng.randint(0, 99)}", "type": "FACT",
                "key": f"cfg/k{rng.randint(0, 2)}", "agent_id": "team"}
    if roll < 0.3:
        text += "."  # the same words: an update of the unpunctuated one
    return {"content": text, "type": "FACT", "agent_id": "team"}


@pytest.mark.parametrize(("count", "stores", "tenant"), RUNS,
                         ids=[f"{n}-clients" for n, _, _ in RUNS])
def test_near_duplicate_stores_through_three_replicas(cluster: Any, clients: Any, back: Any,
                                                      count: int, stores: int,
                                                      tenant: str) -> None:
    before = deadlocks(back)
    statuses: Counter[int] = Counter()
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(count)

    def client(i: int) -> None:
        rng = random.Random(i)
        http = clients(i)
        start.wait()
        for _ in range(stores):
            response = http.post("/v1/store", json=_body(rng), headers=cluster.headers(tenant))
            with lock:
                statuses[response.status_code] += 1
                if response.status_code != 200:
                    errors.append(response.text[:300])

    threads = [threading.Thread(target=client, args=(i,)) for i in range(count)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    elapsed = time.perf_counter() - began
    print(f"\n{count * stores} near-duplicate stores through 3 replicas in {elapsed:.1f} s: "
          f"{dict(statuses)}")
    assert statuses[200] == count * stores, errors[:5]
    entries = tenant_entries(back, f"u-{tenant}")
    assert sum(1 for e in entries.values() if e["conflict_ids"]) > 0  # flags were raised
    assert link_problems(entries) == []
    assert duplicate_actives(entries) == []
    assert deadlocks(back) == before
