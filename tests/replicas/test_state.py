"""State every replica must agree on, kept in the store: jobs and their idempotency keys,
bearer tokens, sessions (explicit and implicit)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

import pytest

from tests.e2e.conftest import ROOT, clean_env
from tests.replicas.checks import open_implicit_sessions

pytestmark = pytest.mark.postgres


def both_at_once(calls: list[Any]) -> list[Any]:
    """Run the calls in threads released together; their results in order."""
    results: list[Any] = [None] * len(calls)
    gate = threading.Barrier(len(calls))

    def run(i: int) -> None:
        gate.wait()
        results[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return results


# -- jobs and idempotency keys ------------------------------------------------------------
ROUNDS = 6


def test_one_idempotency_key_through_two_replicas_writes_one_set(cluster: Any, clients: Any,
                                                                 back: Any) -> None:
    a, b = clients(0), clients(1)
    headers = cluster.headers("idem")
    for r in range(ROUNDS):
        marker = f"zebra{r}quokka"
        body = {"text": f"User: I prefer {marker} tea in the morning. We decided to ship "
                        f"release {marker} on Friday.",
                "idempotency_key": f"round-{r}", "agent_id": "idem"}
        first, second = both_at_once([
            lambda c=c, body=body: c.post("/v1/remember", json=body, headers=headers)
            for c in (a, b)])
        assert first.status_code == second.status_code == 200, (first.text, second.text)
        ids = {e["id"] for e in first.json()["entries"]}
        assert ids and ids == {e["id"] for e in second.json()["entries"]}
        stored = back.rows("SELECT id FROM entries WHERE user_id = 'u-idem' "
                           "AND content LIKE %s", (f"%{marker}%",))
        assert {row["id"] for row in stored} == ids, f"round {r}: more than one set"


# -- tokens -------------------------------------------------------------------------------
_WORKER = """
import json, sys
from tulving import Memory
from tulving.interfaces.auth.bearer_tokens import registry_for
url, schema, prefix, creates, revokes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), json.loads(sys.argv[5])
with Memory(url, agent_id="admin", embedder="hashing", options={"storage": {"schema": schema, "max_size": 2}}) as m:
    registry = registry_for(m)
    print("ready", flush=True)
    sys.stdin.readline()
    made = {}
    for n in range(max(creates, len(revokes))):
        if n < creates:
            made[f"{prefix}-{n}"] = registry.create(f"{prefix}-{n}", user_id="u-tok")[1]
        if n < len(revokes):
            registry.revoke(revokes[n])
    print(json.dumps(made), flush=True)
"""


def _race(cluster: Any, jobs: list[tuple[str, int, list[str]]]) -> dict[str, str]:
    """Token workers (separate processes) released together: (prefix, creates, revokes)."""
    procs = [subprocess.Popen(
        [sys.executable, "-c", _WORKER, cluster.pg_url, cluster.schema, prefix, str(creates),
         json.dumps(revokes)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=clean_env(), cwd=str(ROOT))
        for prefix, creates, revokes in jobs]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    made: dict[str, str] = {}
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-2000:]
        made.update(json.loads(out.strip().splitlines()[-1]))
    return made


def _works(cluster: Any, clients: Any, token: str) -> list[int]:
    return [clients(i).get("/v1/keys", headers={"Authorization": f"Bearer {token}"}).status_code
            for i in range(len(cluster.replicas))]


def test_tokens_created_and_revoked_by_racing_processes(cluster: Any, clients: Any) -> None:
    made = _race(cluster, [("w1", 12, []), ("w2", 12, [])])
    assert len(made) == 24
    broken = {name: codes for name, token in made.items()
              if (codes := _works(cluster, clients, token)) != [200] * len(cluster.replicas)}
    assert broken == {}, f"{len(broken)} of 24 issued tokens do not work"
    # one process revokes what the first made while the other creates more
    revoked = [f"w1-{n}" for n in range(12)]
    more = _race(cluster, [("w3", 0, revoked), ("w4", 12, [])])
    for name, token in made.items():
        expected = 401 if name in revoked else 200
        assert _works(cluster, clients, token) == [expected] * len(cluster.replicas), name
    for name, token in more.items():
        assert _works(cluster, clients, token) == [200] * len(cluster.replicas), name


# -- sessions -----------------------------------------------------------------------------
def test_a_session_started_on_one_replica_is_ended_on_another(cluster: Any, clients: Any,
                                                              back: Any) -> None:
    headers = cluster.headers("sess")
    agent = {"agent_id": "sess-a"}
    started = clients(0).post("/v1/sessions/start", json={**agent, "goal": "migrate ledger"},
                              headers=headers)
    assert started.status_code == 200, started.text
    session = started.json()["session"]["id"]
    for i in (1, 2):
        stored = clients(i).post("/v1/store", json={**agent, "content": f"step {i} done",
                                                    "type": "OBSERVATION"}, headers=headers)
        assert stored.status_code == 200, stored.text
        assert stored.json()["stored"]["session_id"] == session
    again = clients(1).post("/v1/sessions/start", json={**agent, "goal": "another"},
                            headers=headers)
    assert again.status_code == 409  # one explicit session at a time, whichever replica (a conflict)
    # a rolling restart of a replica leaves the agent's session open (others serve it)
    cluster.replicas[2].stop()
    cluster.replicas[2].start()
    cluster.replicas[2].wait_ready()
    assert back.rows("SELECT ended_at FROM sessions WHERE id = %s", (session,))[0][
        "ended_at"] is None
    ended = clients(2).post("/v1/sessions/end", json=agent, headers=headers)
    assert ended.status_code == 200, ended.text
    assert ended.json()["session"]["id"] == session
    row = back.rows("SELECT ended_at, end_reason, summary_id FROM sessions WHERE id = %s",
                    (session,))[0]
    assert row["ended_at"] is not None and row["end_reason"] == "ended"
    assert row["summary_id"] is not None
    assert clients(0).post("/v1/sessions/end", json=agent, headers=headers).json()[
        "session"] == {}  # nothing left to end, on any replica
    fresh = clients(1).post("/v1/sessions/start", json={**agent, "goal": "next"},
                            headers=headers)
    assert fresh.status_code == 200, fresh.text


def test_one_implicit_session_per_agent_whichever_replica_a_write_reaches(
        cluster: Any, clients: Any, back: Any) -> None:
    headers = cluster.headers("sess")
    calls = [lambda i=i: clients(i).post(
        "/v1/store", json={"agent_id": "sess-b", "content": f"note {i}", "type": "FACT"},
        headers=headers) for i in range(6)]
    results = both_at_once(calls)
    assert [r.status_code for r in results] == [200] * 6
    sessions = {r.json()["stored"]["session_id"] for r in results}
    assert len(sessions) == 1
    assert [s["id"] for s in open_implicit_sessions(back, "sess-b")] == list(sessions)
