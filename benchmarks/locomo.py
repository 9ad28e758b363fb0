"""Retrieval quality on LoCoMo with no LLM: Tulving's search modes against plain baselines.

Usage::

    .venv/bin/python benchmarks/locomo.py /work/shared/data/locomo/locomo_dev.json
    .venv/bin/python benchmarks/locomo.py PATH --limit-conversations 2 --json
    .venv/bin/python benchmarks/locomo.py PATH --ablation   # each search idea on and off
    .venv/bin/python benchmarks/locomo.py PATH --turns-per-memory 10   # long memories
    .venv/bin/python benchmarks/locomo.py PATH --llm-url http://127.0.0.1:8000/v1 \
        --llm-model NAME   # also hybrid with LLM query expansion (any OpenAI-compatible)

Every conversation goes into a fresh embedded-default ``Memory`` (SQLite + hnswlib + the
local MiniLM model) in a temporary directory, one memory per turn through ``store_many``
(valid_from = the session date, ``metadata={"dia_id": ...}``). The baselines are computed
in the same run from the same texts: Okapi BM25 as rank-bm25 computes it (lowercase
alphanumeric tokens, k1=1.5, b=0.75, epsilon=0.25), exact dense cosine with the same
MiniLM model, and their plain RRF (k=60). Recall@k = |evidence in top k| / |evidence|,
averaged over questions; coverage@B packs the top 50 greedily into B cl100k tokens (an
entry costs its tokens + 1; an entry that does not fit is skipped, the next one tried).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo_data import Conversation, group_turns, load
from _variants import VARIANTS

from tulving import Memory
from tulving.adapters.tokenizers.tiktoken import create_cl100k
from tulving.application.plumbing.llm_gateway import LLMGateway
from tulving.application.retrieval.expansion import QueryExpander
from tulving.application.retrieval.options import SearchOptions
from tulving.application.retrieval.search import Searcher, build_filter

RECALL_AT = (1, 5, 10, 20)
BUDGETS = (500, 1000, 2000)
DEPTH = 50
_TOKEN = re.compile(r"[a-z0-9]+")

Ranker = Callable[[str], list[str]]  # question -> dia_ids, best first


# -- plain baselines ------------------------------------------------------------------------
class OkapiBM25:
    """rank-bm25's BM25Okapi: idf floor at epsilon * mean idf for very common terms."""

    def __init__(self, docs: Sequence[str], k1: float = 1.5, b: float = 0.75,
                 epsilon: float = 0.25) -> None:
        self.k1, self.b = k1, b
        self.docs = [Counter(_TOKEN.findall(d.lower())) for d in docs]
        self.lengths = np.array([sum(c.values()) for c in self.docs], dtype=np.float64)
        self.avgdl = float(self.lengths.mean())
        df: Counter[str] = Counter()
        for c in self.docs:
            df.update(c.keys())
        n = len(docs)
        idf = {t: math.log(n - f + 0.5) - math.log(f + 0.5) for t, f in df.items()}
        floor = epsilon * (sum(idf.values()) / len(idf))
        self.idf = {t: (v if v >= 0 else floor) for t, v in idf.items()}

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.docs))
        norm = self.k1 * (1 - self.b + self.b * self.lengths / self.avgdl)
        for term in _TOKEN.findall(query.lower()):
            tf = np.array([d.get(term, 0) for d in self.docs], dtype=np.float64)
            out += self.idf.get(term, 0.0) * tf * (self.k1 + 1) / (tf + norm)
        return out


def _order(scores: np.ndarray, ids: Sequence[str], depth: int) -> list[str]:
    return [ids[i] for i in np.argsort(-scores, kind="stable")[:depth]]


def _rrf(lists: Sequence[Sequence[str]], k: int = 60) -> list[str]:
    fused: dict[str, float] = {}
    for ranked in lists:
        for rank, item in enumerate(ranked, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(fused, key=lambda i: -fused[i])


# -- metrics --------------------------------------------------------------------------------
def recall(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    return len(set(ranked[:k]) & set(evidence)) / len(evidence)


def coverage(ranked: Sequence[str], evidence: Sequence[str], cost: dict[str, int],
             budget: int) -> float:
    left, packed = budget, set()
    for item in ranked[:DEPTH]:
        if cost[item] <= left:
            packed.add(item)
            left -= cost[item]
    return len(packed & set(evidence)) / len(evidence)


# -- one conversation -----------------------------------------------------------------------
#: ``--vector-format``: the on-disk vector format of the SQLite store (None: float32).
VECTOR_FORMAT: str | None = None
#: ``--context-window``: entries written just before a turn that its vector reads with it
#: (None: the library's default).
CONTEXT_WINDOW: int | None = None
#: ``--llm-url`` / ``--llm-model``: an OpenAI-compatible server for the LLM-expansion row
#: (None: the row is not run; the key, if any, is read from ``OPENAI_API_KEY``).
LLM: dict[str, Any] | None = None
#: The hold-out discipline of issue 19: ideas are tuned on the first three conversations
#: of the dev file and confirmed on the last two (every table shows both halves).
TUNING = 3


def half_of(index: int) -> str:
    return "tune" if index < TUNING else "hold"


def memory_options() -> dict[str, dict[str, Any]] | None:
    options: dict[str, dict[str, Any]] = {}
    if VECTOR_FORMAT:
        options["storage"] = {"vector_format": VECTOR_FORMAT}
    if CONTEXT_WINDOW is not None:
        options["writing"] = {"context_window": CONTEXT_WINDOW}
    if LLM is not None:
        options["llm"] = {**LLM, "max_calls": None}
    return options or None


#: ``--embed-cache``: a file memoising the local model's window vectors (``_embed_cache``),
#: so repeated runs (ablation rows) do not read every turn through the model again.
EMBED_CACHE: str | None = None
_CACHED: Any = None


def embedder_choice() -> Any:
    """The local model, through the on-disk memo when ``--embed-cache`` is given."""
    global _CACHED
    if EMBED_CACHE is None:
        return "local"
    if _CACHED is None:
        from _embed_cache import CachingEmbedder

        _CACHED = CachingEmbedder(EMBED_CACHE)
    return _CACHED


def open_memory(path: Path, options: dict[str, dict[str, Any]] | None) -> Memory:
    return Memory(path, agent_id="locomo", options=options, embedder=embedder_choice(),
                  llm="openai" if LLM is not None else None)


def ingest(conv: Conversation, folder: Path) -> tuple[Memory, float]:
    path = folder / f"{conv.sample_id}.db"
    options = memory_options()
    memory = open_memory(path, options)
    memory.startup()
    started = time.perf_counter()
    for session in sorted({t.session for t in conv.turns}):
        memory.store_many(
            {"content": t.text, "type": "EPISODE", "valid_from": t.date,
             "metadata": {"dia_id": t.dia_id}}
            for t in conv.turns if t.session == session
        )
    took = time.perf_counter() - started
    if VECTOR_FORMAT:
        # What a compact format changes shows once vectors come back from disk: reopen,
        # and rebuild the graph from the stored vectors (the worst case: every vector the
        # index and exact scoring use has been through the format).
        memory.close()
        memory = open_memory(path, options)
        memory.maintenance("reindex")
    return memory, took


def tulving_ranker(memory: Memory, mode: str, options: SearchOptions | None,
                   timings: list[float], expand: bool = False) -> Ranker:
    expander = QueryExpander(LLMGateway(memory.ctx.llm, max_calls=None)) if expand else None
    searcher = Searcher(memory.ctx, options, expander) if options is not None else None

    def rank(question: str) -> list[str]:
        started = time.perf_counter()
        if searcher is None:
            results = memory.search(question, DEPTH, mode=mode)
        else:
            results = searcher.search(question, DEPTH, mode, build_filter(memory.ctx), None)
        timings.append(time.perf_counter() - started)
        return [r.entry.metadata["dia_id"] for r in results]

    return rank


def baselines(conv: Conversation, memory: Memory) -> dict[str, Ranker]:
    ids = [t.dia_id for t in conv.turns]
    texts = [t.text for t in conv.turns]
    bm25 = OkapiBM25(texts)
    embedder = memory.ctx.embedder
    assert embedder is not None
    matrix = embedder.embed(texts)

    def plain_bm25(q: str) -> list[str]:
        return _order(bm25.scores(q), ids, DEPTH)

    def plain_dense(q: str) -> list[str]:
        return _order(matrix @ embedder.embed_query(q), ids, DEPTH)

    def plain_rrf(q: str) -> list[str]:
        return _rrf([_order(bm25.scores(q), ids, 100),
                     _order(matrix @ embedder.embed_query(q), ids, 100)])[:DEPTH]

    return {"BM25 (Okapi)": plain_bm25, "dense MiniLM": plain_dense,
            "BM25+dense RRF k=60": plain_rrf}


def ablations() -> dict[str, SearchOptions]:
    """Each idea switched off alone, against the default (all on)."""
    return SearchOptions.ablations()


#: ``--variant``: named rows of ``_variants.py`` (their search options) run beside the rest.
VARIANT_NAMES: list[str] = []
#: ``--thresholds``: the ``min_score`` cuts at which the scores' meaning is measured, and
#: the rankings measured (the learned ranker, whose scores are probabilities, and the
#: default hand-tuned fusion, whose scores are relative to each query's best).
CUTS = (0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5)
THRESHOLD_SYSTEMS = {"hybrid, learned ranker": SearchOptions.learned,
                     "hybrid (default: hand-tuned fusion)": SearchOptions.fused}


def absent_questions(path: str) -> dict[str, list[str]]:
    """Category-5 questions by conversation: adversarial, their answer is not in it."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    return {item["sample_id"]: [str(qa["question"]) for qa in item["qa"]
                                if qa.get("category") == 5] for item in raw}


def threshold_scores(memory: Memory, conv: Conversation, absent: Sequence[str],
                     sink: dict[str, dict[str, list[float]]]) -> None:
    """The scores ``search(top_k=10)`` gives evidence (answerable questions) and every hit
    of the absent-answer questions, per ranking (a Searcher of its own: no access is
    recorded)."""
    flt = build_filter(memory.ctx)
    for name, options in THRESHOLD_SYSTEMS.items():
        searcher = Searcher(memory.ctx, options())
        cell = sink.setdefault(name, {})
        for q in conv.questions:
            for hit in searcher.search(q.text, 10, "hybrid", flt, None):
                if hit.entry.metadata["dia_id"] in q.evidence:
                    cell.setdefault("evidence", []).append(hit.score)
        for text in absent:
            hits = searcher.search(text, 10, "hybrid", flt, None)
            cell.setdefault("absent", []).extend(h.score for h in hits)
            if hits:
                cell.setdefault("absent best", []).append(hits[0].score)


def render_thresholds(scores: dict[str, dict[str, dict[str, list[float]]]]) -> str:
    lines = ["min_score on search(top_k=10): evidence kept / absent-answer hits dropped / "
             "absent-answer questions whose best hit is dropped (%; category 5 = absent)"]
    for name, halves in scores.items():
        lines.append(f"{name} (min_score: kept/dropped/best dropped)")
        for half, cell in halves.items():
            ev, ab, best = (np.array(cell.get(k, [])) for k in ("evidence", "absent",
                                                                 "absent best"))
            lines.append(f"  {half}: " + "  ".join(
                f"{c}: {100 * (ev >= c).mean():.0f}/{100 * (ab < c).mean():.0f}/"
                f"{100 * (best < c).mean():.0f}" for c in CUTS))
    return "\n".join(lines)


def evaluate(conversations: Sequence[Conversation], ablate: bool,
             absent: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """``absent``: category-5 questions by conversation, for the threshold figures."""
    tokenizer = create_cl100k(None)
    per_system: dict[str, dict[str, list[float]]] = {}
    separation: dict[str, dict[str, dict[str, list[float]]]] = {}
    timings: dict[str, list[float]] = {}
    ingest_seconds, ingested = 0.0, 0
    with tempfile.TemporaryDirectory(prefix="tulving-locomo-") as tmp:
        for index, conv in enumerate(conversations):
            half = half_of(index)
            memory, seconds = ingest(conv, Path(tmp))
            ingest_seconds += seconds
            ingested += len(conv.turns)
            try:
                cost = {t.dia_id: tokenizer.count(t.text) + 1 for t in conv.turns}
                systems: dict[str, Ranker] = {}
                for mode in ("hybrid", "lexical", "semantic"):
                    systems[f"tulving {mode}"] = tulving_ranker(
                        memory, mode, None, timings.setdefault(mode, []))
                if LLM is not None:
                    systems["hybrid + LLM expansion"] = tulving_ranker(
                        memory, "hybrid", SearchOptions(),
                        timings.setdefault("LLM expansion", []), expand=True)
                if ablate:
                    for name, options in ablations().items():
                        systems[f"hybrid {name}"] = tulving_ranker(
                            memory, "hybrid", options, timings.setdefault(name, []))
                for name in VARIANT_NAMES:
                    search, _ = VARIANTS[name]()
                    systems[f"hybrid [{name}]"] = tulving_ranker(
                        memory, "hybrid", search or SearchOptions(),
                        timings.setdefault(name, []))
                systems.update(baselines(conv, memory))
                if absent is not None:
                    by_half: dict[str, dict[str, list[float]]] = {}
                    threshold_scores(memory, conv, absent.get(conv.sample_id, []), by_half)
                    for name, cell in by_half.items():
                        for key, values in cell.items():
                            separation.setdefault(name, {}).setdefault(half, {}).setdefault(
                                key, []).extend(values)
                for name, rank in systems.items():
                    sink = per_system.setdefault(name, {})
                    for q in conv.questions:
                        ranked = rank(q.text)
                        for k in RECALL_AT:
                            sink.setdefault(f"R@{k}", []).append(recall(ranked, q.evidence, k))
                        for b in BUDGETS:
                            sink.setdefault(f"cov@{b}", []).append(
                                coverage(ranked, q.evidence, cost, b))
                        sink.setdefault(f"cat{q.category}", []).append(
                            recall(ranked, q.evidence, 10))
                        for k in (5, 10, 20):
                            sink.setdefault(f"{half} R@{k}", []).append(
                                recall(ranked, q.evidence, k))
                        sink.setdefault(f"{half} cov@1000", []).append(
                            coverage(ranked, q.evidence, cost, 1000))
            finally:
                memory.close()
    table = {name: {m: round(100 * statistics.fmean(v), 1) for m, v in metrics.items()}
             for name, metrics in per_system.items()}
    return {
        "conversations": len(conversations),
        "questions": sum(len(c.questions) for c in conversations),
        "entries": ingested,
        "ingest_entries_per_s": round(ingested / ingest_seconds, 1),
        "query_p50_ms": {m: round(1000 * statistics.median(t), 2) for m, t in timings.items()},
        "query_p95_ms": {m: round(1000 * float(np.percentile(t, 95)), 2)
                         for m, t in timings.items()},
        "table": table,
        **({"thresholds": separation} if separation else {}),
    }


def render(report: dict[str, Any]) -> str:
    columns = [f"R@{k}" for k in RECALL_AT] + [f"cov@{b}" for b in BUDGETS] + [
        f"cat{c}" for c in (1, 2, 3, 4)]
    width = max(len(n) for n in report["table"]) + 2
    lines = [
        f"LoCoMo: {report['conversations']} conversations, {report['entries']} entries, "
        f"{report['questions']} questions (cat1-4 = R@10 by category)",
        "system".ljust(width) + "".join(c.rjust(9) for c in columns),
    ]
    for name, row in report["table"].items():
        lines.append(name.ljust(width) + "".join(f"{row.get(c, 0):9.1f}" for c in columns))
    halves = [f"{h} {m}" for h in ("tune", "hold")
              for m in ("R@5", "R@10", "R@20", "cov@1000")]
    if any(halves[0] in row for row in report["table"].values()):
        lines.append(f"halves: tune = conversations 1-{TUNING}, hold = the rest")
        lines.append("system".ljust(width) + "".join(c.rjust(14) for c in halves))
        for name, row in report["table"].items():
            lines.append(name.ljust(width) + "".join(f"{row.get(c, 0):14.1f}" for c in halves))
    lines.append(f"ingest: {report['ingest_entries_per_s']} entries/s (store_many, embedded)")
    if "thresholds" in report:
        lines.append(render_thresholds(report["thresholds"]))
    for mode, p50 in report["query_p50_ms"].items():
        lines.append(f"query {mode}: p50 {p50} ms, p95 {report['query_p95_ms'][mode]} ms "
                     "(includes query embedding)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", help="locomo JSON file (not shipped with Tulving)")
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--ablation", action="store_true",
                        help="also run hybrid with each quality idea switched off")
    parser.add_argument("--vector-format", choices=["float32", "float16"], default=None,
                        help="store vectors in this format, then reopen and reindex from "
                             "the stored vectors before querying")
    parser.add_argument("--context-window", type=int, default=None,
                        help="entries written just before a turn that its vector reads "
                             "with it (0: off; default: the library's)")
    parser.add_argument("--turns-per-memory", type=int, default=1,
                        help="store K consecutive turns of a session as one memory (long "
                             "memories; evidence is the memory holding the turn)")
    parser.add_argument("--llm-url", default=None,
                        help="OpenAI-compatible base URL: also run hybrid with LLM query "
                             "expansion (search.llm_expansion)")
    parser.add_argument("--llm-model", default="gpt-4o-mini")
    parser.add_argument("--embed-cache", default=None,
                        help="SQLite file (outside the repo) memoising the local model's "
                             "vectors across runs; the figures are the same")
    parser.add_argument("--variant", action="append", default=[], choices=sorted(VARIANTS),
                        help="also run hybrid with these rows' search options (_variants.py)")
    parser.add_argument("--thresholds", action="store_true",
                        help="also measure min_score: evidence kept against the hits of "
                             "category-5 questions (answer absent) dropped")
    args = parser.parse_args(argv)
    VARIANT_NAMES.extend(args.variant)
    global VECTOR_FORMAT, CONTEXT_WINDOW, LLM, EMBED_CACHE
    EMBED_CACHE = args.embed_cache
    VECTOR_FORMAT = args.vector_format
    CONTEXT_WINDOW = args.context_window
    if args.llm_url:
        LLM = {"base_url": args.llm_url, "model": args.llm_model}
    conversations = [group_turns(c, args.turns_per_memory)
                     for c in load(args.path, args.limit_conversations)]
    absent = absent_questions(args.path) if args.thresholds else None
    report = evaluate(conversations, args.ablation, absent)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
