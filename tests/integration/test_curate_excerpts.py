"""curate() shows a long memory as the passage a topic-restating question asks about
(issue 47): the written set's 24 long answers in one store, each question curated at
1,000 and 2,000 tokens; in-process, and through the CLI in a second process on the same
file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.e2e.conftest import FAST, ROOT, clean_env
from tests.unit.test_topic_recall import MEMORIES, QUESTIONS
from tulving.domain.packing import EXCERPT_MARKER

BUDGETS = (1000, 2000)


def _store_all(memory: Any) -> dict[str, str]:
    ids = {}
    for item in MEMORIES:
        stored = memory.store(f"assistant: {item['text']}", type="EPISODE")
        ids[item["id"]] = stored.id
    return ids


def _excerpt_line(content: str, memory_id: str) -> str | None:
    marker = EXCERPT_MARKER.format(id=memory_id)
    lines = [line for line in content.split("\n") if line.endswith(marker)]
    return lines[0] if lines else None


def test_curated_excerpts_keep_the_answer(make_memory: Any) -> None:
    memory = make_memory()
    ids = _store_all(memory)
    excerpted = kept = 0
    for item, q in QUESTIONS:
        for budget in BUDGETS:
            block = memory.curate(q["question"], token_budget=budget)
            assert block.token_count <= budget
            line = _excerpt_line(block.content, ids[item["id"]])
            if line is None:
                continue
            disclosure = [e.disclosure for e in block.entries if e.entry.id == ids[item["id"]]]
            assert disclosure == ["excerpt"]
            excerpted += 1
            kept += q["answer"] in line
    # the memory asked about is shown, as an excerpt, for nearly every question ...
    assert excerpted >= 0.9 * len(QUESTIONS) * len(BUDGETS)
    # ... and its excerpt keeps the answer
    assert kept >= 0.95 * excerpted, (kept, excerpted)
    whole = memory.get(ids["jazz"])
    assert whole is not None and "Somethin' Else" in whole.content  # the store keeps all


def test_through_the_cli_on_the_same_file(make_memory: Any, tmp_path: Path) -> None:
    memory = make_memory("cli.db")
    ids = _store_all(memory)
    memory.close()
    asked = [(item, q) for item, q in QUESTIONS if q["kind"] == "ordinal"][:3]
    for item, q in asked:
        done = subprocess.run(
            [sys.executable, "-m", "tulving.interfaces.cli.main", "curate", q["question"],
             "--budget", "1000", "--path", str(tmp_path / "cli.db"), "--agent-id",
             "agent-a", *FAST, "--json"],
            capture_output=True, text=True, env=clean_env(), cwd=str(ROOT), timeout=120)
        assert done.returncode == 0, done.stderr
        curated = json.loads(done.stdout)
        line = _excerpt_line(curated["content"], ids[item["id"]])
        assert line is not None and q["answer"] in line, (q["question"], curated["content"])
