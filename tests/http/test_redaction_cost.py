"""What a text built to be costly to mask does to a real ``tulving serve`` (httpx on
127.0.0.1): 100 kB of one vendor prefix is stored and shown masked well inside the
time limit (it took minutes), and calls that cannot finish in it are answered 503, stop
their work, write nothing and hold no thread beyond ``--concurrency`` (12 such calls
once grew a server from 3 threads to 22 and kept it busy for a minute and a half)."""

from __future__ import annotations

import concurrent.futures
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.http.conftest import Server, start_server, stop_server

sys.path.insert(0, str(Path(__file__).parents[1] / "fixtures" / "secrets_corpus"))
import adversarial

CONCURRENCY = 2


#: Shorter than a costly 100 kB text takes to scan, so most of them run past it.
TIMEOUT = "0.5"


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("tight"), "--timeout", TIMEOUT,
                       "--concurrency", str(CONCURRENCY))
    yield srv
    stop_server(srv)


def _status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


def _active(c: httpx.Client) -> int:
    """The store's active count (retried: a small call may itself pass so short a limit
    on a loaded machine)."""
    for _ in range(20):
        answer = c.get("/v1/stats")
        if answer.status_code == 200:
            return int(answer.json()["stats"]["active"])
        time.sleep(0.2)
    raise AssertionError(answer.text)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks


def test_a_long_run_of_one_vendor_prefix_is_stored_and_shown_masked_in_time(
        server: Server) -> None:
    text = "deploy key " + adversarial.text_of("ghp_", 99_000)
    with httpx.Client(base_url=server.url, headers=server.headers("alice"),
                      timeout=90) as c:
        began = time.perf_counter()
        stored = c.post("/v1/store", json={"content": text, "type": "FACT"})
        took = time.perf_counter() - began
        assert stored.status_code == 200, (took, stored.text[:300])
        assert took < 5.0, took
        assert stored.json()["stored"]["content"] == "deploy key [REDACTED:github_token]"
        found = c.post("/v1/search", json={"query": "deploy key"})
        assert found.status_code == 200
        assert "ghp_ghp_" not in found.text and "[REDACTED:github_token]" in found.text


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_calls_past_the_timeout_stop_their_work_and_hold_no_more_threads(
        tight: Server) -> None:
    """Six clients sending the costliest 100 kB texts for three seconds, each a new one
    as soon as the last is answered: each is answered within its limit (most 503, past
    it), the server never runs more than ``--concurrency`` of them at once (a call
    answered 503 keeps its thread's slot until the thread stops), its CPU is idle soon
    after the last answer (the scans stopped at their next safe point) and only the calls
    answered 200 wrote anything (the warm-up write is counted in the baseline)."""
    costly = adversarial.text_of(adversarial.FIXED["stripe key, spaced"], 99_000)
    pid = tight.proc.pid
    with httpx.Client(base_url=tight.url, headers=tight.headers("bob"), timeout=60) as c:
        # One small write first: it starts the workers a tenant's first write starts (the
        # enrichment worker stays), so the baseline counts them and the rise counts calls.
        for _ in range(20):
            if c.post("/v1/store", json={"content": "warm up the workers",
                                         "type": "FACT"}).status_code == 200:
                break
            time.sleep(0.2)
        time.sleep(0.5)
        before = _active(c)
        baseline = _status(pid, "Threads")
        until = time.monotonic() + 3.0

        def attack(_: int) -> list[int]:
            statuses = []
            with httpx.Client(base_url=tight.url, headers=tight.headers("bob"),
                              timeout=60) as own:
                while time.monotonic() < until:
                    statuses.append(own.post("/v1/store", json={
                        "content": costly, "type": "FACT"}).status_code)
            return statuses

        most = baseline
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            answers = [pool.submit(attack, i) for i in range(6)]
            while not all(a.done() for a in answers):
                most = max(most, _status(pid, "Threads"))
                time.sleep(0.02)
        statuses = [s for a in answers for s in a.result()]
        assert set(statuses) <= {200, 503} and 503 in statuses, statuses
        assert most - baseline <= CONCURRENCY + 1, (baseline, most, statuses)
        time.sleep(1.0)  # the last scans reach a safe point (a piece of 8 kB)
        cpu = _cpu_seconds(pid)
        time.sleep(1.0)
        assert _cpu_seconds(pid) - cpu < 0.3, "the abandoned calls kept working"
        # every call sent the same text: those answered 200 are one entry (the others
        # restate it), and a call answered 503 wrote nothing
        assert _active(c) == before + (1 if 200 in statuses else 0)
