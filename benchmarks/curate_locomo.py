"""LoCoMo coverage of ``curate()`` itself, next to greedy packing of plain baselines.

Usage: ``.venv/bin/python benchmarks/curate_locomo.py /path/to/locomo_dev.json``

Evidence counts only when its full text is inside the curated ``content`` (an index line
does not count). Baselines pack their ranked list greedily into the same budget with
cl100k tokens (a memory costs its tokens + 1), as in the data README's protocol; curate
pays for its own headers, separators and per-line metadata inside the budget.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import locomo
from _locomo_data import load
from _variants import VARIANTS, configure
from locomo import DEPTH, baselines, coverage, half_of, ingest

from tulving.adapters.tokenizers.tiktoken import create_cl100k

BUDGETS = (500, 1000, 2000)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path")
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--context-window", type=int, default=None,
                        help="as in locomo.py (0: vectors read no context)")
    parser.add_argument("--embed-cache", default=None, help="as in locomo.py")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS),
                        help="ablation row(s) (_variants.py); default: the library's")
    args = parser.parse_args(argv)
    locomo.CONTEXT_WINDOW = args.context_window
    locomo.EMBED_CACHE = args.embed_cache
    conversations = load(args.path, args.limit_conversations)
    tokenizer = create_cl100k(None)
    sums: dict[str, dict[int, list[float]]] = {}
    timings: list[float] = []
    variants = args.variant or ["default"]
    for number, variant in enumerate(variants):
        label = "tulving curate()" + ("" if variant == "default" else f" [{variant}]")
        with tempfile.TemporaryDirectory() as folder:
            for index, conv in enumerate(conversations):
                half = half_of(index)
                memory, _ = ingest(conv, Path(folder))
                configure(memory, variant)
                by_text = {t.dia_id: t.text for t in conv.turns}
                cost = {d: tokenizer.count(t) + 1 for d, t in by_text.items()}
                rankers = baselines(conv, memory) if number == 0 else {}
                for q in conv.questions:
                    for budget in BUDGETS:
                        started = time.perf_counter()
                        result = memory.curate(q.text, token_budget=budget)
                        timings.append(time.perf_counter() - started)
                        assert result.token_count <= budget
                        full = {c.entry.metadata.get("dia_id") for c in result.entries
                                if c.full}
                        hit = [e for e in q.evidence
                               if e in full and by_text[e] in result.content]
                        for name in (label, f"{label}, {half}"):
                            sums.setdefault(name, {}).setdefault(budget, []).append(
                                len(hit) / len(q.evidence))
                    for name, ranker in rankers.items():
                        ranked = ranker(q.text)[:DEPTH]
                        for budget in BUDGETS:
                            sums.setdefault(f"greedy {name}", {}).setdefault(
                                budget, []).append(coverage(ranked, q.evidence, cost, budget))
                memory.close()
    report = {name: {b: round(100 * statistics.mean(v), 1) for b, v in per.items()}
              for name, per in sums.items()}
    ordered = sorted(timings)
    latency = {"p50_ms": round(1000 * ordered[len(ordered) // 2], 2),
               "p95_ms": round(1000 * ordered[int(len(ordered) * 0.95)], 2)}
    questions = sum(len(c.questions) for c in conversations)
    if args.json:
        print(json.dumps({"coverage": report, "curate_latency": latency,
                          "questions": questions}, indent=2))
        return 0
    print(f"LoCoMo curate coverage ({questions} questions, {len(conversations)} conversations;"
          f" tune = conversations 1-{locomo.TUNING}, hold = the rest)")
    print(f"{'system':44s}" + "".join(f"{'cov@' + str(b):>10s}" for b in BUDGETS))
    for name, per in report.items():
        print(f"{name:44s}" + "".join(f"{per[b]:>10.1f}" for b in BUDGETS))
    print(f"curate latency (incl. query embedding): p50 {latency['p50_ms']} ms, "
          f"p95 {latency['p95_ms']} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
