"""A replica told to stop drains before it stops (``tulving.interfaces.http.drain``): the
answers it gives meanwhile close their connections, so a proxy holding kept connections
never writes a request on one the replica is closing (nginx then answered 502)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx

from tests.http.conftest import start_server


def test_sigterm_drains_then_stops(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    try:
        with httpx.Client(base_url=server.url, headers=server.headers("alice"),
                          timeout=30) as client:
            before = client.post("/v1/store", json={"content": "kept", "type": "FACT"})
            assert before.status_code == 200
            assert before.headers.get("connection", "").lower() != "close"
            server.proc.send_signal(signal.SIGTERM)
            time.sleep(0.2)
            during = client.post("/v1/store", json={"content": "during the drain",
                                                    "type": "FACT"})
            assert during.status_code == 200, during.text  # still served ...
            assert during.headers["connection"].lower() == "close"  # ... and closed after
        assert server.proc.wait(timeout=20) == 0  # then a clean stop
    finally:
        if server.proc.poll() is None:
            server.proc.kill()

