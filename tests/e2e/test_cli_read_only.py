"""Reading a memory from the terminal while an agent's MCP server writes it (issue 32), and
a read-only command never re-embedding a store (issue 33).

The MCP server is the real one (``python -m tulving.interfaces.mcp``) driven by the
official client; it holds the SQLite store's writer lock the whole time. The CLI commands
run as subprocesses, as a user types them. Before, every one of them exited 4 ("open for
writing by another process").
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.e2e.conftest import ROOT, CLIResult, clean_env

pytestmark = pytest.mark.anyio

#: The hashing embedder with the default vector index (its cache file beside the store).
HASHING = ["--embedder", "hashing"]


def server(path: str) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "tulving.interfaces.mcp", "--path", path, "--agent-id", "e2e", *HASHING],
        env=clean_env(), cwd=str(ROOT))


def cli(path: str, *args: str) -> CLIResult:
    proc = subprocess.run(
        [sys.executable, "-m", "tulving.interfaces.cli.main", "--path", path,
         "--agent-id", "e2e", *HASHING, *args],
        capture_output=True, text=True, env=clean_env(), timeout=120)
    return CLIResult(proc)


async def test_reading_commands_work_while_the_mcp_server_writes(tmp_path: Path) -> None:
    path = str(tmp_path / "memory.db")
    async with Client(server(path)) as client:
        first = await client.call_tool("memory_store", {
            "content": "The staging database moved to Frankfurt", "type": "FACT",
            "key": "infra/staging-db"})
        assert not first.is_error
        # a writer command is still refused: one process writes a SQLite memory
        refused = cli(path, "store", "from the terminal")
        assert refused.code == 4 and "another process" in refused.err, refused
        # stored after the server's index cache was last written: a reader finds it
        # through storage's vector change log, by meaning too
        later = await client.call_tool("memory_store", {
            "content": "Invoices are archived under the finance share every Friday",
            "type": "FACT", "key": "finance/invoices"})
        assert not later.is_error

        found = cli(path, "search", "staging database", "--json")
        assert found.code == 0, found
        assert any("Frankfurt" in hit["content"] for hit in found.json()["results"])
        semantic = cli(path, "search", "invoices archived finance", "--mode", "semantic",
                       "--json")
        assert semantic.code == 0, semantic
        assert "finance share" in semantic.json()["results"][0]["content"]
        curated = cli(path, "curate", "where is staging", "--budget", "300")
        assert curated.code == 0 and "Frankfurt" in curated.out, curated
        got = cli(path, "get", "infra/staging-db")
        assert got.code == 0 and "Frankfurt" in got.out, got
        listed = cli(path, "list")
        assert listed.code == 0 and "finance/invoices" in listed.out, listed
        history = cli(path, "history", "infra/staging-db")
        assert history.code == 0 and "Frankfurt" in history.out, history
        stats = cli(path, "stats", "--json")
        assert stats.code == 0 and stats.json()["active"] == 2, stats
        exported = cli(path, "export", str(tmp_path / "bundle.zip"))
        assert exported.code == 0 and (tmp_path / "bundle.zip").exists(), exported

        # the server keeps writing and sees nothing the readers did
        again = await client.call_tool("memory_store", {
            "content": "The staging database moved again, to Dublin", "type": "FACT",
            "key": "infra/staging-db"})
        assert not again.is_error
        history = cli(path, "history", "infra/staging-db", "--json")
        assert history.code == 0 and len(history.json()) == 2, history
    # readers recorded nothing: no access counted, no read audited (the documented rule)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT max(access_count) FROM entries").fetchone()[0] == 0
        actions = {row[0] for row in db.execute("SELECT action FROM audit_log")}
    assert not actions & {"search", "curate", "get", "list_entries", "export"}, actions


def test_a_read_only_command_refuses_another_embedder_and_reembeds_nothing(
        tulving: Callable[..., CLIResult], tmp_path: Path) -> None:
    """Before: `tulving search --embedder other` re-embedded the whole store into the
    other model, and the next plain command re-embedded it back."""
    path = str(tmp_path / "m.db")
    assert tulving("--path", path, *HASHING, "store", "the deploy runs on Fridays").code == 0

    def model_and_vectors() -> tuple[str, list[bytes]]:
        with sqlite3.connect(path) as db:
            model = db.execute(
                "SELECT value FROM meta WHERE name = 'embedding_model_id'").fetchone()[0]
            return model, [r[0] for r in db.execute("SELECT vector FROM embeddings")]

    before = model_and_vectors()
    for command in (["search", "deploy"], ["stats"], ["curate", "deploy", "--budget", "200"]):
        result = tulving("--path", path, "--embedder", "local", *command)
        assert result.code == 3, result
        assert "tulving maintenance reembed" in result.err, result.err
        assert "Traceback" not in result.err
        assert model_and_vectors() == before
    plain = tulving("--path", path, *HASHING, "search", "deploy", "--json")
    assert plain.code == 0 and "Fridays" in plain.json()["results"][0]["content"]
    assert model_and_vectors() == before


def test_read_only_commands_on_a_new_or_old_store_still_work(
        tulving: Callable[..., CLIResult], tmp_path: Path) -> None:
    """A store that is not there yet (a first `tulving search`) is refused and not created
    (``NotFoundError``, exit 1: docs/cli.md); once a write made it, or when it needs a
    migration, the command answers as it did before."""
    path = str(tmp_path / "fresh.db")
    first = tulving("--path", path, *HASHING, "search", "anything", "--json")
    assert first.code == 1 and first.json()["error"]["type"] == "NotFoundError", first
    assert not (tmp_path / "fresh.db").exists()
    assert tulving("--path", path, *HASHING, "store", "a first memory", "-t", "FACT").code == 0
    stats = tulving("--path", path, *HASHING, "stats", "--json")
    assert stats.code == 0 and json.loads(stats.out)["active"] == 1
