"""The strong tier's knobs and its calibration, measured on LoCoMo's dev split.

Usage (from the repository root; the data stay outside it)::

    .venv/bin/python benchmarks/strong_tier.py dump /work/shared/data/locomo/locomo_dev.json
    .venv/bin/python benchmarks/strong_tier.py calibrate   # fit the score maps on tune

Protocol: stores are built as ``locomo.py`` builds them (one memory per turn, embedded
default); for every question (categories 1-4, and category 5 whose answer is absent) the
served hand-tuned fusion's best 30 (``Searcher.hybrid`` with the strong tier off), their
fused scores and fast cosines, and the strong cosine of each of them (all-mpnet-base-v2,
memoised by ``_strong_cache.py``) are dumped once under ``SCRATCH``. ``calibrate`` fits
the two logistic maps of :mod:`tulving.domain.strong_fusion` (fast: fused over best and
the head's best fast cosine; strong: also each candidate's strong cosine) on the tuning
half (conversations 1-3, as ``locomo.py``), re-scores every list with the fitted and the
shipped maps (``tulving.application.retrieval.calibration``) and reports R@5 / R@10 /
cov@1000 per half and, at each ``min_score``, the evidence in the first 10 kept and the
hits of category-5 questions (answer absent) dropped. The held-back half confirms.
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

import attrs
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo
from _locomo_data import load
from _strong_cache import CachingStrongEncoder

from tulving.adapters.tokenizers.tiktoken import create_cl100k
from tulving.application.retrieval import calibration
from tulving.application.retrieval.search import Searcher, build_filter
from tulving.application.retrieval.strong import StrongTier
from tulving.domain.query import ScoredId
from tulving.domain.strong_fusion import Calibration, calibrated

SCRATCH = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / (
    "tulving-benchmarks/strong")
DEPTH = 30


def dump(path: str, scratch: Path, strong: bool = True) -> Path:
    """One JSON line per question: half, category, evidence, the fused list with its
    scores, fast and strong cosines (None with ``strong=False``: the fast map needs no
    strong model), and each candidate's token cost."""
    conversations = load(path)
    absent = locomo.absent_questions(path)
    encoder = CachingStrongEncoder(scratch / "mpnet.sqlite") if strong else None
    locomo.EMBED_CACHE = str(scratch / "minilm.sqlite")
    tokenizer = create_cl100k(None)
    out = scratch / ("locomo_rows.jsonl" if strong else "locomo_rows_fast.jsonl")
    with tempfile.TemporaryDirectory(prefix="tulving-strong-") as tmp, out.open("w") as sink:
        for index, conv in enumerate(conversations):
            memory, _ = locomo.ingest(conv, Path(tmp))
            try:
                # the served fusion before its scores are mapped (the maps are fitted here)
                searcher = Searcher(memory.ctx, attrs.evolve(memory._searcher.options,
                                                             calibrated=False))
                tier = StrongTier(encoder, memory.ctx.storage) if encoder else None
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
                    cosines = tier.cosines(text, texts, DEPTH) if tier else {}
                    fast = searcher.similarities(text, list(texts))
                    sink.write(json.dumps({
                        "half": locomo.half_of(index), "category": category,
                        "question": text, "evidence": evidence,
                        "hits": [[entries[h.id].metadata["dia_id"], h.score, fast.get(h.id),
                                  cosines.get(h.id), cost[entries[h.id].metadata["dia_id"]]]
                                 for h in fused if h.id in entries]}) + "\n")
                    del briefs
            finally:
                memory.close()
            print(f"conversation {index + 1} done; strong vectors computed so far "
                  f"{encoder.computed if encoder else 0}", file=sys.stderr)
    return out


def read_rows(scratch: Path, name: str = "locomo_rows.jsonl") -> list[dict[str, Any]]:
    with (scratch / name).open() as handle:
        return [json.loads(line) for line in handle]


CUTS = (0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1, 0.15, 0.2, 0.3)


def head_rows(row: dict[str, Any], tier: str, depth: int = DEPTH
              ) -> tuple[np.ndarray, np.ndarray]:
    """Features (fused over best, cosine, best cosine of the head) and labels of a
    question's head; ``tier`` is "fast" or "strong" (which cosine)."""
    hits = row["hits"][:depth]
    col = 2 if tier == "fast" else 3
    top = max((h[1] for h in hits), default=1.0) or 1.0
    known = [h[col] for h in hits if h[col] is not None]
    floor, best = (min(known), max(known)) if known else (0.0, 0.0)
    x = np.array([[h[1] / top, h[col] if h[col] is not None else floor, best] for h in hits])
    y = np.array([1.0 if h[0] in row["evidence"] else 0.0 for h in hits])
    return x, y


def fit(rows: Sequence[dict[str, Any]], tier: str) -> Calibration:
    """Logistic regression (Newton steps, a little L2), every question weighing the same."""
    xs, ys, ws = [], [], []
    for row in rows:
        x, y = head_rows(row, tier)
        if not len(x):
            continue
        xs.append(x)
        ys.append(y)
        ws.append(np.full(len(y), 1.0 / len(y)))
    x = np.concatenate(xs)
    if tier == "fast":
        x[:, 1] = 0.0  # the fast map must keep the fused order: no per-candidate cosine
    x = np.hstack([x, np.ones((len(x), 1))])
    y, w = np.concatenate(ys), np.concatenate(ws)
    beta = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(x @ beta)))
        grad = x.T @ (w * (p - y)) + 1e-3 * beta
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + 1e-3 * np.eye(x.shape[1])
        beta -= np.linalg.solve(hess, grad)
    return Calibration(*(round(float(b), 3) for b in beta))


def scored(row: dict[str, Any], tier: str, model: Calibration) -> list[tuple[str, float]]:
    hits = [ScoredId(h[0], h[1]) for h in row["hits"]]
    col = 2 if tier == "fast" else 3
    cosines = {h[0]: h[col] for h in row["hits"][:DEPTH] if h[col] is not None}
    return [(h.id, h.score) for h in calibrated(hits, cosines, model, DEPTH)]


def measures(rows: Sequence[dict[str, Any]], tier: str, model: Calibration
             ) -> dict[str, dict[str, Any]]:
    """Recall and coverage per half, and at each cut the share of evidence in the first
    10 kept and the share of the first 10 hits of absent-answer questions dropped."""
    out: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        ranked = scored(row, tier, model)
        cell = out.setdefault(row["half"], {})
        if row["category"] == 5:
            cell.setdefault("absent", []).extend(s for _, s in ranked[:10])
            continue
        ids = [i for i, _ in ranked]
        cost = {h[0]: h[4] for h in row["hits"]}
        for k in (5, 10):
            cell.setdefault(f"R@{k}", []).append(locomo.recall(ids, row["evidence"], k))
        cell.setdefault("cov@1000", []).append(
            locomo.coverage(ids, row["evidence"], cost, 1000))
        cell.setdefault("evidence", []).extend(s for i, s in ranked[:10]
                                               if i in row["evidence"])
    report: dict[str, dict[str, Any]] = {}
    for half, cell in out.items():
        ev, ab = np.array(cell.pop("evidence", [])), np.array(cell.pop("absent", []))
        report[half] = {m: round(100 * statistics.fmean(v), 1) for m, v in cell.items()}
        report[half]["cuts"] = {c: (round(100 * float((ev >= c).mean()), 1) if len(ev) else 0,
                                    round(100 * float((ab < c).mean()), 1) if len(ab) else 0)
                                for c in CUTS}
    return report


def _print(name: str, m: dict[str, dict[str, Any]]) -> None:
    print(name + ": " + " | ".join(
        f"{h} R@5 {m[h]['R@5']} R@10 {m[h]['R@10']} cov@1000 {m[h]['cov@1000']}"
        for h in ("tune", "hold") if h in m))
    for h in ("tune", "hold"):
        if h in m:
            print(f"  {h} min_score kept/dropped: " + "  ".join(
                f"{c}: {k:.0f}/{d:.0f}" for c, (k, d) in m[h]["cuts"].items()))


def cmd_calibrate(scratch: Path, rows_file: str) -> None:
    rows = read_rows(scratch, rows_file)
    tune = [r for r in rows if r["half"] == "tune"]
    uncalibrated = Calibration(relative=1.0, cosine=0.0, best=0.0, bias=0.0)
    _print("fused, uncalibrated (sigmoid of the relative score)",
           measures(rows, "fast", uncalibrated))
    for tier in ("fast", "strong"):
        usable = [r for r in tune if tier == "fast" or any(h[3] is not None for h in r["hits"])]
        if not usable:
            continue
        model = fit(usable, tier)
        print(f"{tier}: fitted on {len(usable)} tuning questions: {model}")
        _print(f"{tier} (fitted)", measures(rows, tier, model))
        shipped = calibration.FAST if tier == "fast" else calibration.STRONG
        _print(f"{tier} (shipped {shipped})", measures(rows, tier, shipped))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("path", help="locomo_dev.json (not shipped with Tulving)")
    d.add_argument("--fast-only", action="store_true",
                   help="no strong cosines (rows for the fast map only; no strong model)")
    c = sub.add_parser("calibrate")
    c.add_argument("--rows", default="locomo_rows.jsonl",
                   help="rows file in the scratch folder (locomo_rows_fast.jsonl: fast only)")
    for p in (d, c):
        p.add_argument("--scratch", default=str(SCRATCH))
    args = parser.parse_args(argv)
    scratch = Path(args.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    if args.command == "dump":
        print(dump(args.path, scratch, strong=not args.fast_only))
    else:
        cmd_calibrate(scratch, args.rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
