"""Through a server process: reads of a tenant answer while the same tenant's long import
runs (the import holds the store's write transaction from its first batch to its last;
a read used to append its audit record in a transaction of its own every 128 reads, and
so waited for all of it). The in-process cases: ``tests/integration/test_reads_never_wait.py``."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx

from tests.http.conftest import start_server, stop_server
from tests.integration.test_reads_never_wait import _memory

#: Entries of the imported bundle: enough for the import to outlast 50 reads.
IMPORTED = 20_000

#: The slowest read allowed beside the import (the HTTP round trip included).
QUICK_S = 1.0


def test_reads_answer_while_the_same_tenant_imports(tmp_path: Path) -> None:
    with _memory(tmp_path / "source.db", user_id="u1") as source:
        source.store_many({"content": f"imported note {i} about the harbour crane",
                           "type": "OBSERVATION", "scope": "personal"} for i in range(IMPORTED))
        source.export(tmp_path / "notes.tulving")
    bundle = (tmp_path / "notes.tulving").read_bytes()
    server = start_server(tmp_path / "server")
    try:
        h = server.headers("alice")
        with httpx.Client(base_url=server.url, headers=h, timeout=120) as client:
            stored = client.post("/v1/store", json={
                "content": "a memory to read while the import runs", "type": "FACT",
                "key": "read-me"})
            assert stored.status_code == 200, stored.text
            assert client.post("/v1/search", json={"query": "memory to read"}).is_success
            answers: list[httpx.Response] = []
            importer = threading.Thread(target=lambda: answers.append(httpx.post(
                f"{server.url}/v1/import", content=bundle, headers=h, timeout=300)))
            importer.start()
            time.sleep(0.5)  # (the body is sent, the import under way)
            latencies: list[float] = []
            while importer.is_alive():
                t0 = time.perf_counter()
                got = client.get("/v1/memory/read-me")
                assert got.status_code == 200, got.text
                if len(latencies) % 10 == 0:
                    found = client.post("/v1/search", json={"query": "memory to read"})
                    assert found.status_code == 200, found.text
                latencies.append(time.perf_counter() - t0)
            importer.join()
            assert answers and answers[0].status_code == 200, answers[0].text[:500]
            assert answers[0].json()["report"]["added"] == IMPORTED
            assert max(latencies) < QUICK_S, (
                f"a read waited {max(latencies):.2f} s beside the import "
                f"({len(latencies)} reads)")
            assert len(latencies) > 50, "the import ended before 50 reads: make it longer"
    finally:
        stop_server(server)
