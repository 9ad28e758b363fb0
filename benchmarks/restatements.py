"""Restatements: where ``restatement_score`` draws the line, on labelled pairs.

Usage::

    .venv/bin/python benchmarks/restatements.py            # both halves, the chosen threshold
    .venv/bin/python benchmarks/restatements.py --sweep    # precision/recall per threshold

The pairs (``tests/fixtures/restatements/labelled_pairs.json``, README beside it) are two
statements about the user that the no-LLM rules extracted from one LongMemEval_S dev
history, of the same type, labelled by hand as restating each other or not. Halves follow
the history's question (``_longmemeval_data.py``): the threshold is chosen on the tuning
half (the lowest whose precision there is at least ``TARGET`` with a margin, so a pair
folded into another is almost never a different thing) and confirmed on the held-back half.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tulving.domain.reinforcement import RESTATEMENT_THRESHOLD, restatement_score

PAIRS = Path(__file__).resolve().parents[1] / "tests/fixtures/restatements/labelled_pairs.json"
TARGET = 0.95
NAMES = frozenset({"user"})


def scored(half: str) -> list[tuple[float, bool]]:
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))
    return [(restatement_score(p["a"], p["b"], NAMES), p["restates"])
            for p in pairs if p["half"] == half]


def precision_recall(rows: list[tuple[float, bool]], threshold: float) -> tuple[float, float, int]:
    chosen = [label for score, label in rows if score >= threshold]
    positives = sum(label for _, label in rows)
    hits = sum(chosen)
    precision = hits / len(chosen) if chosen else 1.0
    return precision, hits / positives if positives else 1.0, len(chosen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sweep", action="store_true")
    args = parser.parse_args()
    halves = {h: scored(h) for h in ("tune", "hold")}
    if args.sweep:
        print("threshold | tune precision / recall / folded | hold precision / recall / folded")
        for step in range(50, 101, 5):
            t = step / 100
            cells = [precision_recall(halves[h], t) for h in ("tune", "hold")]
            print(f"{t:.2f} | " + " | ".join(f"{p:.3f} / {r:.3f} / {n}" for p, r, n in cells))
    for half, rows in halves.items():
        p, r, n = precision_recall(rows, RESTATEMENT_THRESHOLD)
        positives = sum(label for _, label in rows)
        print(f"{half}: {len(rows)} pairs ({positives} restatements); at "
              f"{RESTATEMENT_THRESHOLD}: precision {p:.3f}, recall {r:.3f} ({n} folded)")


if __name__ == "__main__":
    main()
