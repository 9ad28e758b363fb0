"""The access log's lines are alike (issue 54, item 8): a refused request (4xx) is logged
at ``warning`` with its error type, a server fault at ``error``, an answer at ``info``;
every line of a request whose token is known names the tenant and the operation, a 403
(another tenant named), a 422 (a body refused before the endpoint ran) and ``/v1/keys``
(no traced library call) included. A real ``tulving serve --access-log all``, real
requests over 127.0.0.1, its stderr read as written."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.http.conftest import Server, start_server, stop_server
from tulving.application.plumbing.telemetry import tenant_hash
from tulving.domain.identity import Identity

U1 = tenant_hash(Identity("any", "u1").tenant)


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    folder = tmp_path_factory.mktemp("access")
    server = start_server(folder, "--access-log", "all")
    yield server, folder / "server.log"
    stop_server(server)


def line_of(log: Path, request_id: str) -> dict[str, Any]:
    """The request's line (written once the answer is sent: waited for, 10 s at most)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for text in log.read_text(errors="replace").splitlines():
            try:
                record = json.loads(text)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("request_id") == request_id:
                return record
        time.sleep(0.05)
    raise AssertionError(f"no access-log line for {request_id}: {log.read_text()[-2000:]}")


CASES = {
    # name: (method, path, body, token, status, operation, error type)
    "keys": ("GET", "/v1/keys", None, "alice", 200, "keys", None),
    "search": ("POST", "/v1/search", {"query": "pelicans"}, "alice", 200, "search", None),
    "bad-body": ("POST", "/v1/search", {"query": "pelicans", "top_k": "many"}, "alice",
                 422, "search", "ValidationError"),
    "bad-key": ("GET", "/v1/keys?prefix=" + "x" * 300, None, "alice", 422, "keys",
                "ValidationError"),
    "other-tenant": ("GET", "/v1/stats?user_id=u2", None, "alice", 403, "stats",
                     "ScopeError"),
    "read-only-token": ("POST", "/v1/store", {"content": "a fact", "type": "FACT"},
                        "reader", 403, "store", "ReadOnlyToken"),
    "unknown-id": ("GET", "/v1/memory/01ARZ3NDEKTSV4RRFFQ69G5FAV", None, "alice", 404,
                   "get", "NotFoundError"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_line_names_level_tenant_operation_and_error(
        logged: tuple[Server, Path], case: str) -> None:
    server, log = logged
    method, path, body, token, status, operation, error = CASES[case]
    request_id = f"line-{case}"
    answer = httpx.request(method, server.url + path, json=body, timeout=30, headers={
        "Authorization": f"Bearer {server.tokens[token]}", "X-Request-ID": request_id})
    assert answer.status_code == status, answer.text
    line = line_of(log, request_id)
    assert line["level"] == ("warning" if status >= 400 else "info"), line
    assert (line["tenant"], line["operation"], line.get("error")) == (U1, operation, error), line
    assert (line["status"], line["route"]) == (status, path.split("?")[0].replace(
        "01ARZ3NDEKTSV4RRFFQ69G5FAV", "{memory_id}")), line


def test_a_stranger_is_logged_as_a_warning_without_a_tenant(
        logged: tuple[Server, Path]) -> None:
    server, log = logged
    answer = httpx.get(server.url + "/v1/stats", timeout=30,
                       headers={"Authorization": "Bearer not-a-token",
                                "X-Request-ID": "line-stranger"})
    assert answer.status_code == 401
    line = line_of(log, "line-stranger")
    assert (line["level"], line.get("error"), "tenant" in line) == (
        "warning", "Unauthorized", False), line
    assert line["operation"] == "stats", line
