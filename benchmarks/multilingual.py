"""The multilingual embedder against MiniLM on a small check set of other languages.

Usage::

    .venv/bin/python benchmarks/multilingual.py

The set (``tests/fixtures/multilingual/check_set.json``, written for Tulving): 24 turns in
German, Spanish, Portuguese, French and English, 16 questions in the turns' languages,
each answered by one turn. Each embedder gets a fresh store (SQLite, exact vectors); the
figures are recall@1 and @3 of ``search()`` in semantic and hybrid mode. Printed beside
them: how long each took to embed the turns (the raw model, same run).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from tulving import Memory

SET = Path(__file__).resolve().parents[1] / "tests/fixtures/multilingual/check_set.json"


def run(embedder: str) -> dict[str, float]:
    data = json.loads(SET.read_text(encoding="utf-8"))
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, Memory(
            Path(tmp) / "m.db", agent_id="check", embedder=embedder, vectors="exact") as m:
        started = time.perf_counter()
        stored = m.store_many([{"content": t, "type": "EPISODE", "metadata": {"turn": k}}
                               for k, t in data["turns"].items()])
        out["ingest_s"] = round(time.perf_counter() - started, 2)
        del stored
        for mode in ("semantic", "hybrid"):
            for k in (1, 3):
                found = 0
                for q in data["questions"]:
                    hits = m.search(q["question"], k, mode=mode)
                    found += any(h.entry.metadata["turn"] == q["answer"] for h in hits)
                out[f"{mode} R@{k}"] = round(100 * found / len(data["questions"]), 1)
    return out


def main() -> int:
    for embedder in ("local", "multilingual"):
        print(embedder, run(embedder))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
