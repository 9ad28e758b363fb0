"""A long memory is curated as the passage that bears on the query, marked with the
memory's id, and stays whole one ``get`` away: in-process, through the HTTP server and
its Python client, and through the CLI on the same store file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import FAST, ROOT, clean_env
from tests.http.conftest import Server
from tulving import Memory
from tulving.client import TulvingClient

FACT = "Ann's sister Marta moved to Porto in March and teaches violin at a music school there."
FILLER = [
    "The team reviewed the quarterly roadmap and agreed to move the launch by a week.",
    "Most of the afternoon went into reading the incident report from the night before.",
    "A new laptop arrived for the intern, and setting it up took longer than planned.",
    "We compared three vendors for the office coffee machine and picked the quiet one.",
    "The garden needs watering twice a week once the summer heat begins in earnest.",
    "Someone suggested a book club, and the first pick is a novel about lighthouses.",
    "The bus schedule changes in the winter, so the early route leaves ten minutes later.",
    "Our landlord promised to repaint the hallway before the end of the season.",
]
LONG = " ".join(FILLER[:4] * 3 + [FACT] + FILLER[4:] * 3)
QUESTION = "Where does Marta teach violin?"


def _assert_excerpt(content: str, entries: list[dict[str, object]] | tuple[object, ...],
                    memory_id: str) -> None:
    assert FACT in content, content
    assert f"[excerpt of {memory_id}]" in content
    assert len(content) < len(LONG) / 2  # the passage, not the whole answer
    shown = [e for e in entries if isinstance(e, dict) and e.get("id") == memory_id]
    assert shown and shown[0]["disclosure"] == "excerpt", entries


def test_in_process_and_through_the_cli_on_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(path, agent_id="ex", embedder="hashing", vectors="exact") as memory:
        long = memory.store(LONG, type="EPISODE")
        memory.store("Marta's birthday is in May.", type="FACT")
        block = memory.curate(QUESTION, token_budget=300)
        assert FACT in block.content and f"[excerpt of {long.id}]" in block.content
        assert [e.disclosure for e in block.entries if e.entry.id == long.id] == ["excerpt"]
        whole = memory.get(long.id)
        assert whole is not None and whole.content == LONG  # the store keeps every word
    done = subprocess.run(
        [sys.executable, "-m", "tulving.interfaces.cli.main", "curate", QUESTION,
         "--budget", "300", "--path", str(path), "--agent-id", "ex", *FAST, "--json"],
        capture_output=True, text=True, env=clean_env(), cwd=str(ROOT), timeout=120)
    assert done.returncode == 0, done.stderr
    curated = json.loads(done.stdout)
    _assert_excerpt(curated["content"], curated["entries"], long.id)


def test_through_the_server_and_the_python_client(server: Server) -> None:
    with TulvingClient(server.url, server.tokens["alice"], agent_id="ex") as remote:
        long = remote.store(LONG, type="EPISODE")
        block = remote.curate(QUESTION, token_budget=300)
        _assert_excerpt(block.content, block.entries, long.id)
        assert remote.get(long.id).content == LONG
