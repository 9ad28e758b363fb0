"""Sync through server replicas over one PostgreSQL (issue 32): two real ``tulving serve``
processes share one database (the embedded test server), devices push through one and
pull through the other, many at once.

Before, a PostgreSQL server had no ``/v1/sync`` at all, and two servers sharing a file log
merged the same deltas twice. Now the log, its numbers, the merge watermark and the
quarantine are rows of the store: devices converge whichever replica they reach, every
delta has its own number whichever replica took it, a push retried on the other replica
is the same delta, and each delta is merged exactly once (counted in the tenant's audit
log, where every merge leaves one ``sync_merge`` record).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import ROOT, clean_env
from tests.http.conftest import free_port, wait_healthy
from tulving import Memory
from tulving.client import TulvingClient
from tulving.domain.query import EntryFilter

pytestmark = pytest.mark.postgres


class Replica:
    def __init__(self, config: Path, folder: Path, name: str) -> None:
        self.config, self.folder, self.name = config, folder, name
        self.url = ""
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        port = free_port()
        log = open(self.folder / f"{self.name}.log", "ab")  # noqa: SIM115 - its life long
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tulving.interfaces.cli.main", "serve", "--config",
             str(self.config), "--port", str(port)], env=clean_env(), cwd=str(ROOT),
            stdout=log, stderr=log)
        self.url = f"http://127.0.0.1:{port}"
        wait_healthy(self.url, self.proc, (self.folder / f"{self.name}.log").read_text,
                     what=f"replica {self.name}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            finally:
                if self.proc.poll() is None:
                    self.proc.kill()


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[tuple[list[Replica], str]]:
    from tulving.testing.postgres import drop_schema, new_schema_name, require_server

    url = require_server()
    schema = new_schema_name("syncrep")
    config = tmp_path / "tulving.toml"
    config.write_text(f'[tulving]\npath = "{url}"\nembedder = "hashing"\nvectors = "pgvector"\n'
                      f'[tulving.options.storage]\nschema = "{schema}"\n')
    made = subprocess.run([sys.executable, "-m", "tulving.interfaces.cli.main", "serve",
                           "token", "create", "alice", "--bind-user", "u1", "--config",
                           str(config), "--json"], capture_output=True, text=True,
                          env=clean_env(), cwd=str(ROOT), timeout=120)
    assert made.returncode == 0, made.stderr
    token = json.loads(made.stdout)["token"]
    servers = [Replica(config, tmp_path, f"replica{i}") for i in (1, 2)]
    try:
        for server in servers:
            server.start()
        yield servers, token
    finally:
        for server in servers:
            server.stop()
        drop_schema(url, schema)


def device(tmp_path: Path, name: str) -> Memory:
    return Memory(tmp_path / f"{name}.db", agent_id="dev", user_id="u1", embedder="hashing",
                  vectors="exact")


def state(m: Memory) -> dict[str, tuple[Any, ...]]:
    flt = EntryFilter(partitions=None, include_archived=True)
    return {e.id: (e.content, e.key, e.archived_at, e.superseded_by)
            for e in m.ctx.storage.query(flt)}


def merges(replica: Replica, token: str) -> dict[int, int]:
    """How many times each delta was merged, from the tenant's audit log."""
    response = httpx.get(f"{replica.url}/v1/audit", headers={"Authorization": f"Bearer {token}"},
                         params={"agent_id": "dev"}, timeout=60)
    assert response.status_code == 200, response.text
    counts: dict[int, int] = {}
    for line in response.text.splitlines():
        record = json.loads(line)
        if record["action"] == "sync_merge":
            seq = int(record["details"]["seq"])
            counts[seq] = counts.get(seq, 0) + 1
    return counts


def test_sync_through_two_replicas_converges_and_merges_each_delta_once(
        replicas: tuple[list[Replica], str], tmp_path: Path) -> None:
    (one, two), token = replicas
    a, b = device(tmp_path, "a"), device(tmp_path, "b")
    with a, b, TulvingClient(one.url, token, agent_id="dev") as via_one, \
            TulvingClient(two.url, token, agent_id="dev") as via_two:
        a.store("deploys use blue-green", type="DECISION", key="deploy/how")
        b.store("the staging host is st-3", type="FACT")
        a.sync(via_one)  # pushed through replica 1
        report = b.sync(via_two)  # pulled (and pushed) through replica 2
        assert report.added == 1 and report.not_merged == [] and report.skipped == []
        a.store("deploys use canaries now", type="DECISION", key="deploy/how")
        a.sync(via_one)
        b.sync(via_two)
        a.sync(via_one)
        assert state(a) == state(b) and len(state(a)) == 3
        assert b.get("deploy/how").content == "deploys use canaries now"
        # both replicas serve one log, and each merged what the other took
        assert via_one.sync_list(0, 100) == via_two.sync_list(0, 100)
        for remote in (via_one, via_two):
            found = {h.entry.content for h in remote.search("deploys staging", top_k=10)}
            assert {"deploys use canaries now", "the staging host is st-3"} <= found
        # a push retried through the other replica is the same delta, not merged again
        data = b"TVLBUNDLE-ENC\nopaque retried push"
        first, again = via_one.sync_push("ab12", data, True), via_two.sync_push("ab12", data, True)
        assert first["seq"] == again["seq"] and first["new"] and not again["new"]
    counts = merges(one, token)
    assert counts and set(counts.values()) == {1}, counts


def test_many_devices_through_both_replicas_at_once(replicas: tuple[list[Replica], str],
                                                    tmp_path: Path) -> None:
    """Six devices sync three rounds at once, alternating replicas: every delta gets its
    own number, both replicas list the same log, every delta is merged exactly once, and
    the devices converge once the rounds are over."""
    (one, two), token = replicas
    names = [f"d{i}" for i in range(6)]
    errors: list[BaseException] = []

    def work(i: int, name: str) -> None:
        try:
            with device(tmp_path, name) as m:
                for round_ in range(3):
                    m.store(f"{name} round {round_} note", type="FACT")
                    m.store(f"{name} keeps one value ({round_})", type="FACT", key=f"k/{name}")
                    url = (one, two)[(i + round_) % 2].url
                    with TulvingClient(url, token, agent_id="dev", timeout=120) as remote:
                        m.sync(remote)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i, n)) for i, n in enumerate(names)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert errors == []
    with TulvingClient(one.url, token, agent_id="dev") as via_one, \
            TulvingClient(two.url, token, agent_id="dev") as via_two:
        listed = via_one.sync_list(0, 1000)
        assert listed == via_two.sync_list(0, 1000)
        seqs = [d["seq"] for d in listed]
        assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) >= 6
        for name in names + names:  # heal: everyone pulls what came after its last sync
            with device(tmp_path, name) as m:
                m.sync(via_two if name.endswith(("1", "3", "5")) else via_one)
    states = []
    for name in names:
        with device(tmp_path, name) as m:
            states.append(state(m))
    assert all(s == states[0] for s in states) and len(states[0]) == 6 * 6
    with TulvingClient(two.url, token, agent_id="dev") as via_two:
        every = [d["seq"] for d in via_two.sync_list(0, 1000)]  # the heal pushed some more
    counts = merges(two, token)
    assert sorted(counts) == every and set(counts.values()) == {1}, counts
