"""``min_score`` at the CLI and MCP doors (issue 40): the same cut as the library's on the
same store file, in another process; a bad threshold is a usage error that changes
nothing. (The HTTP door: ``tests/http/test_min_score.py``.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.e2e.conftest import FAST, CLIResult
from tulving import Memory

MEMORIES = [
    "Alice has been vegetarian since 2019",
    "Bob is vegetarian too and cooks lentil soup",
    "The team lunch is on Friday at noon in the vegetarian place",
    "Carol prefers answers in Portuguese",
    "The deploy pipeline runs every night",
    "Dave bought a new bicycle last week",
]
QUERY = "who is vegetarian?"


def _fill(path: str) -> list[tuple[str, float]]:
    """Store the memories; the library's own (content, score) ranking for ``QUERY``."""
    with Memory(path, agent_id="e2e", embedder="hashing", vectors="exact") as m:
        m.store_many({"content": text, "type": "FACT"} for text in MEMORIES)
        return [(r.entry.content, r.score) for r in m.search(QUERY, 6)]


def _cut(ranking: list[tuple[str, float]]) -> float:
    """A threshold between the second and the third hit."""
    assert ranking[1][1] > ranking[2][1]
    return (ranking[1][1] + ranking[2][1]) / 2


def test_cli_min_score_is_the_library_cut(tulving: Callable[..., CLIResult], store: str) -> None:
    ranking = _fill(store)
    common = ["--path", store, *FAST, "--agent-id", "e2e"]
    every = tulving("search", QUERY, "-n", "6", "--json", *common)
    assert every.code == 0, every
    assert [(r["content"], pytest.approx(r["score"], abs=1e-6)) for r in every.json()["results"]] == [
        (c, pytest.approx(s, abs=1e-6)) for c, s in ranking]
    cut = _cut(ranking)
    kept = tulving("search", QUERY, "-n", "6", "--min-score", str(cut), "--json", *common)
    assert kept.code == 0, kept
    assert [r["content"] for r in kept.json()["results"]] == [c for c, _ in ranking[:2]]
    for bad in ("1.5", "-0.2", "nan", "lots"):
        refused = tulving("search", QUERY, "--min-score", bad, *common)
        assert refused.code == 2 and "min" in refused.err.lower(), refused


@pytest.mark.anyio
async def test_mcp_min_score_is_the_library_cut(server_params: Callable[..., Any],
                                                store: str) -> None:
    ranking = _fill(store)
    cut = _cut(ranking)
    async with Client(server_params()) as client:
        schema = {t.name: t for t in (await client.list_tools()).tools}["memory_search"]
        assert "min_score" in schema.input_schema["properties"]
        every = await client.call_tool("memory_search", {"query": QUERY, "top_k": 6})
        assert not every.is_error
        assert [r["score"] for r in every.structured_content["results"]] == pytest.approx(
            [s for _, s in ranking], abs=1e-6)
        kept = await client.call_tool("memory_search", {"query": QUERY, "top_k": 6,
                                                        "min_score": cut})
        assert not kept.is_error
        kept_ids = [r["id"] for r in kept.structured_content["results"]]
        assert kept_ids == [r["id"] for r in every.structured_content["results"][:2]]
        assert all(c in kept.content[0].text for c, _ in ranking[:2])
        whole = await client.call_tool("memory_search", {"query": QUERY, "min_score": 0})
        assert not whole.is_error and len(whole.structured_content["results"]) == 6
        for bad in (1.5, -0.1, "0.5", True):
            refused = await client.call_tool("memory_search", {"query": QUERY,
                                                               "min_score": bad})
            assert refused.is_error, bad


def test_the_demo_store_scores_a_match_above_the_documented_threshold(
    tulving: Callable[..., CLIResult], tmp_path: Path,
) -> None:
    """The embedded default (local model) with the learned ranker chosen in the project's
    ``tulving.toml``, through the CLI: a stored fact asked for by its words passes
    ``--min-score 0.03``; a query about nothing stored returns nothing. (The default
    hand-tuned fusion's scores are relative to the query: no threshold does this.)"""
    (tmp_path / "tulving.toml").write_text('[tulving.options.search]\nranker = "learned"\n')
    path = str(tmp_path / "default.db")
    for text in MEMORIES:
        assert tulving("store", text, "--type", "FACT", "--path", path).code == 0
    found = tulving("search", "vegetarian", "--min-score", "0.03", "--json", "--path", path)
    assert found.code == 0, found
    assert {r["content"] for r in found.json()["results"]} >= {MEMORIES[0], MEMORIES[1]}
    none = tulving("search", "zebra xylophone quantum chromodynamics", "--min-score", "0.03",
                   "--json", "--path", path)
    assert none.code == 0 and none.json()["results"] == [], none
