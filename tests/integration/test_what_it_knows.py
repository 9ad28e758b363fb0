"""What the memory knows about the user: the scenario (three important preferences, two
facts, a project fact, a decision, forty turns of small talk told inside a session)
through the library and, on the same file from another process, the CLI. At 300, 500 and
1,500 tokens the briefing lists every preference and fact about the user under "About
the user" and nothing else there, shows no item twice and prints every section under its
heading; ``profile()`` lists them all, each line with its id and date."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST, ROOT, clean_env
from tulving import Memory
from tulving.testing.scenarios import (
    DECISION,
    PROJECT_FACT,
    USER_FACTS,
    USER_PREFERENCES,
    briefing_problems,
    knowledge_scenario,
)

BUDGETS = (300, 500, 1500)


@pytest.fixture(scope="module")
def told(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("knows") / "m.db"
    with Memory(path, agent_id="helper", user_id="alice", embedder="hashing",
                vectors="exact") as memory:
        knowledge_scenario(memory)
    return path


def _cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tulving.interfaces.cli.main", *args, "--path", str(path),
         "--agent-id", "helper", "--user-id", "alice", *FAST],
        capture_output=True, text=True, env=clean_env(), cwd=str(ROOT), timeout=120)


@pytest.mark.parametrize("budget", BUDGETS)
def test_the_library_briefing_knows_the_user_once_under_headings(told: Path, budget: int) -> None:
    with Memory(told, agent_id="helper", user_id="alice", embedder="hashing",
                vectors="exact") as memory:
        block = memory.curate(token_budget=budget)
    assert block.token_count <= budget
    assert briefing_problems(block.content) == []
    ids = [e.entry.id for e in block.entries]
    assert len(ids) == len(set(ids))
    profile = {e.entry.content for e in block.entries if e.section == "profile"}
    assert profile == {*USER_PREFERENCES, *USER_FACTS}


def test_the_profile_lists_everything_about_the_user_with_provenance(told: Path) -> None:
    with Memory(told, agent_id="helper", user_id="alice", embedder="hashing",
                vectors="exact") as memory:
        profile = memory.profile()
        by_name = memory.profile("Alice")
    assert [i.content for i in profile.items] == [*reversed(USER_PREFERENCES),
                                                   *reversed(USER_FACTS)]
    assert by_name.items == profile.items
    lines = profile.text.splitlines()[1:]
    for item, line in zip(profile.items, lines, strict=True):
        assert item.id in line and item.since.strftime("%Y-%m-%d") in line
    assert PROJECT_FACT not in profile.text and DECISION not in profile.text


@pytest.mark.parametrize("budget", BUDGETS)
def test_the_cli_briefing_in_another_process(told: Path, budget: int) -> None:
    done = _cli(told, "curate", "--orient", "--budget", str(budget))
    assert done.returncode == 0, done.stderr
    assert briefing_problems(done.stdout.strip()) == []


def test_the_cli_profile_in_another_process(told: Path) -> None:
    done = _cli(told, "profile", "--json")
    assert done.returncode == 0, done.stderr
    items = json.loads(done.stdout)["items"]
    assert {i["content"] for i in items} == {*USER_PREFERENCES, *USER_FACTS}
    assert all(i["id"] and i["since"] for i in items)
