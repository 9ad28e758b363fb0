"""Encryption covers everything an encrypted server writes beside its store (issue 34 #2).

A real ``tulving serve --encryption`` (SQLCipher store, sealed hnsw cache) on 127.0.0.1
is driven through stores, plain sync pushes and pulls from real CLI devices, an end to
end encrypted sync, token creation, an import, searches and a curate; then every file
under the server's folder (the store, its -wal and -shm, lock, vector cache, the
server's own log and its temporary folder: ``TMPDIR`` points inside it), and every
member of any zip found there, is grepped for a marker, while the server runs and after
it stopped. Before the sync log moved into the store, a plain delta sat in
``<store>.sync/`` as an ordinary zip whose member held the marker. The same grep over a
plain device's folder finds the marker, so the grep can fail.
"""

from __future__ import annotations

import importlib.util
import io
import json
import signal
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST, ROOT, clean_env
from tests.http.conftest import free_port, wait_healthy
from tulving import Memory
from tulving.client import TulvingClient

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sqlcipher3") is None or importlib.util.find_spec("hnswlib") is None,
    reason="the encryption and hnsw extras are needed")

MARKER = "srvmarker6093"
KEY = "the encrypted server's passphrase, long enough"


def cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tulving.interfaces.cli.main", *args],
                          capture_output=True, text=True, env=env, cwd=str(cwd), timeout=120)


def holders(folder: Path, marker: str = MARKER) -> list[str]:
    """Every file (and zip member) under ``folder`` whose bytes hold the marker."""
    found = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if marker.encode() in data:
            found.append(str(path))
        if zipfile.is_zipfile(io.BytesIO(data)):
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for member in archive.namelist():
                    if marker.encode() in archive.read(member):
                        found.append(f"{path}!{member}")
    return found


class EncryptedServer:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / "server.db"
        (folder / "tmp").mkdir(parents=True)
        self.env = clean_env(TULVING_TEST_SERVER_KEY=KEY, TMPDIR=str(folder / "tmp"))
        self.common = ["--path", str(self.path), "--encryption", "env:TULVING_TEST_SERVER_KEY",
                       "--embedder", "hashing", "--vectors", "hnsw"]
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def token(self, name: str, user: str) -> str:
        done = cli("serve", "token", "create", name, "--bind-user", user, *self.common,
                   "--json", env=self.env, cwd=self.folder)
        assert done.returncode == 0, done.stderr
        return str(json.loads(done.stdout)["token"])

    def start(self) -> None:
        port = free_port()
        log = open(self.folder / "server.log", "ab")  # noqa: SIM115 - the server's life long
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tulving.interfaces.cli.main", "serve", *self.common,
             "--port", str(port)], env=self.env, cwd=str(ROOT), stdout=log, stderr=log)
        self.url = f"http://127.0.0.1:{port}"
        wait_healthy(self.url, self.proc, (self.folder / "server.log").read_text)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            assert self.proc.wait(timeout=30) == 0
        self.proc = None


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EncryptedServer]:
    srv = EncryptedServer(tmp_path / "srv")
    yield srv
    if srv.proc is not None and srv.proc.poll() is None:
        srv.proc.kill()


def fill(memory: Memory, what: str) -> None:
    memory.store(f"The {MARKER} release ships on Friday ({what})", type="FACT",
                 key=f"release/{MARKER}/{what}", tags=[MARKER, "release"],
                 metadata={"note": MARKER, "from": what})
    memory.store(f"The {MARKER} release moved to Monday ({what})", type="DECISION",
                 key=f"release/{MARKER}/{what}", tags=[MARKER])


def test_an_encrypted_server_writes_no_clear_text(server: EncryptedServer,
                                                  tmp_path: Path) -> None:
    alice = server.token("alice", "u1")
    carol = server.token("carol", "u3")  # her devices sync end to end
    server.start()
    devices = tmp_path / "devices"
    devices.mkdir()
    users = {"a": "u1", "b": "u1", "e": "u3", "f": "u3"}
    for name, user in users.items():
        with Memory(devices / f"{name}.db", agent_id="dev", user_id=user, embedder="hashing",
                    vectors="exact") as device:
            fill(device, name)
    for name in ("a", "b", "a", "e", "f", "e"):
        token, extra = (alice, []) if users[name] == "u1" else (carol,
                                                                 ["--e2e-key", "env:E2E_KEY"])
        done = cli("sync", server.url, "--path", str(devices / f"{name}.db"), "--user-id",
                   users[name], "--agent-id", "dev", *FAST, "--json", *extra, cwd=devices,
                   env=clean_env(TULVING_TOKEN=token, E2E_KEY="carol's end to end key"))
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report.get("not_merged", []) == [] and report.get("skipped", []) == []
    with Memory(devices / "bundle-source.db", agent_id="dev", user_id="u1",
                embedder="hashing", vectors="exact") as source:
        fill(source, "imported")
        bundle = devices / "bundle.tulving"
        source.export(bundle)
    with TulvingClient(server.url, alice, agent_id="dev") as remote:
        remote.store(f"{MARKER} stored through the API", type="FACT", tags=[MARKER],
                     metadata={"m": MARKER})
        assert remote.import_bundle(bundle)["added"] == 2
        hits = remote.search(MARKER, top_k=50)
        assert {h.entry.content for h in hits} >= {
            f"The {MARKER} release moved to Monday (a)", f"The {MARKER} release moved to "
            "Monday (b)", f"{MARKER} stored through the API",
            f"The {MARKER} release moved to Monday (imported)"}
        curated = remote.curate(f"when does {MARKER} ship", token_budget=400)
        assert MARKER in curated.content
        assert not getattr(remote, "sync_quarantined", list)()
    second = server.token("bob", "u2")  # a token made while the server runs
    assert second.startswith("tlv_")
    running = holders(server.folder)
    server.stop()
    stopped = holders(server.folder)
    assert running == [] and stopped == []
    assert not (server.folder / "server.db.sync").exists()  # the log is in the store
    assert any(p.name.endswith(".hnsw.sealed") for p in server.folder.iterdir())
    assert (server.folder / "server.log").exists()
    assert holders(devices)  # the grep finds a marker where there is one


def test_an_encrypted_server_keeps_token_names_encrypted(server: EncryptedServer) -> None:
    server.token(f"{MARKER}-laptop", f"{MARKER}-user")
    server.start()
    server.stop()
    assert holders(server.folder) == []
