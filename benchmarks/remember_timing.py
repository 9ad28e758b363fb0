"""How long ``remember()`` of a long history keeps its caller, and what follows it.

Usage::

    .venv/bin/python benchmarks/remember_timing.py /work/shared/data/longmemeval_s_dev
    .venv/bin/python benchmarks/remember_timing.py PATH --histories 3

For each of the first N LongMemEval_S dev histories (``_longmemeval_data.py`` order, the
tuning half first), the whole history (~500 turns, ``role: text``) is given to ONE
``remember()`` call on a fresh SQLite store with the local model (ONNX MiniLM), no LLM.
Measured in the same run, on the same turn texts:

- ``remember()``: until it returns (the turns committed, findable by full text);
- background: from the call until ``wait_enriched()`` is settled (what is read off the
  turns, written, and every vector: the turns' and the extracted memories');
- the raw engines: the model alone embedding the turn texts (its own rate), and plain
  SQLite inserting them into an FTS5 table in one transaction;
- ``remember(wait=True)`` on a second fresh store: the caller waits for all of it.

Printed with the machine's load (``os.getloadavg``): on two shared cores, figures are
ratios against the raw engines of the same run, not absolute times.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _longmemeval_data import Question, load

from tulving import Memory

_LABEL = re.compile(r"^\[[^\]]*\]\s*\w+:\s*")


def transcript(question: Question) -> tuple[str, list[str]]:
    """The history as one ``role: text`` transcript, and its turn texts."""
    texts = [f"{t.role}: {_LABEL.sub('', t.text)}" for t in question.turns]
    return "\n".join(texts), texts


def plain_sqlite(texts: list[str], folder: Path) -> float:
    started = time.perf_counter()
    db = sqlite3.connect(folder / "plain.db")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    with db:
        db.executemany("INSERT INTO t(body) VALUES (?)", [(t,) for t in texts])
    db.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data")
    parser.add_argument("--histories", type=int, default=2)
    args = parser.parse_args()
    from tulving.adapters.embedders.local_onnx import LocalOnnxEmbedder

    model = LocalOnnxEmbedder()
    model.embed(["warm up"])
    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores)")
    for question in load(args.data)[: args.histories]:
        text, texts = transcript(question)
        started = time.perf_counter()
        model.embed(texts)
        raw_model = time.perf_counter() - started
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            raw_sqlite = plain_sqlite(texts, folder)
            with Memory(folder / "a.db", agent_id="t", embedder=model) as memory:
                memory.startup()
                started = time.perf_counter()
                turns = memory.remember(text)
                returned = time.perf_counter() - started
                report = memory.wait_enriched()
                background = time.perf_counter() - started
                assert report.settled
            with Memory(folder / "b.db", agent_id="t", embedder=model) as memory:
                started = time.perf_counter()
                memory.remember(text, wait=True)
                waited = time.perf_counter() - started
        print(f"{question.question_id}: {len(texts)} turns ({len(turns)} kept, "
              f"{len(text) // 1000} kB); "
              f"remember() returned in {returned:.2f} s ({returned / raw_sqlite:.1f}x plain "
              f"SQLite+FTS5 {raw_sqlite:.2f} s); background done after {background:.1f} s "
              f"({background / raw_model:.2f}x the model alone, {raw_model:.1f} s); "
              f"remember(wait=True) {waited:.1f} s ({waited / raw_model:.2f}x the model); "
              f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
