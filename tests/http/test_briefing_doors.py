"""The same briefing behind every door: the issue's preference scenario (two important
preferences, twelve turns of small talk) briefed at 300 tokens in-process, by the CLI in
another process on the same file, by the HTTP server (no query, and ``mode="orient"``)
and its Python client, with tenancy decided by the token."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from tests.e2e.conftest import FAST, ROOT, clean_env
from tests.http.conftest import Server
from tulving import Memory
from tulving.client import TulvingClient
from tulving.testing.scenarios import PORTUGUESE, VEGETARIAN, preference_scenario


def _cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tulving.interfaces.cli.main", *args, "--path", str(path),
         "--agent-id", "brief", *FAST],
        capture_output=True, text=True, env=clean_env(), cwd=str(ROOT), timeout=120)


def test_library_and_the_cli_on_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(path, agent_id="brief", embedder="hashing", vectors="exact") as memory:
        preference_scenario(memory)
        block = memory.curate(token_budget=300)
        assert VEGETARIAN in block.content and PORTUGUESE in block.content
    done = _cli(path, "curate", "--orient", "--budget", "300", "--json")
    assert done.returncode == 0, done.stderr
    curated = json.loads(done.stdout)
    assert curated["mode"] == "orient" and curated["token_count"] <= 300
    assert VEGETARIAN in curated["content"] and PORTUGUESE in curated["content"]
    profile = [e for e in curated["entries"] if e["section"] == "profile"]
    assert {e["key"] for e in profile} == {"user/diet", "user/language"}
    text = _cli(path, "curate", "--orient", "--budget", "300")
    assert text.returncode == 0 and text.stdout.startswith("## About the user")


def test_the_server_briefs_without_a_query_and_keeps_tenants_apart(server: Server) -> None:
    with TulvingClient(server.url, server.tokens["alice"], agent_id="brief") as alice:
        preference_scenario(alice)
        block = alice.curate(token_budget=300)  # no query, no mode: the briefing
        assert block.token_count <= 300
        assert {e["section"] for e in block.entries} >= {"profile", "recent"}
        assert VEGETARIAN in block.content and PORTUGUESE in block.content
        assert alice.curate(token_budget=300, mode="orient").content == block.content
    body = {"token_budget": 300, "agent_id": "brief"}
    raw = httpx.post(f"{server.url}/v1/curate", json=body, headers=server.headers("alice"))
    assert raw.status_code == 200, raw.text
    assert {e["section"] for e in raw.json()["curated"]["entries"]} >= {"profile", "recent"}
    asks = httpx.post(f"{server.url}/v1/curate", json={**body, "mode": "query"},
                      headers=server.headers("alice"))
    assert asks.status_code == 422 or asks.status_code == 400, asks.text
    # bob's token is another user: alice's preferences are not his briefing
    other = httpx.post(f"{server.url}/v1/curate", json=body, headers=server.headers("bob"))
    assert other.status_code == 200
    assert VEGETARIAN not in other.json()["curated"]["content"]
