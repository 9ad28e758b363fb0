"""Precision of the no-LLM extraction rules on a labelled sample of turns.

Usage: ``.venv/bin/python benchmarks/extraction_rules.py [--show]``

The sample (``tests/fixtures/extraction/labelled_turns.json``) was written for the project:
user and assistant turns of everyday chat (self-statements, questions, requests, hedges,
reactions to the assistant, small talk, lists), each with the memories a faithful extractor
may produce. A candidate is correct when it has the type of an expected item and contains
all of that item's words; precision is correct / produced, recall is matched / expected
(optional items count only for precision). Also printed: the candidates by type. Run it
with ``PYTHONPATH`` pointing at another checkout to measure that checkout's rules.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tulving.domain.extraction_rules import Turn, extract_candidates

SAMPLE = Path(__file__).resolve().parent.parent / "tests/fixtures/extraction/labelled_turns.json"


def matches(candidate: Any, item: dict[str, Any]) -> bool:
    text = candidate.content.casefold()
    return candidate.type.value == item["type"] and all(
        word.casefold() in text for word in item["contains"])


def measure(path: Path = SAMPLE, show: bool = False) -> dict[str, Any]:
    sample = json.loads(path.read_text(encoding="utf-8"))
    produced = correct = expected = found = 0
    by_type: Counter[str] = Counter()
    wrong: list[str] = []
    missed: list[str] = []
    for turn in sample["turns"]:
        cands = extract_candidates(Turn(turn["speaker"], turn["text"]), sample["subject"])
        items = turn["expect"]
        for cand in cands:
            produced += 1
            by_type[cand.type.value] += 1
            if any(matches(cand, item) for item in items):
                correct += 1
            else:
                wrong.append(f"{cand.type.value}: {cand.content!r} <- {turn['text']!r}")
        for item in items:
            if item.get("optional"):
                continue
            expected += 1
            if any(matches(c, item) for c in cands):
                found += 1
            else:
                missed.append(f"{item['type']} {item['contains']} <- {turn['text']!r}")
    if show:
        for line in wrong:
            print("false positive:", line)
        for line in missed:
            print("missed:", line)
    return {"turns": len(sample["turns"]), "produced": produced, "correct": correct,
            "precision": correct / produced if produced else 1.0,
            "expected": expected, "found": found,
            "recall": found / expected if expected else 1.0, "by_type": dict(by_type)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--show", action="store_true", help="list false positives and misses")
    args = parser.parse_args(argv)
    result = measure(show=args.show)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
