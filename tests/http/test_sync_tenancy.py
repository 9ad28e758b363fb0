"""Sync and tenancy agree (issue 34 #3), through the real CLI (``tulving sync``) and a real
``tulving serve`` on 127.0.0.1 whose tokens are bound to users (alice: u1, bob: u2).

The tenant is the token's, decided at the door: a store that names no user is re-homed
to it (both ways, said in the report); a store of another tenant is refused before
anything is logged, with a message that names the fix; a delta the server cannot merge
is quarantined with a reason the tenant reads through the API and the CLI, and blocks
no other device; a device's report says when the server did not merge its delta.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import FAST, ROOT, CLIResult, clean_env
from tests.http.conftest import Server, start_server, stop_server
from tulving import Memory
from tulving.client import ServerError, TulvingClient

pytestmark = pytest.mark.skipif(importlib.util.find_spec("cryptography") is None,
                                reason="the encryption extra is missing")

MARKER = "tenancymarker3307"


@pytest.fixture
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("server"))
    yield srv
    stop_server(srv)


def tulving(*args: str, token: str | None = None, cwd: Path) -> CLIResult:
    import subprocess
    import sys

    env = clean_env(**({"TULVING_TOKEN": token} if token else {}))
    proc = subprocess.run([sys.executable, "-m", "tulving.interfaces.cli.main", *args],
                          capture_output=True, text=True, env=env, cwd=str(cwd), timeout=120)
    return CLIResult(proc)


def store(tmp_path: Path, db: str, text: str, *who: str) -> str:
    done = tulving("store", text, "--type", "FACT", "--path", str(tmp_path / db), *who, *FAST,
                   "--json", cwd=tmp_path)
    assert done.code == 0, done
    return str(done.json()["stored"]["id"])


def sync(server: Server, tmp_path: Path, db: str, token: str, *who: str,
         extra: tuple[str, ...] = ()) -> CLIResult:
    return tulving("sync", server.url, "--path", str(tmp_path / db), *who, *FAST, *extra,
                   token=server.tokens[token], cwd=tmp_path)


def device(tmp_path: Path, db: str, user: str | None = None) -> Memory:
    return Memory(tmp_path / db, agent_id="default", user_id=user, embedder="hashing",
                  vectors="exact")


def contents(tmp_path: Path, db: str, user: str | None = None) -> dict[str, str]:
    """Content by id of every active entry the device's identity sees."""
    from tulving.domain.query import EntryFilter

    with device(tmp_path, db, user) as m:
        flt = EntryFilter(partitions=m.ctx.visible_partitions())
        return {e.id: e.content for e in m.ctx.storage.query(flt)}


def server_contents(server: Server, who: str, agent: str = "default") -> set[str]:
    with TulvingClient(server.url, server.tokens[who], agent_id=agent) as remote:
        return {h.entry.content for h in remote.search(MARKER, top_k=50)}


def listed(server: Server, who: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{server.url}/v1/sync/deltas", headers=server.headers(who),
                         params={"limit": 1000})
    assert response.status_code == 200, response.text
    return list(response.json()["deltas"])


def test_a_store_with_no_user_is_rehomed_to_the_token_tenant(server: Server,
                                                             tmp_path: Path) -> None:
    """The issue's device A (no --user-id) and device B (--user-id u1), one token of u1:
    both sync, both converge, the server holds A's memories in u1 and bob sees none."""
    a_text, b_text = f"{MARKER} written on A without a user", f"{MARKER} written on B as u1"
    store(tmp_path, "a.db", a_text)
    first = sync(server, tmp_path, "a.db", "alice", extra=("--json",))
    assert first.code == 0, first
    store(tmp_path, "b.db", b_text, "--user-id", "u1")
    done = sync(server, tmp_path, "b.db", "alice", "--user-id", "u1", extra=("--json",))
    assert done.code == 0, done  # was: exit 5, "belongs to another tenant", for good
    assert server_contents(server, "alice") == {a_text, b_text}  # was: A's never merged
    assert server_contents(server, "bob") == set()
    report = first.json()
    assert report["rehomed_to"] == "user 'u1'" and report["pushed_entries"] == 1
    assert report["not_merged"] == [] and report["skipped"] == []
    assert done.json()["added"] == 1 and done.json()["rehomed_to"] is None
    human = sync(server, tmp_path, "a.db", "alice")
    assert "synced as user 'u1', the token's tenant" in human.out, human
    assert set(contents(tmp_path, "b.db", "u1").values()) == {a_text, b_text}
    assert "pulled 1 deltas (1 added" in human.out  # B's, re-homed into A's tenant
    assert contents(tmp_path, "a.db") == contents(tmp_path, "b.db", "u1")  # same ids too
    assert server_contents(server, "alice") == {a_text, b_text}


def test_a_store_of_another_tenant_is_refused_before_anything_is_logged(
        server: Server, tmp_path: Path) -> None:
    store(tmp_path, "c.db", f"{MARKER} u2's note", "--user-id", "u2")
    done = sync(server, tmp_path, "c.db", "alice", "--user-id", "u2")
    assert done.code == 5, done
    assert "--user-id u1" in done.err and "token" in done.err and "nothing was synced" in done.err
    assert listed(server, "alice") == [] and listed(server, "bob") == []
    assert server_contents(server, "alice") == set() == server_contents(server, "bob")
    assert sync(server, tmp_path, "c.db", "bob", "--user-id", "u2").code == 0  # its own token


def test_the_server_refuses_a_foreign_delta_at_the_door(server: Server,
                                                        tmp_path: Path) -> None:
    """A device that does not ask (an older Tulving) pushes the no-user delta: 403 with
    the fix, and nothing is logged, so no other device can ever be blocked by it."""
    with Memory(tmp_path / "old.db", agent_id="dev", embedder="hashing",
                vectors="exact") as old:
        old.store(f"{MARKER} from an old device", type="FACT")
        bundle = io.BytesIO()
        old.export(bundle)
    with TulvingClient(server.url, server.tokens["alice"], agent_id="dev") as remote:
        with pytest.raises(ServerError) as refused:
            remote.sync_push("ab12", bundle.getvalue(), False)
        assert refused.value.status == 403 and refused.value.kind == "ScopeError"
        assert "no user or workspace" in refused.value.message
        assert "nothing was logged" in refused.value.message
        assert "--user-id" in refused.value.message
        assert remote.sync_list(0, 100) == []
        with pytest.raises(ServerError) as corrupt:  # not a bundle at all: refused too
            remote.sync_push("ab12", b"PK\x03\x04 not really a zip", False)
        assert corrupt.value.status == 422 and remote.sync_list(0, 100) == []
    assert server_contents(server, "alice") == set()


def test_a_delta_the_server_cannot_merge_is_quarantined_and_blocks_nobody(
        server: Server, tmp_path: Path) -> None:
    """u1 syncs an entry; a u2 device holds an entry with the same id (copied across
    tenants by hand): the server cannot merge it into u2 (the id is taken), so it is
    quarantined. The pushing device is told, bob reads the reason through the API and
    the CLI, and another u2 device syncs on, never handed the bad delta."""
    store(tmp_path, "x.db", f"{MARKER} u1's entry", "--user-id", "u1")
    assert sync(server, tmp_path, "x.db", "alice", "--user-id", "u1").code == 0
    taken_id = next(iter(contents(tmp_path, "x.db", "u1")))
    with device(tmp_path, "x.db", "u1") as x:
        taken = x.ctx.storage.get(taken_id)
        assert taken is not None
    with device(tmp_path, "y.db", "u2") as y:
        y.store(f"{MARKER} u2's own entry", type="FACT")
        import attrs

        from tulving.domain.types import Scope

        clash = attrs.evolve(taken, user_id="u2", content=f"{MARKER} a clashing copy",
                             partition=y.identity.partition_for(Scope.AGENT))
        y.ctx.storage.write(clash)  # a crafted store: an id another tenant holds
    done = sync(server, tmp_path, "y.db", "bob", "--user-id", "u2", extra=("--json",))
    assert done.code == 0, done
    not_merged = done.json()["not_merged"]
    assert len(not_merged) == 1 and "ScopeError" in not_merged[0]["reason"], done
    human = sync(server, tmp_path, "y.db", "bob", "--user-id", "u2")
    assert human.code == 0  # told once, not again and again
    listing = tulving("sync", server.url, "--quarantined", "--path", str(tmp_path / "y.db"),
                      "--user-id", "u2", *FAST, token=server.tokens["bob"], cwd=tmp_path)
    assert listing.code == 0 and f"delta {not_merged[0]['seq']} from device" in listing.out
    assert "ScopeError" in listing.out, listing
    response = httpx.get(f"{server.url}/v1/sync/quarantine", headers=server.headers("bob"))
    assert [d["seq"] for d in response.json()["deltas"]] == [not_merged[0]["seq"]]
    assert httpx.get(f"{server.url}/v1/sync/quarantine",
                     headers=server.headers("alice")).json()["deltas"] == []
    bad = not_merged[0]["seq"]
    assert bad not in [d["seq"] for d in listed(server, "bob")]  # never handed to devices
    store(tmp_path, "z.db", f"{MARKER} another u2 device", "--user-id", "u2")
    other = sync(server, tmp_path, "z.db", "bob", "--user-id", "u2", extra=("--json",))
    assert other.code == 0 and other.json()["skipped"] == [], other
    assert f"{MARKER} a clashing copy" not in contents(tmp_path, "z.db", "u2").values()
    assert server_contents(server, "alice") == {f"{MARKER} u1's entry"}
    assert f"{MARKER} another u2 device" in server_contents(server, "bob")


def _legacy_file(folder: Path, seq: int, device: str, data: bytes) -> None:
    digest = hashlib.sha256(data).hexdigest()
    (folder / f"{seq:012d}.{device}.{digest}.delta").write_bytes(data)


def test_an_upgraded_server_moves_its_file_log_and_unblocks_the_tenant(
        tmp_path: Path) -> None:
    """The issue's state on disk, as the old server left it: u1's file log holds device
    A's no-user delta (passed over by the old merge, handed to every device) and a good
    one. Started on it, the server moves the log into its store (same numbers), deletes
    the folder and quarantines A's delta: device B syncs again, with exit 0."""
    folder = tmp_path / "server"
    folder.mkdir()
    legacy = folder / "server.db.sync" / hashlib.sha256(b"u1\x1f").hexdigest()[:32]
    legacy.mkdir(parents=True)
    bundles = []
    for name, user in (("a", None), ("c", "u1")):
        with Memory(tmp_path / f"{name}.db", agent_id="default", user_id=user,
                    embedder="hashing", vectors="exact") as m:
            m.store(f"{MARKER} written on {name}", type="FACT")
            out = io.BytesIO()
            m.export(out)
            bundles.append(out.getvalue())
    _legacy_file(legacy, 1, "aa01", bundles[0])
    _legacy_file(legacy, 2, "cc03", bundles[1])
    (legacy / ".merged").write_text("2")
    srv = start_server(folder)
    try:
        assert not (folder / "server.db.sync").exists()
        store(tmp_path, "b.db", f"{MARKER} written on b", "--user-id", "u1")
        done = sync(srv, tmp_path, "b.db", "alice", "--user-id", "u1", extra=("--json",))
        assert done.code == 0, done  # was: exit 5 on A's delta, every time
        assert done.json()["pulled_deltas"] == 1 and done.json()["skipped"] == []
        assert set(contents(tmp_path, "b.db", "u1").values()) == {
            f"{MARKER} written on c", f"{MARKER} written on b"}
        quarantined = tulving("sync", srv.url, "--quarantined", "--json", "--path",
                              str(tmp_path / "b.db"), "--user-id", "u1", *FAST,
                              token=srv.tokens["alice"], cwd=tmp_path).json()["quarantined"]
        assert [(d["seq"], d["device"]) for d in quarantined] == [(1, "aa01")]
        assert "no user or workspace" in quarantined[0]["reason"]
        assert [d["seq"] for d in listed(srv, "alice")] == [2, 3]  # numbers kept
    finally:
        stop_server(srv)


def test_a_device_name_is_checked_with_a_full_match(server: Server) -> None:
    """A name ending in a newline once wrote a delta file the log never listed, so the
    next pushes took the same number: now 422 at the door, nothing logged."""
    headers = {**server.headers("alice"), "X-Tulving-E2E": "1"}
    for device in ("ab12\n", "AB12", "ab12\r\n", "ab 12", "", "a" * 65):
        response = httpx.post(f"{server.url}/v1/sync/deltas", params={"device": device},
                              content=b"TVLBUNDLE-ENC\nopaque " + device.encode(),
                              headers=headers)
        assert response.status_code == 422, (device, response.text)
    assert listed(server, "alice") == []
    seqs = [httpx.post(f"{server.url}/v1/sync/deltas", params={"device": "ab12"},
                       content=b"TVLBUNDLE-ENC\nopaque %d" % i,
                       headers=headers).json()["seq"] for i in range(4)]
    assert seqs == [1, 2, 3, 4]


def test_concurrent_pushes_get_distinct_numbers(server: Server, tmp_path: Path) -> None:
    """8 threads and 2 processes push at once to one server: every delta its own number,
    all listed, none lost."""
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    headers = {**server.headers("alice"), "X-Tulving-E2E": "1"}

    def push(n: int) -> list[int]:
        with httpx.Client(headers=headers, timeout=60) as http:
            return [http.post(f"{server.url}/v1/sync/deltas", params={"device": f"{n:x}"},
                              content=b"TVLBUNDLE-ENC\nthread %d push %d" % (n, i)
                              ).json()["seq"] for i in range(4)]

    script = (
        "import httpx, json, sys\n"
        "url, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
        "h = {'Authorization': 'Bearer ' + token, 'X-Tulving-E2E': '1'}\n"
        "out = [httpx.post(url + '/v1/sync/deltas', params={'device': 'f%x' % n}, headers=h,\n"
        "       content=b'TVLBUNDLE-ENC\\nprocess %d push %d' % (n, i), timeout=60"
        ").json()['seq']\n"
        "       for i in range(6)]\n"
        "print(json.dumps(out))\n")
    procs = [subprocess.Popen([sys.executable, "-c", script, server.url,
                               server.tokens["alice"], str(n)], stdout=subprocess.PIPE,
                              text=True, env={**os.environ}) for n in range(2)]
    with ThreadPoolExecutor(8) as pool:
        from_threads = [s for seqs in pool.map(push, range(8)) for s in seqs]
    from_processes = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        from_processes += json.loads(out)
    everything = from_threads + from_processes
    assert sorted(everything) == list(range(1, 45))
    assert [d["seq"] for d in listed(server, "alice")] == list(range(1, 45))
    assert ROOT  # the server ran from this checkout (PYTHONPATH of clean_env)


def test_an_erasure_synced_by_one_tenant_is_never_replayed_in_another(
        server: Server, tmp_path: Path) -> None:
    """u2 erases its agent "dev" and syncs the erasure; the server used to remember it
    for the whole store and replay it after u1's next merge, deleting u1's memories of
    its own agent "dev" on the server. Erasures are remembered per tenant now."""
    u1_old = f"{MARKER} u1's agent dev wrote this first"
    store(tmp_path, "u1.db", u1_old, "--user-id", "u1", "--agent-id", "dev")
    assert sync(server, tmp_path, "u1.db", "alice", "--user-id", "u1", "--agent-id",
                "dev").code == 0
    store(tmp_path, "u2.db", f"{MARKER} u2's agent dev", "--user-id", "u2", "--agent-id", "dev")
    erased = tulving("erase", "agent", "--yes", "--path", str(tmp_path / "u2.db"), "--user-id",
                     "u2", "--agent-id", "dev", *FAST, cwd=tmp_path)
    assert erased.code == 0, erased
    done = sync(server, tmp_path, "u2.db", "bob", "--user-id", "u2", "--agent-id", "dev",
                extra=("--json",))
    assert done.code == 0 and done.json()["erasures_pushed"] == 1, done
    u1_new = f"{MARKER} u1's agent dev wrote this later"
    store(tmp_path, "u1.db", u1_new, "--user-id", "u1", "--agent-id", "dev")
    assert sync(server, tmp_path, "u1.db", "alice", "--user-id", "u1", "--agent-id",
                "dev").code == 0  # a merge with something added: remembered erasures replay
    assert server_contents(server, "alice", "dev") == {u1_old, u1_new}
    assert server_contents(server, "bob", "dev") == set()
    store(tmp_path, "u1b.db", f"{MARKER} u1's second device", "--user-id", "u1",
          "--agent-id", "dev")
    assert sync(server, tmp_path, "u1b.db", "alice", "--user-id", "u1", "--agent-id",
                "dev").code == 0
    with Memory(tmp_path / "u1b.db", agent_id="dev", user_id="u1", embedder="hashing",
                vectors="exact") as second:
        from tulving.domain.query import EntryFilter

        flt = EntryFilter(partitions=second.ctx.visible_partitions())
        assert {u1_old, u1_new} <= {e.content for e in second.ctx.storage.query(flt)}


def test_a_second_sync_at_once_sends_nothing_again(server: Server, tmp_path: Path) -> None:
    """The push margin re-sends what was committing as the watermark was taken, but not
    what the last push already sent unchanged: two syncs a second apart log one delta, and
    an entry changed inside the margin still travels."""
    store(tmp_path, "y.db", f"{MARKER} u2's own entry", "--user-id", "u2")
    first = sync(server, tmp_path, "y.db", "bob", "--user-id", "u2", extra=("--json",))
    again = sync(server, tmp_path, "y.db", "bob", "--user-id", "u2", extra=("--json",))
    assert first.json()["pushed_entries"] == 1 and again.json()["pushed_entries"] == 0, again
    assert len(listed(server, "bob")) == 1
    store(tmp_path, "y.db", f"{MARKER} a second entry", "--user-id", "u2")
    third = sync(server, tmp_path, "y.db", "bob", "--user-id", "u2", extra=("--json",))
    assert third.json()["pushed_entries"] == 1, third
    assert f"{MARKER} a second entry" in server_contents(server, "bob")
