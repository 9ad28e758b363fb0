"""A real ``tulving serve`` on 127.0.0.1 for each test module, with three tokens: two
tenants (alice: user u1, bob: user u2) and a read-only token of u1."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import FAST, ROOT, clean_env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, url: str, tokens: dict[str, str], proc: subprocess.Popen[bytes],
                 path: Path, started_s: float) -> None:
        self.url, self.tokens, self.proc, self.path = url, tokens, proc, path
        self.started_s = started_s

    def headers(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}


def cli(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "tulving.interfaces.cli.main", *args],
                          capture_output=True, text=True, env=clean_env(), cwd=str(ROOT),
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def wait_healthy(url: str, proc: subprocess.Popen[Any], log: Callable[[], str],
                 *, timeout: float = 60, what: str = "the server") -> None:
    """Return once ``url``'s ``/v1/health`` answers 200; fail with the tail of ``log()``
    if the process exits or ``timeout`` seconds pass first (the process is left as is)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{what} did not start: {log()[-3000:]}")
        time.sleep(0.05)


def start_server(folder: Path, *extra: str) -> Server:
    path = folder / "server.db"
    tokens = {}
    for name, binding in (("alice", ["--bind-user", "u1"]), ("bob", ["--bind-user", "u2"]),
                          ("reader", ["--bind-user", "u1", "--read-only"])):
        out = cli("serve", "token", "create", name, *binding, "--path", str(path), *FAST,
                  "--json")
        tokens[name] = json.loads(out)["token"]
    port = free_port()
    began = time.perf_counter()
    log = open(folder / "server.log", "wb")  # noqa: SIM115 - the server's life long
    proc = subprocess.Popen(
        [sys.executable, "-m", "tulving.interfaces.cli.main", "serve", "--path", str(path),
         *FAST, "--port", str(port), *extra],
        env=clean_env(), cwd=str(ROOT), stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, (folder / "server.log").read_text, timeout=30)
    except AssertionError:
        proc.kill()
        raise
    return Server(url, tokens, proc, path, time.perf_counter() - began)


def stop_server(server: Server) -> int:
    server.proc.send_signal(signal.SIGTERM)
    try:
        return server.proc.wait(timeout=20)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("server"))
    yield srv
    stop_server(srv)
