"""No existence oracle (issue 34, finding 6): an id of another tenant answers exactly as an
id nobody has (status, body, timing within noise) on every ``/v1`` endpoint that takes an
id, while the refusal is still audited in the caller's own chain. It used to answer 403
``ScopeError`` where a missing id answered 404."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.http.conftest import Server
from tulving.domain.ids import new_id

Probe = Callable[[httpx.Client, str], httpx.Response]

PROBES: dict[str, Probe] = {
    "get": lambda c, i: c.get(f"/v1/memory/{i}"),
    "get archived": lambda c, i: c.get(f"/v1/memory/{i}", params={"include_archived": True}),
    "get as of": lambda c, i: c.get(f"/v1/memory/{i}",
                                    params={"as_of": "2030-01-01T00:00:00Z"}),
    "history": lambda c, i: c.get(f"/v1/memory/{i}/history"),
    "audit": lambda c, i: c.get(f"/v1/memory/{i}/audit"),
    "forget": lambda c, i: c.delete(f"/v1/forget/{i}"),
    "forget hard": lambda c, i: c.delete(f"/v1/forget/{i}", params={"hard": True}),
    "correct": lambda c, i: c.post("/v1/correct", json={"memory_id": i, "content": "x"}),
    "correct with reason": lambda c, i: c.post(
        "/v1/correct", json={"memory_id": i, "content": "x", "reason": "why"}),
}


@pytest.fixture(scope="module")
def foreign(server: Server) -> str:
    """An id of alice's (tenant u1) that bob (tenant u2) will probe."""
    stored = httpx.post(f"{server.url}/v1/store", headers=server.headers("alice"), timeout=30,
                        json={"content": "alice's launch code is pelican", "type": "FACT",
                              "key": "launch/code"})
    assert stored.status_code == 200, stored.text
    return str(stored.json()["stored"]["id"])


def missing() -> str:
    return new_id(datetime.now(UTC))


def _shape(response: httpx.Response, entry_id: str) -> tuple[int, Any]:
    return response.status_code, response.text.replace(entry_id, "<id>")


@pytest.mark.parametrize("probe", sorted(PROBES))
def test_a_foreign_id_answers_exactly_as_a_missing_one(
        server: Server, foreign: str, probe: str) -> None:
    with httpx.Client(base_url=server.url, headers=server.headers("bob"), timeout=30) as bob:
        absent = missing()
        theirs = PROBES[probe](bob, foreign)
        nobody = PROBES[probe](bob, absent)
        assert _shape(theirs, foreign) == _shape(nobody, absent)
        assert theirs.status_code == 404, theirs.text
        assert theirs.json()["error"]["type"] == "NotFoundError"
        assert "pelican" not in theirs.text and "visible" not in theirs.text
        assert dict(theirs.headers).keys() == dict(nobody.headers).keys()
    with httpx.Client(base_url=server.url, headers=server.headers("alice"), timeout=30) as alice:
        assert alice.get(f"/v1/memory/{foreign}").json()["entry"]["content"].endswith("pelican")


def test_the_refusal_is_audited_in_the_callers_chain(server: Server, foreign: str) -> None:
    with httpx.Client(base_url=server.url, headers=server.headers("bob"), timeout=30) as bob:
        assert bob.get(f"/v1/memory/{foreign}").status_code == 404
        absent = missing()
        assert bob.get(f"/v1/memory/{absent}").status_code == 404
        audit = bob.get("/v1/audit").text
    refused = [line for line in audit.splitlines() if '"action": "refused"' in line]
    assert any(foreign in line for line in refused), audit[-2000:]
    assert not any(absent in line for line in refused)  # a missing id is no refusal
    assert "pelican" not in audit


def test_timing_does_not_tell_a_foreign_id_from_a_missing_one(
        server: Server, foreign: str) -> None:
    """Medians over many interleaved requests, per endpoint. The bound is loose on purpose
    (a shared 2-core machine): it fails only on a systematic difference such as a write on
    one path and not the other, which costs milliseconds a request."""
    rounds = 25
    with httpx.Client(base_url=server.url, headers=server.headers("bob"), timeout=30) as bob:
        for name in ("get", "history", "forget", "correct"):
            probe = PROBES[name]
            timings: dict[str, list[float]] = {"foreign": [], "missing": []}
            for i in range(rounds * 2):
                which = "foreign" if i % 2 == 0 else "missing"
                target = foreign if which == "foreign" else missing()
                began = time.perf_counter()
                assert probe(bob, target).status_code == 404
                timings[which].append(time.perf_counter() - began)
            theirs = statistics.median(timings["foreign"])
            nobody = statistics.median(timings["missing"])
            assert abs(theirs - nobody) < max(0.004, 0.5 * nobody), (name, theirs, nobody)
