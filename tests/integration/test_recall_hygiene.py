"""What a recall leaves out: copies of a hit, the question's own turn, tool items (real
SQLite and the in-memory store; the CLI as a second door, in another process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tulving import TOOL_ITEM_TAG

TURNS = [
    "user: I usually eat oatmeal with blueberries for breakfast.",
    "assistant: Oatmeal is a good start to the day.",
    "user: My sister lives in Lisbon and visits every spring.",
    "user: We deploy with blue-green releases on Fridays.",
]


@pytest.fixture(params=["sqlite", "memory"])
def memory(request: Any, make_memory: Any) -> Any:
    return make_memory(storage=request.param)


def test_identical_contents_are_one_hit(memory: Any) -> None:
    memory.store_many([{"content": t, "type": "EPISODE"} for t in TURNS])
    twice = memory.store_many([{"content": TURNS[0], "type": "EPISODE", "dedup": False},
                               {"content": "  " + TURNS[0].replace(" ", "  ") + " ",
                                "type": "EPISODE", "dedup": False}])
    assert len({e.id for e in twice}) == 2  # stored: three copies of one text
    for mode in ("hybrid", "lexical", "semantic"):
        hits = memory.search("oatmeal blueberries breakfast", 4, mode=mode)
        texts = [" ".join(h.entry.content.split()) for h in hits]
        assert len(texts) == len(set(texts)), (mode, texts)
        assert texts.count(TURNS[0]) == 1
    # top_k is still filled from what else the store holds
    assert len(memory.search("oatmeal blueberries breakfast", 4)) == 4


def test_the_question_just_stored_is_not_its_own_answer(memory: Any) -> None:
    memory.store_many([{"content": t, "type": "EPISODE"} for t in TURNS])
    memory.store("user: What do I eat for breakfast?", type="EPISODE")
    hits = memory.search("what do I eat for breakfast?", 3)
    assert hits and "oatmeal" in hits[0].entry.content
    assert all("What do I eat" not in h.entry.content for h in hits)
    block = memory.curate("What do I eat for breakfast?", token_budget=400)
    assert "oatmeal" in block.content and "What do I eat" not in block.content
    # a turn that says more than the question is not an echo
    longer = memory.store("user: what do I eat for breakfast? oatmeal, always", type="EPISODE")
    assert longer.id in [h.entry.id for h in memory.search("what do I eat for breakfast", 5)]


def test_tool_items_are_left_out_of_recall_unless_asked_for(memory: Any) -> None:
    memory.store_many([{"content": t, "type": "EPISODE"} for t in TURNS])
    tool = memory.store_many([
        {"content": 'tool call lookup_breakfast({"user": "me", "meal": "breakfast"})',
         "type": "EPISODE", "tags": ["session-1", TOOL_ITEM_TAG]},
        {"content": "tool output: breakfast breakfast breakfast oatmeal eat eat",
         "type": "EPISODE", "tags": ["session-1", TOOL_ITEM_TAG]},
    ])
    tool_ids = {e.id for e in tool}
    for mode in ("hybrid", "lexical", "semantic"):
        found = {h.entry.id for h in memory.search("what do I eat for breakfast", 10,
                                                   mode=mode)}
        assert not found & tool_ids, mode
    block = memory.curate("what do I eat for breakfast", token_budget=1000)
    assert not {c.entry.id for c in block.entries} & tool_ids
    briefing = memory.curate(token_budget=2000)  # the cold-start briefing
    assert not {c.entry.id for c in briefing.entries} & tool_ids
    asked = {h.entry.id for h in memory.search("breakfast", 10, tags=[TOOL_ITEM_TAG])}
    assert asked == tool_ids
    # listing is not recall: every entry is still there
    listed = {e.id for e in memory.list_entries(limit=100).entries}
    assert tool_ids <= listed


def test_the_cli_search_leaves_tool_items_and_copies_out_too(tmp_path: Path) -> None:
    """A second door, in another process: ``tulving search`` over the same store."""
    from tulving import Memory

    path = tmp_path / "door.db"
    with Memory(path, agent_id="agent-a", embedder="hashing", vectors="exact") as m:
        m.store_many([{"content": t, "type": "EPISODE"} for t in TURNS])
        m.store(TURNS[0], type="EPISODE", dedup=False)
        m.store("tool output: oatmeal oatmeal blueberries breakfast", type="EPISODE",
                tags=[TOOL_ITEM_TAG])
    def cli(*extra: str) -> list[dict[str, Any]]:
        out = subprocess.run(
            [str(Path(sys.executable).parent / "tulving"), "--path", str(path),
             "--agent-id", "agent-a", "--embedder", "hashing", "--vectors", "exact",
             "search", "oatmeal blueberries breakfast", "--json", *extra],
            capture_output=True, text=True, timeout=120, check=True)
        data = json.loads(out.stdout)
        return list(data["results"] if isinstance(data, dict) else data)

    texts = [r["entry"]["content"] if "entry" in r else r["content"] for r in cli()]
    assert texts.count(TURNS[0]) == 1
    assert not any(t.startswith("tool output") for t in texts)
    asked = [r["entry"]["content"] if "entry" in r else r["content"]
             for r in cli("--tag", TOOL_ITEM_TAG)]
    assert asked == ["tool output: oatmeal oatmeal blueberries breakfast"]
