"""``tulving list --all``, ``profile``, ``consolidate`` and ``erase`` as a user runs them
(subprocess, exit codes, JSON)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST, CLIResult


@pytest.fixture
def t(tulving: Callable[..., CLIResult], tmp_path: Path) -> Callable[..., CLIResult]:
    path = str(tmp_path / "m.db")
    return lambda *args, **kw: tulving("--path", path, "--agent-id", "cli", *FAST, *args, **kw)


def test_list_all_pages_through_every_memory(t: Callable[..., CLIResult]) -> None:
    for i in range(5):
        assert t("store", f"keyless observation number {i}", "--type", "OBSERVATION").code == 0
    assert t("store", "a keyed fact", "--key", "k/1").code == 0
    assert t("list", "--json").json()["keys"] == ["k/1"]
    seen: list[str] = []
    cursor: list[str] = []
    while True:
        page = t("list", "--all", "--limit", "2", *cursor, "--json")
        assert page.code == 0, page
        data = page.json()
        seen += [e["content"] for e in data["entries"]]
        if data["next_cursor"] is None:
            break
        cursor = ["--cursor", data["next_cursor"]]
    assert len(seen) == 6 and "a keyed fact" in seen
    only = t("list", "--all", "--type", "OBSERVATION", "--json").json()["entries"]
    assert len(only) == 5
    assert t("list", "--all", "--cursor", "not-a-cursor").code == 2
    assert t("list", "--cursor", "x").code == 2  # --cursor without --all


def test_profile_and_consolidate(t: Callable[..., CLIResult], tmp_path: Path) -> None:
    from tulving import Memory

    with Memory(tmp_path / "m.db", agent_id="cli", embedder="hashing", vectors="exact") as m:
        m.remember("Ann: I live in Lisbon.", subject="Ann", wait=True)  # what is read off, too
    profile = t("profile", "ann", "--json")  # any case finds "Ann"
    assert profile.code == 0, profile
    assert profile.json()["facts"]["lives in"]["value"] == "Lisbon"
    assert "Lisbon" in t("profile", "ANN").out
    plan = t("consolidate", "--json")
    assert plan.code == 0 and plan.json()["applied"] is False
    assert plan.json()["report"]["archived"] == 0


def test_erase_asks_then_deletes_for_good(t: Callable[..., CLIResult]) -> None:
    for i in range(3):
        t("store", f"note {i} of the agent", "--type", "FACT")
    refused = t("erase", "agent")  # no terminal, no --yes: refused, nothing deleted
    assert refused.code == 2 and "--yes" in refused.err
    assert t("stats", "--json").json()["active"] == 3
    erased = t("erase", "agent", "--yes", "--json")
    assert erased.code == 0, erased
    assert erased.json()["erased"]["deleted"] == 3
    assert t("stats", "--json").json()["active"] == 0
    assert t("erase", "user", "--yes").code == 2  # no user id: nothing to erase
