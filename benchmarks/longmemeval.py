"""Long memories and multi-session histories: LongMemEval_S dev, no LLM, embedded default.

Usage::

    .venv/bin/python benchmarks/longmemeval.py /work/shared/data/longmemeval_s_dev
    .venv/bin/python benchmarks/longmemeval.py PATH --limit-per-type 2      # quick look
    .venv/bin/python benchmarks/longmemeval.py PATH --variant NAME ...      # ablation rows
    .venv/bin/python benchmarks/longmemeval.py PATH --ingest plain          # context_window 0
    .venv/bin/python benchmarks/longmemeval.py PATH --json --out results.json

Protocol (``longmemeval_s_dev/README.md``): each question's own history (40-60 sessions,
429-606 turns) goes into a fresh embedded-default ``Memory`` (SQLite + hnswlib + the local
MiniLM model) through ``store_many``, one memory per turn, text ``[YYYY-MM-DD] <role>:
<content>``, valid from its session's date, one call per session as an application
logging a conversation would. The query is the question; the relevant memories are the
turns marked ``has_answer``.

Measured per question, on a fresh copy of the ingested store for every call that can
change it (``curate()`` and ``search()`` record accesses, which ranking reads):

- recall@k of ``search()`` in hybrid, semantic and lexical mode;
- coverage of ``curate(question, token_budget=B)`` at 1,000, 2,000 and 4,000 cl100k
  tokens, three ways: the share of relevant turns the block shows in full, truncated or
  as an excerpt (``cov``, the protocol's rule); counting an excerpt only when it keeps
  the answer (``kept``: an excerpted turn whose text holds the answer string verbatim
  counts when its excerpt line holds it too; other excerpts count, there is nothing to
  check); and counting only turns whose whole text is in the block (``strict``);
- the excerpt check (issue 47): of the excerpted relevant turns whose text holds the
  answer verbatim, how many excerpts keep it, per half; and the time passage choice
  took inside each ``curate()``;
- the same for the baselines computed in the same run from the same texts: Okapi BM25
  (rank-bm25's formula), exact dense cosine with the same local model and the vectors the
  store was given for the plain text, and their RRF (k=60, 100 of each), each packed
  greedily in rank order into the same budget (a turn costs its tokens + 1; one that does
  not fit is skipped and the next tried; the whole ranking is available to the packer).

Halves: within each question type the questions are ordered by the SHA-256 of their id;
the first 6 are the tuning half, the other 4 the held-back half
(``_longmemeval_data.py``). Every table prints both.

Speed: ingesting ~30,000 long turns reads ~7M tokens through the model (over an hour on
two shared cores). The model's window vectors are memoised in ``SCRATCH/embeddings.sqlite``
(``_embed_cache.py``: same windows, same pooling, so the stores hold the vectors an
uncached run computes) and each question's store is kept under
``SCRATCH/stores/<key>/``, ``key`` hashing the ingest options and the source of every
module that shapes a vector, so a change there re-ingests by itself. Nothing is written
in the repository.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _embed_cache import CachingEmbedder
from _longmemeval_data import SHORT_TYPE, TYPES, Question, load
from _variants import VARIANTS, configure
from locomo import OkapiBM25, _order, _rrf

import tulving
import tulving.application.curation.curator as curator_module
from tulving import Memory
from tulving.adapters.tokenizers.tiktoken import create_cl100k
from tulving.domain.packing import EXCERPT_MARKER

BUDGETS = (1000, 2000, 4000)
RECALL_AT = (1, 5, 10, 20)
SEARCH_DEPTH = max(RECALL_AT)
DEFAULT_SCRATCH = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / (
    "tulving-benchmarks/longmemeval")
#: Source files whose code decides what a stored vector or index row is: a change in any
#: of them gives ingested stores a new key (so stale stores are never measured).
INGEST_SOURCES = (
    "application/plumbing/representation.py",
    "application/plumbing/vector_sync.py",
    "application/writing/writer.py",
    "domain/representation.py",
    "adapters/embedders/_pooling.py",
    "adapters/embedders/local_onnx.py",
)
#: Folders whose every module may shape what an ingested store holds (vector index
#: adapters, the SQLite schema and store).
INGEST_FOLDERS = ("adapters/vectors", "adapters/storage/sqlite")
#: Files that may not exist on every branch but shape vectors or units when they do.
OPTIONAL_INGEST_SOURCES = (
    "application/plumbing/passages.py",
)

Ranked = list[str]  # turn ids, best first


# -- ingest representations -------------------------------------------------------------
#: How the store is built (``--ingest``): options given to ``Memory`` at ingest and at
#: every reopen; each has its own cached stores.
INGESTS: dict[str, dict[str, dict[str, Any]]] = {
    "default": {},
    "plain": {"writing": {"context_window": 0}},
}


# -- ingest, cached ---------------------------------------------------------------------
def store_key(options: dict[str, Any]) -> str:
    root = Path(tulving.__file__).resolve().parent
    digest = hashlib.sha256(json.dumps(options, sort_keys=True).encode())
    paths = [root / name for name in INGEST_SOURCES + OPTIONAL_INGEST_SOURCES]
    for folder in INGEST_FOLDERS:
        paths += sorted((root / folder).glob("*.py"))
    for path in paths:
        if path.exists():
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


#: One tokenizer for every store opened: each fresh copy would otherwise load cl100k's
#: ranks again (~0.4 s) inside its first curate() and the timings would measure that.
_TOKENIZER: Any = None


def open_memory(path: Path, embedder: CachingEmbedder, options: dict[str, Any]) -> Memory:
    global _TOKENIZER
    if _TOKENIZER is None:
        _TOKENIZER = create_cl100k(None)
    return Memory(path / "memory.db", agent_id="longmemeval", embedder=embedder,
                  tokenizer=_TOKENIZER, options=options or None).startup()


def ingest(question: Question, folder: Path, embedder: CachingEmbedder,
           options: dict[str, Any]) -> tuple[Path, float | None]:
    """The question's store under ``folder`` (built now unless already there), and the
    seconds ``store_many`` took if it was built now."""
    target = folder / question.question_id
    if (target / "done").exists():
        return target, None
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    memory = open_memory(target, embedder, options)
    started = time.perf_counter()
    try:
        for session in question.sessions:
            memory.store_many(
                {"content": t.text, "type": "EPISODE", "valid_from": t.date,
                 "metadata": {"turn": t.turn_id}}
                for t in session)
        took = time.perf_counter() - started
    finally:
        memory.close()
    (target / "done").write_text(f"{took:.3f}\n")
    return target, took


def keep_session_open(path: Path) -> None:
    """Mark the copy's open sessions active now. Opened more than two hours after its
    ingest, a store would end the ingest's implicit session as abandoned and summarise
    it, archiving every turn (``store_many`` writes agent_run episodes, the working notes
    a summary replaces): a cached store measured later would hold one summary."""
    import sqlite3
    from datetime import UTC, datetime

    with sqlite3.connect(path) as db:
        db.execute("UPDATE sessions SET last_activity_at = ? WHERE ended_at IS NULL",
                   (datetime.now(UTC).isoformat(),))
    db.close()


@contextmanager
def fresh_copy(store: Path, embedder: CachingEmbedder,
               options: dict[str, Any]) -> Iterator[Memory]:
    """The ingested store as it was ingested: queries record accesses, which the ranking
    reads, so each measured call gets its own copy."""
    with tempfile.TemporaryDirectory(prefix="tulving-lme-") as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(store, copy)
        keep_session_open(copy / "memory.db")
        memory = open_memory(copy, embedder, options)
        try:
            yield memory
        finally:
            memory.close()


# -- baselines --------------------------------------------------------------------------
def baselines(question: Question, embedder: CachingEmbedder) -> dict[str, Ranked]:
    ids = [t.turn_id for t in question.turns]
    texts = [t.text for t in question.turns]
    bm25 = OkapiBM25(texts)
    matrix = embedder.embed(texts)
    query = embedder.embed_query(question.question)
    lexical = bm25.scores(question.question)
    dense = matrix @ query
    return {
        "BM25": _order(lexical, ids, len(ids)),
        "dense": _order(dense, ids, len(ids)),
        "RRF": _rrf([_order(lexical, ids, 100), _order(dense, ids, 100)]),
    }


def greedy(ranked: Sequence[str], cost: dict[str, int], budget: int) -> set[str]:
    left, packed = budget, set()
    for item in ranked:
        if cost[item] <= left:
            packed.add(item)
            left -= cost[item]
    return packed


# -- one question -----------------------------------------------------------------------
def shown_turns(result: Any) -> tuple[set[str], set[str]]:
    """Turns ``curate()`` shows (full, truncated or as an excerpt) and those shown whole."""
    shown, whole = set(), set()
    for item in result.entries:
        turn = item.entry.metadata.get("turn")
        if item.disclosure == "index":
            continue
        shown.add(turn)
        if item.disclosure == "full":
            whole.add(turn)
    return shown, whole


def answer_seen(question: Question, result: Any, shown: set[str]) -> list[int]:
    """[relevant turns shown that hold the answer string, of those how many show it in
    the block]: checks that an excerpt of a relevant turn keeps the answer, where the
    answer is a short string found verbatim in the turn (most preference and counting
    answers are not)."""
    answer = question.answer.strip().rstrip(".").casefold()
    if not answer or len(answer) > 60:
        return [0, 0]
    block = result.content.casefold()
    holding = [t for t in question.turns
               if t.relevant and t.turn_id in shown and answer in t.text.casefold()]
    return [len(holding), sum(1 for _ in holding if answer in block)]


def _answer(question: Question) -> str | None:
    answer = question.answer.strip().rstrip(".").casefold()
    return answer if answer and len(answer) <= 60 else None


def excerpt_check(question: Question, result: Any, relevant: set[str]
                  ) -> tuple[list[str], list[str]]:
    """(excerpted relevant turns whose text holds the answer string, those of them whose
    excerpt line keeps it): the line is found by its ``[excerpt of <id>]`` marker."""
    answer = _answer(question)
    text = {t.turn_id: t.text for t in question.turns}
    lines = result.content.casefold().split("\n")
    checkable, kept = [], []
    for item in result.entries:
        turn = item.entry.metadata.get("turn")
        if item.disclosure != "excerpt" or turn not in relevant or answer is None:
            continue
        if answer not in text[turn].casefold():
            continue
        checkable.append(turn)
        marker = EXCERPT_MARKER.format(id=item.entry.id).casefold()
        if any(marker in line and answer in line for line in lines):
            kept.append(turn)
    return checkable, kept


class PassageTimer:
    """Seconds spent choosing passages inside ``curate()`` (the curator's ``excerpt``
    wrapped for the run; everything else runs as a user's call does)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._inner = curator_module.excerpt

    def __enter__(self) -> PassageTimer:
        def timed(*args: Any, **kwargs: Any) -> str:
            started = time.perf_counter()
            try:
                return self._inner(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started
                self.calls += 1
        curator_module.excerpt = timed  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        curator_module.excerpt = self._inner  # type: ignore[assignment]

    def take(self) -> tuple[float, int]:
        taken = (self.seconds, self.calls)
        self.seconds, self.calls = 0.0, 0
        return taken


PASSAGE_TIMER = PassageTimer()


def measure(question: Question, store: Path, embedder: CachingEmbedder, variant: str,
            options: dict[str, Any], tokenizer: Any, budgets: Sequence[int]) -> dict[str, Any]:
    relevant = set(question.relevant)
    text = {t.turn_id: t.text for t in question.turns}
    cost = {i: tokenizer.count(t) + 1 for i, t in text.items()}
    row: dict[str, Any] = {"id": question.question_id, "type": question.question_type,
                           "half": question.half, "relevant": sorted(relevant),
                           "rankings": {}, "curate": {}, "curate_ms": {},
                           "passage_ms": {}}
    for budget in budgets:
        with fresh_copy(store, embedder, options) as memory:
            configure(memory, variant)
            PASSAGE_TIMER.take()
            started = time.perf_counter()
            with PASSAGE_TIMER:
                result = memory.curate(question.question, token_budget=budget)
            row["curate_ms"][budget] = 1000 * (time.perf_counter() - started)
            seconds, calls = PASSAGE_TIMER.take()
            row["passage_ms"][budget] = [1000 * seconds, calls]
            assert result.token_count <= budget, (result.token_count, budget)
            shown, whole = shown_turns(result)
            # a turn counts only if the block really holds its text (or its excerpt)
            whole = {t for t in whole if text[t] in result.content}
            checkable, kept = excerpt_check(question, result, relevant)
            row["curate"][budget] = {"shown": sorted(shown & relevant),
                                     "whole": sorted(whole & relevant),
                                     "kept": sorted(shown & relevant - (set(checkable)
                                                                        - set(kept))),
                                     "excerpt_answer": [len(checkable), len(kept)],
                                     "answer": answer_seen(question, result, shown)}
    with fresh_copy(store, embedder, options) as memory:
        configure(memory, variant)
        for mode in ("hybrid", "semantic", "lexical"):
            hits = memory.search(question.question, SEARCH_DEPTH, mode=mode)
            row["rankings"][mode] = [h.entry.metadata.get("turn") for h in hits]
    for name, ranked in baselines(question, embedder).items():
        row["rankings"][name] = ranked[:SEARCH_DEPTH]
        for budget in budgets:
            row.setdefault("greedy", {}).setdefault(name, {})[budget] = sorted(
                greedy(ranked, cost, budget) & relevant)
    return row


# -- report -----------------------------------------------------------------------------
def _mean(values: Sequence[float]) -> float:
    return round(100 * statistics.fmean(values), 1) if values else float("nan")


def summarise(rows: Sequence[dict[str, Any]], budgets: Sequence[int]) -> dict[str, Any]:
    """Per system: recall@k and coverage@B for all, each half, each type and type x half."""
    groups: dict[str, list[dict[str, Any]]] = {"all": list(rows)}
    for row in rows:
        groups.setdefault(row["half"], []).append(row)
        short = SHORT_TYPE.get(row["type"], row["type"])
        groups.setdefault(short, []).append(row)
        groups.setdefault(f"{short} {row['half']}", []).append(row)
    table: dict[str, dict[str, dict[str, float]]] = {}
    for group, members in groups.items():
        for row in members:
            n = len(row["relevant"])
            for system, ranked in row["rankings"].items():
                cell = table.setdefault(system, {}).setdefault(group, {})
                for k in RECALL_AT:
                    cell.setdefault(f"R@{k}", []).append(  # type: ignore[attr-defined]
                        len(set(ranked[:k]) & set(row["relevant"])) / n)
            for budget in budgets:
                for system, per in row.get("greedy", {}).items():
                    table.setdefault(system, {}).setdefault(group, {}).setdefault(
                        f"cov@{budget}", []).append(len(per[budget]) / n)  # type: ignore
                got = row["curate"][budget]
                cell = table.setdefault("curate()", {}).setdefault(group, {})
                cell.setdefault(f"cov@{budget}", []).append(len(got["shown"]) / n)  # type: ignore
                cell.setdefault(f"strict@{budget}", []).append(len(got["whole"]) / n)  # type: ignore
                cell.setdefault(f"kept@{budget}", []).append(len(got["kept"]) / n)  # type: ignore
    return {system: {group: {m: _mean(v) for m, v in cells.items()}  # type: ignore[arg-type]
                     for group, cells in per.items()}
            for system, per in table.items()}


def targets(summary: dict[str, Any], budgets: Sequence[int]) -> list[str]:
    """The issue's targets, checked on this run: a line each, "ok" or "MISS"."""
    lines = []
    for half in ("tune", "hold"):
        for budget in budgets:
            metric = f"cov@{budget}"
            mine = summary["curate()"].get(half, {}).get(metric)
            if mine is None:
                continue
            best = max(summary[s][half][metric] for s in ("dense", "RRF"))
            lines.append(f"{'ok  ' if mine >= best else 'MISS'} {half} curate {metric} "
                         f"{mine} vs best greedy {best}")
            kept = summary["curate()"][half].get(f"kept@{budget}")
            if kept is not None:
                lines.append(f"{'ok  ' if kept >= best else 'MISS'} {half} curate kept@{budget}"
                             f" (excerpts only when they keep the answer) {kept} vs {best}")
        for qtype in TYPES:
            group = f"{SHORT_TYPE[qtype]} {half}"
            if group not in summary["hybrid"]:
                continue
            mine = summary["hybrid"][group]["R@10"]
            best = max(summary[s][group]["R@10"] for s in ("dense", "RRF"))
            lines.append(f"{'ok  ' if mine >= best else 'MISS'} {half} hybrid R@10 "
                         f"{SHORT_TYPE[qtype]} {mine} vs {best}")
    return lines


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def render(summary: dict[str, Any], budgets: Sequence[int], header: str) -> str:
    systems = ["hybrid", "semantic", "lexical", "BM25", "dense", "RRF"]
    out = [header]
    cov = [f"cov@{b}" for b in budgets]
    out.append("\nrecall and greedy/curate coverage, all | tune | hold")
    cols = ["R@5", "R@10", "R@20", *cov]
    out.append("system".ljust(12) + "".join(c.rjust(20) for c in cols))
    for system in [*systems, "curate()"]:
        per = summary.get(system, {})
        cells = []
        for c in cols:
            vals = [per.get(g, {}).get(c) for g in ("all", "tune", "hold")]
            cells.append("" if vals[0] is None else " | ".join(
                "-" if v is None else f"{v:.1f}" for v in vals))
        out.append(system.ljust(12) + "".join(c.rjust(20) for c in cells))
    mine = summary.get("curate()", {})
    out.append("curate() coverage three ways, all | tune | hold:")
    for metric, what in (("cov", "excerpts counted"),
                         ("kept", "excerpts counted when they keep the answer"),
                         ("strict", "whole texts only")):
        out.append(f"  {what}: " + ", ".join(
            f"{b}: " + " | ".join(_fmt(mine.get(g, {}).get(f"{metric}@{b}"))
                                  for g in ("all", "tune", "hold")) for b in budgets))
    shorts = [SHORT_TYPE[t] for t in TYPES]
    for metric in ["R@10", *cov]:
        out.append(f"\n{metric} by question type, tune | hold")
        out.append("system".ljust(12) + "".join(s.rjust(14) for s in shorts))
        for system in [*systems, "curate()"]:
            per = summary.get(system, {})
            if metric not in per.get("all", {}):
                continue
            cells = []
            for s in shorts:
                t = per.get(f"{s} tune", {}).get(metric)
                h = per.get(f"{s} hold", {}).get(metric)
                cells.append(f"{'-' if t is None else f'{t:.0f}'} | "
                             f"{'-' if h is None else f'{h:.0f}'}")
            out.append(system.ljust(12) + "".join(c.rjust(14) for c in cells))
    out.append("\ntargets (curate >= best of dense/RRF greedy; hybrid R@10 >= best of "
               "dense/RRF per type):")
    out.extend(targets(summary, budgets))
    return "\n".join(out)


def run(args: argparse.Namespace) -> dict[str, Any]:
    scratch = Path(args.scratch)
    embedder = CachingEmbedder(scratch / "embeddings.sqlite")
    tokenizer = create_cl100k(None)
    questions = load(args.path, args.limit_per_type,
                     tuple(args.halves.split(",")))
    if args.types:
        wanted = set(args.types.split(","))
        questions = [q for q in questions
                     if q.question_type in wanted or SHORT_TYPE[q.question_type] in wanted]
    if args.ids:
        chosen = set(args.ids.split(","))
        questions = [q for q in questions if q.question_id in chosen]
    report: dict[str, Any] = {}
    options = INGESTS[args.ingest]
    for variant in args.variant or ["default"]:
        name = f"{args.ingest} ingest, {variant}"
        folder = scratch / "stores" / store_key(options)
        rows, built, seconds = [], 0, 0.0
        started = time.perf_counter()
        for number, question in enumerate(questions, start=1):
            store, took = ingest(question, folder, embedder, options)
            if took is not None:
                built += len(question.turns)
                seconds += took
            rows.append(measure(question, store, embedder, variant, options, tokenizer,
                                BUDGETS))
            if args.progress:
                print(f"[{name}] {number}/{len(questions)} {question.question_id} "
                      f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
        summary = summarise(rows, BUDGETS)
        curate_ms = sorted(v for r in rows for v in r["curate_ms"].values())
        answers = {b: [sum(r["curate"][b]["answer"][i] for r in rows) for i in (0, 1)]
                   for b in BUDGETS}
        excerpts = {b: {h: [sum(r["curate"][b]["excerpt_answer"][i] for r in rows
                                if r["half"] == h) for i in (0, 1)]
                        for h in ("tune", "hold")} for b in BUDGETS}
        passage = {b: sorted(r["passage_ms"][b][0] for r in rows) for b in BUDGETS}
        report[name] = {
            "answer_check": answers,
            "excerpt_check": excerpts,
            "passage_ms_p50": {b: round(v[len(v) // 2], 3) for b, v in passage.items()},
            "passage_ms_max": {b: round(v[-1], 3) for b, v in passage.items()},
            "questions": len(rows), "turns": sum(len(q.turns) for q in questions),
            "ingested_now": built,
            "ingest_entries_per_s": round(built / seconds, 1) if seconds else None,
            "curate_ms_p50": round(curate_ms[len(curate_ms) // 2], 1),
            "curate_ms_p95": round(curate_ms[int(0.95 * (len(curate_ms) - 1))], 1),
            "summary": summary, "rows": rows, "store_key": folder.name,
        }
    embedder.close()
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", help="folder of LongMemEval_S question files (not shipped)")
    parser.add_argument("--scratch", default=str(DEFAULT_SCRATCH),
                        help=f"cache folder outside the repo (default {DEFAULT_SCRATCH})")
    parser.add_argument("--limit-per-type", type=int, default=None,
                        help="first N questions of each type in each half")
    parser.add_argument("--halves", default="tune,hold", help="tune, hold or tune,hold")
    parser.add_argument("--ids", default=None,
                        help="comma-separated question ids (a subset for quick looks)")
    parser.add_argument("--types", default=None,
                        help="comma-separated question types (short names allowed)")
    parser.add_argument("--ingest", default="default", choices=sorted(INGESTS),
                        help="how the stores are built (default: the library's default)")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS),
                        help="ablation row(s): search/curate options (_variants.py)")
    parser.add_argument("--json", action="store_true", help="print JSON (summaries only)")
    parser.add_argument("--out", default=None, help="also write the full report with "
                        "per-question rows to this JSON file")
    parser.add_argument("--progress", action="store_true", help="a line per question")
    args = parser.parse_args(argv)
    report = run(args)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    if args.json:
        print(json.dumps({n: {k: v for k, v in r.items() if k != "rows"}
                          for n, r in report.items()}, indent=2, default=str))
        return 0
    for name, result in report.items():
        rate = result["ingest_entries_per_s"]
        header = (f"LongMemEval_S dev [{name}]: {result['questions']} questions, "
                  f"{result['turns']} turns; curate p50 {result['curate_ms_p50']} ms, "
                  f"p95 {result['curate_ms_p95']} ms"
                  + (f"; ingest {rate} entries/s ({result['ingested_now']} built now, "
                     "model vectors from the cache where warm)" if rate else ""))
        print(render(result["summary"], BUDGETS, header))
        print("answer strings in the block, of relevant turns shown that hold them: " + ", ".join(
            f"{b}: {seen}/{held}" for b, (held, seen) in result["answer_check"].items()))
        print("excerpts that keep the answer, of excerpted relevant turns holding it "
              "(tune | hold): " + ", ".join(
                  f"{b}: {c['tune'][1]}/{c['tune'][0]} | {c['hold'][1]}/{c['hold'][0]}"
                  for b, c in result["excerpt_check"].items()))
        print("passage choice inside curate(), ms p50 / max: " + ", ".join(
            f"{b}: {result['passage_ms_p50'][b]} / {result['passage_ms_max'][b]}"
            for b in BUDGETS))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
