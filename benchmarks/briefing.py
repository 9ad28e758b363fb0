"""The cold-start briefing on long real histories: is what the user told us in it?

Usage::

    .venv/bin/python benchmarks/briefing.py /work/shared/data/longmemeval_s_dev
    .venv/bin/python benchmarks/briefing.py PATH --limit-per-type 2          # quick look
    .venv/bin/python benchmarks/briefing.py PATH --embedder local           # the model
    .venv/bin/python benchmarks/briefing.py PATH --timing 1                 # ingest time

Protocol. The LongMemEval_S dev set's single-session-user, single-session-preference and
knowledge-update questions each come with a history of ~500 turns in which the user
states, somewhere, a durable fact the question needs (the turns marked ``has_answer``).
Each history goes into a fresh ``Memory`` the way an application without an LLM would
store a conversation: one ``remember()`` per session (the session's turns as a
``role: text`` transcript, ``valid_from`` the session's date, the clock at that date;
``wait=True``, so what is read off the turns is written before the next session),
so every turn is kept and the no-LLM rules add what they extract. Then, with the clock at
the question's date, the orient briefing (``curate(mode="orient")``, no query) at 500,
1,000 and 2,000 cl100k tokens. A question counts when one of its evidence turns, or a
memory extracted from one (``source_entry_ids``, or a restatement of it that the write
folded into it: its ``metadata["evidence"]["sources"]``), is shown in the briefing in full,
truncated or as an excerpt (an index line does not count).

Baseline from the same run: the most recent turns packed greedily (newest first, a turn
costs its tokens + 1, one that does not fit is skipped), what a framework replaying the
conversation would put in the same budget.

Also printed: the budget used, the stored entries by type (pooled share over the
histories, and the median per history), the turns read as coming from a speaker that is
neither ``user`` nor ``assistant`` (false speakers) and the ingest time. Halves: within
each question type the questions are ordered by the SHA-256 of their id, the first 6 are
the tuning half, the rest the held-back half (``_longmemeval_data.py``).

Embedder: ``hashing`` by default. The briefing reads no vectors (it has no query);
vectors only decide which restatements the write path folds together, so the figures
with the local model differ little (``--embedder local`` measures it; its window vectors
are memoised under ``~/.cache/tulving-benchmarks/briefing``). ``--timing N`` times the
ingest of the first N histories with the local model uncached, next to ``store_many`` of
the same turns and the model alone on the same texts (the raw engine) in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _longmemeval_data import SHORT_TYPE, Question, load

from tulving import Memory
from tulving.adapters.clock import ManualClock
from tulving.adapters.tokenizers.tiktoken import create_cl100k
from tulving.domain.reinforcement import evidence_of

TYPES = ("single-session-user", "single-session-preference", "knowledge-update")
BUDGETS = (500, 1000, 2000)
SPEAKERS = {"user", "assistant"}
SCRATCH = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / (
    "tulving-benchmarks/briefing")
_TOKENIZER: Any = None


def tokenizer() -> Any:
    global _TOKENIZER
    if _TOKENIZER is None:
        _TOKENIZER = create_cl100k(None)
    return _TOKENIZER


def _norm(text: str) -> str:
    return " ".join(text.split())


def _content(turn_text: str) -> str:
    """A LongMemEval turn's text without its ``[date] role:`` label (line breaks kept:
    they are part of what was said, lists and pasted logs included)."""
    return re.sub(r"^\[[^\]]*\]\s*\w+:\s*", "", turn_text)


def _overlaps(episode: str, turn: str) -> bool:
    """Whether a stored episode holds (part of) a turn: a piece of a long turn, a whole
    turn, or (rules that merged turns) a stretch holding the turn's start. Compared with
    white space collapsed (the rules rejoin a turn's lines)."""
    body = _norm(re.sub(r"^\w[\w ]{0,39}:\s*", "", episode))
    turn, episode = _norm(turn), _norm(episode)
    return bool(body) and (body in turn or turn[:80] in episode or body[:80] in turn)


def embedder_for(name: str) -> Any:
    if name != "local":
        return name
    from _embed_cache import CachingEmbedder  # onnxruntime first (see its docstring)

    return CachingEmbedder(SCRATCH / "embeddings.sqlite")


ROLE_NAMES = {"lower": {"user": "user", "assistant": "assistant"},
              "title": {"user": "User", "assistant": "Assistant"}}
ROLES = ROLE_NAMES["lower"]


def ingest(question: Question, folder: Path, embedder: Any) -> tuple[Memory, dict[str, set[str]],
                                                                     float]:
    """The question's memory, each stored entry's LongMemEval turns, and the seconds
    ``remember()`` took."""
    clock = ManualClock(question.turns[0].date)
    memory = Memory(folder / "memory.db", agent_id="briefing", embedder=embedder,
                    tokenizer=tokenizer(), clock=clock).startup()
    turns_of: dict[str, set[str]] = {}
    seconds = 0.0
    for session in question.sessions:
        clock.set(session[0].date)
        transcript = "\n".join(f"{ROLES[t.role]}: {_content(t.text)}" for t in session)
        started = time.perf_counter()
        written = memory.remember(transcript, valid_from=session[0].date, wait=True)
        seconds += time.perf_counter() - started
        assert isinstance(written, list)
        bodies = [(t.turn_id, _content(t.text)) for t in session]
        for entry in written:
            if "turn" in entry.metadata:  # an episode (or a turn typed by the rules)
                turns_of[entry.id] = {tid for tid, body in bodies
                                      if _overlaps(entry.content, body)}
        for entry in written:
            if entry.source_entry_ids and "turn" not in entry.metadata:
                # what it was read from, and what restated it since (its evidence)
                sources = (*entry.source_entry_ids, *evidence_of(entry).sources)
                turns_of[entry.id] = turns_of.get(entry.id, set()).union(
                    *(turns_of.get(i, set()) for i in sources))
    clock.set(question.question_date)
    return memory, turns_of, seconds


def recency_baseline(question: Question, budget: int) -> set[str]:
    count = tokenizer().count
    left, packed = budget, set()
    for turn in sorted(question.turns, key=lambda t: (t.date, t.session, t.turn_id),
                       reverse=True):
        cost = count(f"{turn.role}: {_content(turn.text)}") + 1
        if cost <= left:
            packed.add(turn.turn_id)
            left -= cost
    return packed


def shown_turns(result: Any, turns_of: dict[str, set[str]]) -> set[str]:
    shown: set[str] = set()
    for item in result.entries:
        if item.disclosure != "index":
            shown |= turns_of.get(item.entry.id, set())
    return shown


def entry_stats(memory: Memory) -> tuple[Counter[str], int, int]:
    """Stored entries by type; stored turns of a speaker other than user and assistant
    (false speakers); stored turns with no speaker at all (the rules found none)."""
    from tulving.domain.query import EntryFilter

    entries = memory.ctx.storage.query(EntryFilter(partitions=memory.ctx.visible_partitions()))
    types = Counter(e.type.value for e in entries)
    speakers = Counter(e.metadata.get("speaker") for e in entries if "turn" in e.metadata)
    false = sum(n for name, n in speakers.items()
                if name is not None and str(name).casefold() not in SPEAKERS)
    return types, false, speakers.get(None, 0)


def run(questions: Sequence[Question], embedder_name: str,
        show: bool = False) -> dict[str, Any]:
    embedder = embedder_for(embedder_name)
    rows: list[dict[str, Any]] = []
    for number, q in enumerate(questions, 1):
        with tempfile.TemporaryDirectory(prefix="tulving-briefing-") as tmp:
            memory, turns_of, seconds = ingest(q, Path(tmp), embedder)
            relevant = set(q.relevant)
            row: dict[str, Any] = {"id": q.question_id, "type": q.question_type,
                                   "half": q.half, "turns": len(q.turns),
                                   "ingest_s": round(seconds, 2)}
            for budget in BUDGETS:
                result = memory.curate(mode="orient", token_budget=budget)
                row[f"briefing@{budget}"] = bool(relevant & shown_turns(result, turns_of))
                row[f"used@{budget}"] = result.token_count
                row[f"recency@{budget}"] = bool(relevant & recency_baseline(q, budget))
                if show and budget == 1000:
                    print(f"--- {q.question_id}: {q.question}\n{result.content}\n",
                          file=sys.stderr)
            types, false, unattributed = entry_stats(memory)
            row["types"] = dict(types)
            row["false_speakers"] = false
            row["no_speaker"] = unattributed
            memory.close()
        rows.append(row)
        print(f"[{number}/{len(questions)}] {q.question_id} {SHORT_TYPE[q.question_type]} "
              f"{q.half}: {' '.join(str(int(row[f'briefing@{b}'])) for b in BUDGETS)} "
              f"({row['ingest_s']} s)", file=sys.stderr, flush=True)
    return {"rows": rows}


def _share(rows: Sequence[dict[str, Any]], key: str) -> str:
    hits = sum(1 for r in rows if r[key])
    return f"{hits}/{len(rows)}"


def report(rows: Sequence[dict[str, Any]]) -> str:
    out = []
    header = (f"{'half':<6}{'type':<9}{'n':>3}  " + "".join(
        f"{f'brief@{b}':>11}{f'recent@{b}':>12}{f'used@{b}':>10}" for b in BUDGETS))
    out.append(header)
    for half in ("tune", "hold"):
        part = [r for r in rows if r["half"] == half]
        if not part:
            continue
        groups = [(SHORT_TYPE[t], [r for r in part if r["type"] == t]) for t in TYPES]
        groups.append(("all", part))
        for name, group in groups:
            if not group:
                continue
            cells = "".join(
                f"{_share(group, f'briefing@{b}'):>11}{_share(group, f'recency@{b}'):>12}"
                f"{statistics.mean(r[f'used@{b}'] for r in group):>10.0f}" for b in BUDGETS)
            out.append(f"{half:<6}{name:<9}{len(group):>3}  {cells}")
    pooled: Counter[str] = Counter()
    for r in rows:
        pooled.update(r["types"])
    total = sum(pooled.values())
    kinds = sorted(pooled, key=lambda k: -pooled[k])
    out.append("stored entries by type (pooled share | median share per history): " + ", ".join(
        f"{k} {100 * pooled[k] / total:.1f}% | "
        f"{statistics.median(100 * r['types'].get(k, 0) / sum(r['types'].values()) for r in rows):.1f}%"
        for k in kinds))
    false = [r["false_speakers"] for r in rows]
    none = [r.get("no_speaker", 0) for r in rows]
    out.append(f"turns of a false speaker per history: median {statistics.median(false)}, "
               f"max {max(false)}; turns with no speaker: median {statistics.median(none)}; "
               f"entries per history: median {statistics.median(sum(r['types'].values()) for r in rows)}; "
               f"remember() per history: median {statistics.median(r['ingest_s'] for r in rows):.1f} s")
    return "\n".join(out)


def timing(questions: Sequence[Question], count: int) -> str:
    """remember(), store_many and the model alone on the same turns, local model uncached."""
    from tulving.adapters.embedders.local_onnx import LocalOnnxEmbedder

    lines = []
    model = LocalOnnxEmbedder()
    model.embed(["warm up"])
    for q in questions[:count]:
        texts = [f"{t.role}: {_content(t.text)}" for t in q.turns]
        started = time.perf_counter()
        model.embed(texts)
        raw = time.perf_counter() - started
        with tempfile.TemporaryDirectory(prefix="tulving-briefing-") as tmp:
            _, _, remember_s = ingest(q, Path(tmp), model)
        with tempfile.TemporaryDirectory(prefix="tulving-briefing-") as tmp:
            memory = Memory(Path(tmp) / "m.db", agent_id="t", embedder=model,
                            tokenizer=tokenizer()).startup()
            started = time.perf_counter()
            for session in q.sessions:
                memory.store_many({"content": f"{t.role}: {_content(t.text)}",
                                   "type": "EPISODE", "valid_from": t.date} for t in session)
            store_s = time.perf_counter() - started
            memory.close()
        lines.append(f"{q.question_id}: {len(q.turns)} turns; remember() {remember_s:.1f} s, "
                     f"store_many {store_s:.1f} s, model alone {raw:.1f} s "
                     f"(remember/model {remember_s / raw:.2f}x, store_many/model "
                     f"{store_s / raw:.2f}x)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path")
    parser.add_argument("--limit-per-type", type=int, default=None)
    parser.add_argument("--halves", nargs="+", default=["tune", "hold"], choices=["tune", "hold"])
    parser.add_argument("--ids", nargs="+", default=None, help="only these question ids")
    parser.add_argument("--embedder", default="hashing", choices=["hashing", "local"])
    parser.add_argument("--timing", type=int, default=0,
                        help="time the ingest of the first N histories instead")
    parser.add_argument("--show", action="store_true", help="print each 1,000-token briefing")
    parser.add_argument("--roles", default="lower", choices=sorted(ROLE_NAMES),
                        help="speaker labels of the transcripts: user/assistant (as the "
                             "data has them) or User/Assistant")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    questions = [q for q in load(args.path, args.limit_per_type, tuple(args.halves))
                 if q.question_type in TYPES and (args.ids is None or q.question_id in args.ids)]
    warnings.simplefilter("ignore")
    global ROLES
    ROLES = ROLE_NAMES[args.roles]
    if args.timing:
        print(timing(questions, args.timing))
        return 0
    results = run(questions, args.embedder, args.show)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"LongMemEval_S dev, {len(questions)} questions, orient briefing (no query), "
          f"embedder {args.embedder}, roles {args.roles}; evidence shown / questions")
    print(report(results["rows"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
