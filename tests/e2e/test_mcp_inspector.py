"""The MCP Inspector's CLI, through Node, sets every argument of every tool.

Two pinned versions (``tests/e2e/mcp_inspector``'s lock file): the current release (what
``npx -y @modelcontextprotocol/inspector --cli`` runs today), over streamable HTTP against
one server for the module, and the 0.14 CLI, which sends a ``--tool-arg`` as a string unless
the argument's schema has a plain top-level ``type``: against the schemas pydantic writes
(``anyOf [number, null]``) it could set none of ``importance``, ``pinned``, ``tags``,
``metadata``, ``min_score`` or ``types``. Every answer's structured content is checked to
be no larger than its text.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import FAST, ROOT, clean_env

INSPECTOR = Path(__file__).parent / "mcp_inspector" / "node_modules"
CURRENT = INSPECTOR / ".bin" / "mcp-inspector"
OLD_CLI = INSPECTOR / "@modelcontextprotocol" / "inspector-cli" / "build" / "index.js"
AGENT = "inspected"

#: A value for every argument of every tool, as a person types it after --tool-arg.
ARGS: dict[str, dict[str, str]] = {
    "memory_store": {"content": "Deploys go out on Thursdays after the freeze",
                     "type": "decision", "key": "deploy/day", "tags": '["ops","deploy"]',
                     "importance": "0.8", "pinned": "true", "valid_from": "2026-01-02",
                     "metadata": '{"team":"infra"}', "scope": "agent"},
    "memory_get": {"id_or_key": "deploy/day"},
    "memory_search": {"query": "when do deploys go out", "top_k": "5",
                      "types": '["DECISION"]', "tags": '["ops"]', "mode": "hybrid",
                      "min_score": "0.0"},
    "memory_curate": {"query": "deploy schedule", "token_budget": "300", "mode": "query",
                      "types": '["DECISION"]', "tags": '["ops"]', "since": "2025-01-01",
                      "until": "2027-01-01"},
    "memory_list_keys": {"prefix": "deploy/"},
    "memory_correct": {"id_or_key": "deploy/day",
                       "content": "Deploys go out on Wednesdays after the freeze",
                       "reason": "the release calendar moved"},
    "memory_stats": {},
    "memory_remember": {"text": "Ann: I moved to Porto last spring and I drink green tea.",
                        "subject": "Ann", "wait": "true"},
    "memory_profile": {"subject": "Ann"},
    "memory_consolidate": {"apply": "false", "types": '["FACT"]', "tags": '["ops"]'},
    "memory_list": {"limit": "5", "cursor": "(the next_cursor of a first page)",
                    "types": '["FACT", "PREFERENCE", "EPISODE", "DECISION"]',
                    "tags": '["ops"]'},
    "memory_forget": {"id_or_key": "deploy/day"},
    "memory_erase": {"subject": "agent", "confirm": f"erase agent {AGENT}"},
}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tulving.interfaces.cli.main", *args],
                          capture_output=True, text=True, env=clean_env(), cwd=str(ROOT),
                          timeout=120)


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    if shutil.which("node") is None or not CURRENT.exists():
        pytest.fail("the pinned MCP Inspector is missing: run "
                    "`cd tests/e2e/mcp_inspector && npm ci` (scripts/test.sh does)")
    path = str(tmp_path_factory.mktemp("inspector") / "memory.db")
    created = _cli("--path", path, "mcp", "token", "create", "inspector", "--json")
    assert created.returncode == 0, created.stderr
    token = json.loads(created.stdout)["token"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tulving.interfaces.cli.main", "--path", path, *FAST,
         "--agent-id", AGENT, "mcp", "--http", "--port", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=clean_env(),
        cwd=str(ROOT))
    assert proc.stderr is not None
    url, deadline = None, time.monotonic() + 90
    while url is None and time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        found = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line)
        url = found.group(1) if found else None
    assert url, "the MCP server did not announce its address"
    try:
        yield url, token
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _inspect(command: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=120,
                          env=clean_env(), cwd=str(ROOT))


def _current(url: str, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    return _inspect([str(CURRENT), "--cli", "--transport", "http", "--server-url", url,
                     "--header", f"Authorization: Bearer {token}"], *args)


def _tool_args(values: dict[str, str]) -> list[str]:
    return ["--tool-arg", *(f"{k}={v}" for k, v in values.items())] if values else []


def _answer(run: subprocess.CompletedProcess[str], tool: str) -> dict[str, Any]:
    assert run.returncode == 0, f"{tool}: {run.stdout[-2000:]} {run.stderr[-2000:]}"
    result: dict[str, Any] = json.loads(run.stdout)
    text = "".join(part["text"] for part in result["content"] if part["type"] == "text")
    assert not result.get("isError"), f"{tool}: {text}"
    structured = json.dumps(result["structuredContent"], ensure_ascii=False,
                            separators=(",", ":"))
    assert len(structured.encode()) <= len(text.encode()), (
        f"{tool}: structured content ({len(structured)} B) is larger than its text "
        f"({len(text)} B)")
    return result


def test_every_argument_of_every_tool_through_the_current_inspector(
        http_server: tuple[str, str]) -> None:
    url, token = http_server
    listed = _current(url, token, "--method", "tools/list", "--strict")
    assert listed.returncode == 0, listed.stderr  # no error-severity portability problem
    schemas = {t["name"]: t["inputSchema"] for t in json.loads(listed.stdout)["tools"]}
    assert set(schemas) == set(ARGS)
    for name, schema in schemas.items():
        assert set(ARGS[name]) == set(schema.get("properties", {})), name  # every argument
        for argument, spec in schema.get("properties", {}).items():
            assert isinstance(spec.get("type"), str) and "anyOf" not in spec, (name, argument)
    answers: dict[str, dict[str, Any]] = {}
    for name, values in ARGS.items():
        if name == "memory_list":  # a cursor is what a first page hands out
            first = _answer(_current(url, token, "--method", "tools/call", "--tool-name",
                                     name, "--tool-arg", "limit=1"), name)
            values = {**values, "cursor": first["structuredContent"]["next_cursor"],
                      "tags": "[]"}
        answers[name] = _answer(_current(url, token, "--method", "tools/call",
                                         "--tool-name", name, *_tool_args(values)), name)
    stored = answers["memory_get"]["structuredContent"]["entry"]
    assert stored["importance"] == 0.8 and stored["pinned"] is True
    assert stored["tags"] == ["deploy", "ops"] and stored["metadata"] == {"team": "infra"}
    assert stored["valid_from"] == "2026-01-02" and stored["type"] == "DECISION"
    found = answers["memory_search"]["structuredContent"]["results"]
    assert [r["key"] for r in found] == ["deploy/day"]
    assert answers["memory_curate"]["structuredContent"]["token_count"] <= 300
    assert "Wednesdays" in answers["memory_correct"]["content"][0]["text"]
    assert answers["memory_list_keys"]["structuredContent"]["keys"] == ["deploy/day"]
    assert answers["memory_erase"]["structuredContent"]["erased"]["deleted"] >= 3


def test_the_old_cli_sets_typed_arguments_through_plain_schemas(tmp_path: Path) -> None:
    """The 0.14 CLI converts by the top-level type only (over stdio: it takes no headers),
    so with the schemas pydantic writes it answered "importance: Input should be a valid
    number"."""
    if not OLD_CLI.exists():
        pytest.fail("the pinned MCP Inspector is missing: run "
                    "`cd tests/e2e/mcp_inspector && npm ci`")
    server = [sys.executable, "-m", "tulving.interfaces.mcp", "--path",
              str(tmp_path / "memory.db"), *FAST, "--agent-id", AGENT]
    typed = {"memory_store": ARGS["memory_store"],  # numbers, booleans, lists, objects
             "memory_search": ARGS["memory_search"]}
    for name, values in typed.items():
        run = _inspect(["node", str(OLD_CLI), *server], "--method", "tools/call",
                       "--tool-name", name, *_tool_args(values))
        _answer(run, name)


def test_http_answers_2026_requests_without_a_session(http_server: tuple[str, str]) -> None:
    """Over streamable HTTP a 2026-07-28 request is one POST: no initialize, no
    Mcp-Session-Id, the method (and tool) named in headers too; the token still gates."""
    import httpx

    url, token = http_server
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}

    def post(number: int, method: str, params: dict[str, Any], *,
             auth: bool = True) -> httpx.Response:
        headers = {"Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
        if method == "tools/call":
            headers["Mcp-Name"] = params["name"]
        if auth:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.post(url, headers=headers, timeout=60, json={
            "jsonrpc": "2.0", "id": number, "method": method,
            "params": {**params, "_meta": meta}})

    found = post(1, "server/discover", {})
    assert found.status_code == 200 and "mcp-session-id" not in found.headers
    assert "2026-07-28" in found.json()["result"]["supportedVersions"]
    stats = post(2, "tools/call", {"name": "memory_stats", "arguments": {}})
    assert stats.status_code == 200 and stats.json()["result"]["isError"] is False
    assert post(3, "server/discover", {}, auth=False).status_code == 401
