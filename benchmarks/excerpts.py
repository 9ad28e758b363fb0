"""Do excerpts of long memories keep the answer? Passage choice alone, row by row.

Usage::

    .venv/bin/python benchmarks/excerpts.py                      # the written set only
    .venv/bin/python benchmarks/excerpts.py --longmemeval /work/shared/data/longmemeval_s_dev
    .venv/bin/python benchmarks/excerpts.py --longmemeval PATH --window-vectors

Two sets of (long memory, question, answer string):

- the **written set** (``tests/fixtures/topic_recall/topic_recall.json``, issue 47):
  long assistant answers with numbered, bulleted and labelled lists, questions that
  restate the conversation's topic and ask for one item by content or by position, and
  some answers in prose; tune and hold halves fixed by a hash;
- **LongMemEval_S dev** (``--longmemeval``): every relevant turn that ``curate()`` would
  show as an excerpt at 1,000 tokens (its line over 128 tokens and its excerpt at most half
  of it) and whose text holds the answer string verbatim; halves as in
  ``longmemeval.py``. The same check runs inside ``longmemeval.py`` on the turns a real
  ``curate()`` excerpted; this one sees every such turn, excerpted or not this time.

For each row of :data:`ROWS` (a :class:`~tulving.domain.passages.PassageChoice`), the
share of questions whose excerpt (as ``curate()`` renders it, 400 characters) holds the
answer, by half and by kind. ``--window-vectors`` adds rows where the local model's own
window vectors (256-token windows, as ingest reads a long text) give a second opinion:
the passage is chosen inside the window closest to the question ("window only") or
passages in it weigh more ("window x2"); the library does not store window vectors, so
these rows say whether storing them would pay. The time per excerpt is printed per row,
beside the module as it was before issue 47 (``_passages_before.py``) in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _passages_before

from tulving.domain.lexical import query_terms
from tulving.domain.passages import DEFAULT_CHOICE, PLAIN, PassageChoice, excerpt
from tulving.domain.question_parts import question_parts

WRITTEN = (Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "topic_recall"
           / "topic_recall.json")
EXCERPT_CHARS = 400
#: The smallest line ``curate()`` shows as an excerpt (``packing.EXCERPT_MIN_OVER``).
MIN_TOKENS = 128

ROWS: dict[str, PassageChoice] = {
    "plain (every word alike)": PLAIN,
    "default": DEFAULT_CHOICE,
    "- opening discount": attrs.evolve(DEFAULT_CHOICE, opening_weight=1.0),
    "- preamble discount": attrs.evolve(DEFAULT_CHOICE, preamble_weight=1.0),
    "+ focus words (x2)": attrs.evolve(DEFAULT_CHOICE, focus_weight=2.0),
    "- list items": attrs.evolve(DEFAULT_CHOICE, lists=False),
    "- two passages when unsure": attrs.evolve(DEFAULT_CHOICE, spread=2.0),
    "plain + list items": attrs.evolve(PLAIN, lists=True),
}


@attrs.frozen
class Case:
    source: str  # "written" | "longmemeval"
    half: str
    kind: str
    question: str
    answer: str
    text: str
    label: str
    batch: str = ""


def written_cases(path: Path = WRITTEN) -> list[Case]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [Case("written", q["half"], q["kind"], q["question"], q["answer"],
                 f"[2024-03-02] assistant: {m['text']}", f"{m['id']}/{i}", m["batch"])
            for m in data["memories"] for i, q in enumerate(m["questions"])]


def longmemeval_cases(folder: str) -> list[Case]:
    from _longmemeval_data import SHORT_TYPE, load

    from tulving.adapters.tokenizers.tiktoken import create_cl100k

    tokenizer = create_cl100k(None)
    cases = []
    for question in load(folder):
        answer = question.answer.strip().rstrip(".")
        if not answer or len(answer) > 60:
            continue
        for turn in question.turns:
            if not turn.relevant or answer.casefold() not in turn.text.casefold():
                continue
            if tokenizer.count(turn.text) <= MIN_TOKENS:
                continue
            shown = excerpt(turn.text, question_parts(question.question), EXCERPT_CHARS,
                            choice=PLAIN)
            if 2 * len(shown) > len(turn.text):
                continue  # packing would show it whole
            cases.append(Case("longmemeval", question.half,
                              SHORT_TYPE[question.question_type], question.question,
                              answer, turn.text, f"{question.question_id}/{turn.turn_id}"))
    return cases


def kept(case: Case, shown: str) -> bool:
    return case.answer.casefold() in shown.casefold()


Chooser = Callable[[Case], str]


def plain_chooser(choice: PassageChoice) -> Chooser:
    return lambda case: excerpt(case.text, question_parts(case.question), EXCERPT_CHARS,
                                choice=choice)


def before_chooser() -> Chooser:
    """The module as it was on main before issue 47, with the terms the curator gave it
    (timed in the same run; its choices should match the plain row's)."""
    return lambda case: _passages_before.excerpt(case.text, query_terms(case.question),
                                                 EXCERPT_CHARS)


def window_choosers() -> dict[str, Chooser]:
    """Rows with the model's window vectors as a second opinion (see the docstring)."""
    import numpy as np

    from tulving.adapters.embedders._pooling import windows_of
    from tulving.adapters.embedders.local_onnx import LocalOnnxEmbedder

    model = LocalOnnxEmbedder()
    memo: dict[tuple[str, str], tuple[int, int]] = {}

    def best_window(case: Case) -> tuple[int, int]:
        key = (case.text, case.question)
        if key not in memo:
            encodings = model.tokenizer().encode_batch([case.text])
            windows, _, _ = windows_of(encodings)
            vectors = model._embed_encodings(windows)
            scores = vectors @ model.embed_query(case.question)
            best = windows[int(np.argmax(scores))]
            spans = [o for o, special in zip(best.offsets, best.special_tokens_mask,
                                             strict=True) if not special and o[1] > o[0]]
            memo[key] = (spans[0][0], spans[-1][1]) if spans else (0, len(case.text))
        return memo[key]

    def inside(case: Case) -> str:
        start, end = best_window(case)
        head = case.text[:start].split()
        body = excerpt(case.text[start:end], question_parts(case.question), EXCERPT_CHARS)
        return " ".join([*head[:8], "…", body]) if head else body

    def favoured(case: Case) -> str:
        # the window's text counted twice: its words are rarer nowhere else
        start, end = best_window(case)
        doubled = case.text + "\n" + case.text[start:end]
        return excerpt(doubled, question_parts(case.question), EXCERPT_CHARS)

    return {"default, window only": inside, "default, window x2": favoured}


def evaluate(cases: Sequence[Case], chooser: Chooser) -> dict[str, Any]:
    groups: dict[str, list[bool]] = {}
    failures = []
    took = []
    for case in cases:
        started = time.perf_counter()
        shown = chooser(case)
        took.append(time.perf_counter() - started)
        ok = kept(case, shown)
        for group in (f"{case.source} all", f"{case.source} {case.half}",
                      f"{case.source} {case.kind}",
                      f"{case.source} {case.batch} batch" if case.batch else ""):
            if not group:
                continue
            groups.setdefault(group, []).append(ok)
        if not ok:
            failures.append(case.label)
    return {"kept": {g: [sum(v), len(v)] for g, v in sorted(groups.items())},
            "failures": failures,
            "us_per_excerpt": round(1e6 * statistics.fmean(took), 1) if took else None}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--longmemeval", default=None, help="LongMemEval_S dev folder")
    parser.add_argument("--window-vectors", action="store_true",
                        help="add the rows with the local model's window vectors")
    parser.add_argument("--failures", action="store_true", help="list the misses")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    cases = written_cases()
    if args.longmemeval:
        cases += longmemeval_cases(args.longmemeval)
    choosers: dict[str, Chooser] = {"main before issue 47 (its module)": before_chooser()}
    choosers.update({name: plain_chooser(c) for name, c in ROWS.items()})
    if args.window_vectors:
        choosers.update(window_choosers())
    report = {name: evaluate(cases, chooser) for name, chooser in choosers.items()}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    groups = sorted({g for r in report.values() for g in r["kept"]})
    print("answer kept by the excerpt, kept/checkable per group; us per excerpt")
    for name, result in report.items():
        cells = [f"{g}: {result['kept'][g][0]}/{result['kept'][g][1]}"
                 for g in groups if g in result["kept"]]
        print(f"{name:32s} {result['us_per_excerpt']:>7} us  " + ", ".join(cells))
        if args.failures and result["failures"]:
            print("    misses: " + ", ".join(result["failures"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
