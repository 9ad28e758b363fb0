"""``tulving serve --read-only`` beside the process that writes the store (issue 32): the
inspector's reads and the ``/v1`` reads work while another process holds the SQLite
store's lock, and see what it writes; a write answers 409 and changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from tests.e2e.conftest import ROOT, clean_env
from tests.http.conftest import start_server, stop_server

WRITER = """
import json, sys
from tulving import Memory
memory = Memory(sys.argv[1], agent_id="agent", user_id="u1", embedder="hashing",
                vectors="exact")
memory.startup()
print("ready", flush=True)
for line in sys.stdin:
    entry = memory.store(json.loads(line), type="FACT", scope="personal")
    print(entry.id, flush=True)
memory.close()
"""


def test_a_read_only_server_reads_beside_the_writer(tmp_path: Path) -> None:
    from tulving import Memory

    Memory(tmp_path / "server.db", agent_id="agent", user_id="u1", embedder="hashing",
           vectors="exact").startup().close()  # a reader opens a store that exists
    server = start_server(tmp_path, "--read-only")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(server.path)], cwd=ROOT,
                              env=clean_env(), text=True, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    try:
        assert writer.stdin is not None and writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready"  # it holds the lock now
        writer.stdin.write(json.dumps("The staging database moved to Frankfurt") + "\n")
        writer.stdin.flush()
        stored = writer.stdout.readline().strip()
        headers = server.headers("alice")
        for mode in ("hybrid", "semantic", "lexical"):
            found = httpx.post(f"{server.url}/v1/search", headers=headers, timeout=30,
                               json={"query": "staging database Frankfurt", "mode": mode})
            assert found.status_code == 200, found.text
            assert stored in json.dumps(found.json()), (mode, found.text)
        page = httpx.get(f"{server.url}/v1/memory/{stored}", headers=headers, timeout=30)
        assert page.status_code == 200 and "Frankfurt" in page.text
        inspector = httpx.get(f"{server.url}/ui/", timeout=30)
        assert inspector.status_code == 200
        refused = httpx.post(f"{server.url}/v1/store", headers=headers, timeout=30,
                             json={"content": "a write through the reader", "type": "FACT"})
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["type"] == "ReadOnlyError"
    finally:
        assert writer.stdin is not None
        writer.stdin.close()
        writer.wait(timeout=30)
        assert stop_server(server) == 0
