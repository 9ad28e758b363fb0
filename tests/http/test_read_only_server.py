"""``tulving serve --read-only`` beside the process that writes the store (issue 32): the
inspector's reads and the ``/v1`` reads work while another process holds the SQLite
store's lock, and see what it writes; a write answers 409 and changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.doors.worlds import Writer
from tests.http.conftest import start_server, stop_server


def test_a_read_only_server_reads_beside_the_writer(tmp_path: Path) -> None:
    from tulving import Memory

    Memory(tmp_path / "server.db", agent_id="agent", user_id="u1", embedder="hashing",
           vectors="exact").startup().close()  # a reader opens a store that exists
    server = start_server(tmp_path, "--read-only")
    writer = Writer(server.path, agent="agent")  # ready: it holds the lock now
    try:
        stored = writer.store("The staging database moved to Frankfurt")
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
        writer.close()
        assert stop_server(server) == 0
