"""The strong tier's knobs and its calibration, measured on LoCoMo's dev split.

Usage (from the repository root; the data stay outside it)::

    .venv/bin/python benchmarks/strong_tier.py dump /work/shared/data/locomo/locomo_dev.json
    .venv/bin/python benchmarks/strong_tier.py grid        # weight x depth, both halves
    .venv/bin/python benchmarks/strong_tier.py calibrate   # fit the score map on tune

Protocol: stores are built as ``locomo.py`` builds them (one memory per turn, embedded
default); for every question (categories 1-4, and category 5 whose answer is absent) the
served hand-tuned fusion's best 50 (``Searcher.hybrid`` with the strong tier off), their
fused scores and fast cosines, and the strong cosine of each of them (all-mpnet-base-v2,
memoised by ``_strong_cache.py``) are dumped once under ``SCRATCH``. ``grid`` re-orders
each list by :func:`tulving.domain.strong_fusion.rescored` for each (weight, depth) and
reports R@5 / R@10 / cov@1000 per half (conversations 1-3 tune, 4-5 hold, as
``locomo.py``). Knobs are chosen on the tuning half; the held-back half confirms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo
from _locomo_data import load
from _strong_cache import CachingStrongEncoder

from tulving.adapters.tokenizers.tiktoken import create_cl100k
from tulving.application.retrieval.search import build_filter
from tulving.application.retrieval.strong import StrongTier
from tulving.domain.query import ScoredId
from tulving.domain.strong_fusion import rescored

SCRATCH = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / (
    "tulving-benchmarks/strong")
DEPTH = 50


def dump(path: str, scratch: Path) -> Path:
    """One JSON line per question: half, category, evidence, the fused list with its
    scores, fast and strong cosines, and each candidate's token cost."""
    conversations = load(path)
    absent = locomo.absent_questions(path)
    encoder = CachingStrongEncoder(scratch / "mpnet.sqlite")
    locomo.EMBED_CACHE = str(scratch / "minilm.sqlite")
    tokenizer = create_cl100k(None)
    out = scratch / "locomo_rows.jsonl"
    with tempfile.TemporaryDirectory(prefix="tulving-strong-") as tmp, out.open("w") as sink:
        for index, conv in enumerate(conversations):
            memory, _ = locomo.ingest(conv, Path(tmp))
            try:
                searcher = memory._searcher
                tier = StrongTier(encoder, memory.ctx.storage)
                flt = build_filter(memory.ctx)
                cost = {t.dia_id: tokenizer.count(t.text) + 1 for t in conv.turns}
                asked = [(q.text, q.category, list(q.evidence)) for q in conv.questions]
                asked += [(text, 5, []) for text in absent.get(conv.sample_id, [])]
                for text, category, evidence in asked:
                    briefs: dict[str, Any] = {}
                    fused = searcher.hybrid(text, flt, DEPTH, None, whole=False)
                    entries = {e.id: e for e in memory.ctx.storage.get_many(
                        [h.id for h in fused])}
                    texts = {h.id: entries[h.id].content for h in fused if h.id in entries}
                    strong = tier.cosines(text, texts, DEPTH)
                    fast = searcher.similarities(text, list(texts))
                    sink.write(json.dumps({
                        "half": locomo.half_of(index), "category": category,
                        "question": text, "evidence": evidence,
                        "hits": [[entries[h.id].metadata["dia_id"], h.score, fast.get(h.id),
                                  strong.get(h.id), cost[entries[h.id].metadata["dia_id"]]]
                                 for h in fused if h.id in entries]}) + "\n")
                    del briefs
            finally:
                memory.close()
            print(f"conversation {index + 1}: strong vectors computed so far "
                  f"{encoder.computed}", file=sys.stderr)
    return out


def read_rows(scratch: Path) -> list[dict[str, Any]]:
    with (scratch / "locomo_rows.jsonl").open() as handle:
        return [json.loads(line) for line in handle]


def reorder(row: dict[str, Any], weight: float, depth: int) -> list[tuple[str, float]]:
    hits = [ScoredId(h[0], h[1]) for h in row["hits"]]
    cosines = {h[0]: h[3] for h in row["hits"] if h[3] is not None}
    return [(hit.id, hit.score) for hit, _ in rescored(hits, cosines, weight, depth)]


def measures(rows: Sequence[dict[str, Any]], weight: float, depth: int
             ) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        if row["category"] == 5:
            continue
        ranked = [i for i, _ in reorder(row, weight, depth)]
        cost = {h[0]: h[4] for h in row["hits"]}
        cell = out.setdefault(row["half"], {})
        for k in (5, 10):
            cell.setdefault(f"R@{k}", []).append(locomo.recall(ranked, row["evidence"], k))
        cell.setdefault("cov@1000", []).append(
            locomo.coverage(ranked, row["evidence"], cost, 1000))
    return {half: {m: round(100 * statistics.fmean(v), 1) for m, v in cell.items()}
            for half, cell in out.items()}


def cmd_grid(scratch: Path) -> None:
    rows = read_rows(scratch)
    print("weight depth | tune R@5 R@10 cov@1000 | hold R@5 R@10 cov@1000")
    for depth in (10, 20, 30, 50):
        for weight in (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
            m = measures(rows, weight, depth)
            print(f"{weight:.1f} {depth:3d} | " + " | ".join(
                " ".join(f"{m[h][k]:5.1f}" for k in ("R@5", "R@10", "cov@1000"))
                for h in ("tune", "hold")))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("path", help="locomo_dev.json (not shipped with Tulving)")
    for p in (d, sub.add_parser("grid")):
        p.add_argument("--scratch", default=str(SCRATCH))
    args = parser.parse_args(argv)
    scratch = Path(args.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    if args.command == "dump":
        print(dump(args.path, scratch))
    else:
        cmd_grid(scratch)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
