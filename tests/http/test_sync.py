"""``Memory.sync`` between two device stores through a real ``tulving serve`` on 127.0.0.1
(real HTTP through the Python client), plain and end to end encrypted."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.http.conftest import Server, start_server, stop_server
from tulving import Memory
from tulving.client import TulvingClient
from tulving.domain.errors import EncryptionKeyError
from tulving.domain.query import EntryFilter

pytestmark = pytest.mark.skipif(importlib.util.find_spec("cryptography") is None,
                                reason="the encryption extra is missing")

MARKER = "syncmarker5521"


@pytest.fixture
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("server"))
    yield srv
    stop_server(srv)


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("E2E_KEY", "the end to end passphrase of the tenant")
    monkeypatch.setenv("WRONG_E2E_KEY", "a passphrase another tenant uses")


def device(tmp_path: Path, name: str) -> Memory:
    return Memory(tmp_path / f"{name}.db", agent_id="dev", user_id="u1", embedder="hashing",
                  vectors="exact")


def client(server: Server) -> TulvingClient:
    return TulvingClient(server.url, server.tokens["alice"], agent_id="dev")


def state(m: Memory) -> dict[str, tuple[Any, ...]]:
    """Every entry this identity sees (archived too), by id: what must converge."""
    flt = EntryFilter(partitions=None, include_archived=True)
    return {e.id: (e.content, e.key, e.archived_at, e.archive_reason, e.superseded_by,
                   e.supersedes, tuple(e.tags)) for e in m.ctx.storage.query(flt)}


def active(m: Memory) -> set[str]:
    return {e.id for e in m.ctx.storage.query(EntryFilter(partitions=None))}


def test_two_devices_converge_through_the_server(server: Server, tmp_path: Path) -> None:
    a, b = device(tmp_path, "a"), device(tmp_path, "b")
    with a, b, client(server) as remote:
        a.store(f"{MARKER} deploys use blue-green", type="DECISION", key="deploy/how")
        first = a.store("a note that will be forgotten", type="FACT")
        b.store("b knows the staging host", type="FACT", tags=["ops"])
        a.sync(remote)
        b.sync(remote)
        a.sync(remote)
        assert state(a) == state(b) and len(state(a)) == 3
        b.forget(first.id)  # a forget on one device reaches the other
        b.store(f"{MARKER} deploys use canaries now", type="DECISION", key="deploy/how")
        b.sync(remote)
        report = a.sync(remote)
        assert report.pulled_deltas == 1 and report.updated >= 1
        assert state(a) == state(b)
        assert first.id not in active(a)
        assert [e.content for e in a.history("deploy/how")] == [
            f"{MARKER} deploys use canaries now", f"{MARKER} deploys use blue-green"]
        again = a.sync(remote), b.sync(remote), a.sync(remote)  # nothing new: nothing moves
        assert all(r.added == r.updated == r.conflicts == 0 for r in again)
        assert state(a) == state(b)
        assert a.verify_audit()["problems"] == [] and b.verify_audit()["problems"] == []
        # plain sync: the server merges the deltas into its own store too (in the
        # background, after acknowledging them)
        deadline = time.monotonic() + 20
        while not any(MARKER in h.entry.content for h in remote.search(MARKER)):
            assert time.monotonic() < deadline, "the server never merged the deltas"
            time.sleep(0.1)


def test_both_devices_superseded_one_key(server: Server, tmp_path: Path) -> None:
    a, b = device(tmp_path, "a"), device(tmp_path, "b")
    with a, b, client(server) as remote:
        a.store("the port is 8080", type="FACT", key="svc/port")
        a.sync(remote)
        b.sync(remote)
        a.store("the port is 8081", type="FACT", key="svc/port")
        b.store("the port is 9090", type="FACT", key="svc/port")  # later: it wins
        for m in (a, b, a, b):  # each merge is a change the other side then takes
            m.sync(remote)
        assert state(a) == state(b)
        for m in (a, b):
            assert m.get("svc/port").content == "the port is 9090"
            assert {e.content for e in m.history("svc/port")} == {
                "the port is 8080", "the port is 8081", "the port is 9090"}


def test_end_to_end_encrypted_deltas_are_opaque_to_the_server(server: Server,
                                                              tmp_path: Path) -> None:
    a, b = device(tmp_path, "a"), device(tmp_path, "b")
    with a, b, client(server) as remote:
        a.store(f"{MARKER} secret plan", type="PLAN", key=f"plan/{MARKER}", tags=[MARKER],
                metadata={"m": MARKER})
        a.sync(remote, encryption="env:E2E_KEY")
        with pytest.raises(EncryptionKeyError):
            b.sync(remote, encryption="env:WRONG_E2E_KEY")
        assert state(b) == {}
        report = b.sync(remote, encryption="env:E2E_KEY")
        assert report.e2e and report.added == 1
        assert state(a) == state(b)
        assert b.get(f"plan/{MARKER}").content == f"{MARKER} secret plan"
        # the server holds only opaque bytes: no file of its store or its delta log
        # holds the marker, and its own memory never saw the entry
        for path in server.path.parent.rglob("*"):
            if path.is_file():
                assert MARKER.encode() not in path.read_bytes(), path
        assert remote.search(MARKER) == []


def test_a_delta_pushed_twice_is_one_delta(server: Server, tmp_path: Path) -> None:
    with client(server) as remote:
        first = remote.sync_push("ab12", b"TVLBUNDLE-ENC\nopaque", True)
        again = remote.sync_push("ab12", b"TVLBUNDLE-ENC\nopaque", True)
        assert first["seq"] == again["seq"] and first["new"] and not again["new"]
        assert [d["seq"] for d in remote.sync_list(0, 10)] == [first["seq"]]
        assert remote.sync_fetch(first["seq"]) == b"TVLBUNDLE-ENC\nopaque"


@pytest.mark.parametrize("e2e", [None, "env:E2E_KEY"], ids=["plain", "e2e"])
def test_an_erasure_reaches_the_other_device(server: Server, tmp_path: Path,
                                             e2e: str | None) -> None:
    a, b = device(tmp_path, "a"), device(tmp_path, "b")
    with a, b, client(server) as remote:
        a.store(f"{MARKER} a fact about u1 from a", type="FACT")
        b.store(f"{MARKER} a fact about u1 from b", type="FACT")
        for m in (a, b, a):
            m.sync(remote, encryption=e2e)
        assert len(state(a)) == len(state(b)) == 2
        a.erase(user_id="u1")
        b.store("written on b after the erasure", type="FACT")  # made later: it stays
        for m in (b, a, b, a):  # b pushes its old copies before it knows: they go again
            m.sync(remote, encryption=e2e)
        assert state(a) == state(b)
        assert [c for c, *_ in state(a).values()] == ["written on b after the erasure"]
        assert a.verify_audit()["problems"] == [] and b.verify_audit()["problems"] == []
