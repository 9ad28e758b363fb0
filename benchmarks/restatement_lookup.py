"""The write path's restatement lookup as a store of facts grows, beside FTS5 alone.

Usage::

    .venv/bin/python benchmarks/restatement_lookup.py /work/shared/data/locomo/locomo_dev.json \\
        --takes 4

Every FACT or PREFERENCE a write stores is first looked up among the active ones of its
partition (``reinforce.lexical_candidates``: the best 8 by bm25 for the OR of its words),
inside the writer's transaction. On FTS5 such a query costs about 1.4 µs per matching row,
so on a store of facts that share words every fact cost more than the last (2,000 facts
took 3.75 s into an empty store, 9.38 s into one of 2,000). The lookup now runs on the
in-memory mirror of the index whenever the transaction has not written a text yet.

The data: the LoCoMo dev turns' texts (without speaker or date), stored as FACTs in
batches of 1,000 through ``store_many``, ``--takes`` times, each take with its own number
(" (take 2)") so a take is new facts, not restatements. Two stores are filled side by side
(batch by batch, so a slow spell of the shared machine falls on both): the default
(``fulltext_mirror_from`` 5,000) and one with the mirror off (FTS5 alone, what every
lookup ran on before). No embedder: the figures are the write path's own. Printed per
batch: the rows before it, each store's ``store_many`` seconds and the time inside the
lookups (ms per lookup), and the raw engine's figure: the same OR query straight to FTS5
(``bm25`` ordered, ``LIMIT 8``) on the default store's file. Both stores must end with the
same active count (the same decisions).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo_data import load

import tulving.application.writing.contradictions as contradictions
from tulving import Memory
from tulving.domain.lexical import query_terms

BATCH = 1000


def _spent(record: list[float]) -> Callable[..., object]:
    original = contradictions.lexical_candidates

    def timed(ctx: object, entry: object) -> object:
        began = time.perf_counter()
        try:
            return original(ctx, entry)  # type: ignore[arg-type]
        finally:
            record.append(time.perf_counter() - began)

    return timed


def _raw_fts5(path: str, texts: Sequence[str]) -> float:
    """Seconds for the lookups' OR queries straight to FTS5, ``texts`` one each."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        began = time.perf_counter()
        for text in texts:
            terms = [t.replace('"', '""') for t in query_terms(text)]
            if terms:
                conn.execute("SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? "
                             "ORDER BY bm25(entries_fts) LIMIT 8",
                             (" OR ".join(f'"{t}"' for t in terms),)).fetchall()
        return time.perf_counter() - began
    finally:
        conn.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("locomo", help="locomo_dev.json (see shared/data/locomo/README.md)")
    parser.add_argument("--takes", type=int, default=4)
    args = parser.parse_args(argv)
    turns = [t.text.split(": ", 1)[1] for c in load(args.locomo) for t in c.turns]
    texts = [f"{t} (take {n})" if n else t for n in range(args.takes) for t in turns]
    with tempfile.TemporaryDirectory() as folder:
        stores = {
            "mirror": Memory(f"{folder}/mirror.db", agent_id="bench", embedder=None,
                             vectors=None),
            "fts5": Memory(f"{folder}/fts5.db", agent_id="bench", embedder=None,
                           vectors=None, options={"storage": {"fulltext_mirror_from": None}}),
        }
        print(f"{len(texts)} facts from {len(turns)} LoCoMo turns, batches of {BATCH}")
        print(f"{'rows':>6} | {'default s':>9} {'ms/lookup':>9} | {'fts5 s':>7} "
              f"{'ms/lookup':>9} | {'raw fts5 ms':>11} | lookup fts5/default")
        for start in range(0, len(texts), BATCH):
            batch = texts[start:start + BATCH]
            figures: dict[str, tuple[float, float]] = {}
            for name, memory in stores.items():
                lookups: list[float] = []
                contradictions.lexical_candidates = _spent(lookups)  # type: ignore[assignment]
                began = time.perf_counter()
                memory.store_many([{"content": t, "type": "FACT"} for t in batch])
                figures[name] = (time.perf_counter() - began,
                                 1000 * sum(lookups) / max(1, len(lookups)))
            raw = 1000 * _raw_fts5(f"{folder}/mirror.db", batch) / len(batch)
            (d_s, d_ms), (f_s, f_ms) = figures["mirror"], figures["fts5"]
            print(f"{start:>6} | {d_s:>9.2f} {d_ms:>9.2f} | {f_s:>7.2f} {f_ms:>9.2f} | "
                  f"{raw:>11.2f} | {f_ms / max(d_ms, 1e-9):.1f}x", flush=True)
        active = {name: m.stats().active for name, m in stores.items()}
        for memory in stores.values():
            memory.close()
    print("active entries:", active, "(same decisions)" if len(set(active.values())) == 1
          else "(DIFFERENT decisions)")
    return 0 if len(set(active.values())) == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
