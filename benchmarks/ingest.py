"""Ingest speed of the embedded default beside the local model's own ``embed``.

Usage::

    .venv/bin/python benchmarks/ingest.py --locomo /work/shared/data/locomo/locomo_dev.json \\
        --longmemeval /work/shared/data/longmemeval_s_dev --turns 1000

Two kinds of text, side by side: short conversational turns (LoCoMo, ~130 characters)
and long user-assistant turns (LongMemEval_S, the turns of 600 characters or more: long
assistant answers). Each is stored the way a conversation is, one ``store_many`` per
session (event time = the session's date), into a fresh embedded-default store (SQLite
+ the default vector index + the local MiniLM model). The raw rate is the same model's
``embed`` over the same contents in the same batches, each content once. Raw and
``store_many`` alternate session by session, so a slow spell of the shared machine falls
on both; the ratio (store_many / raw) is the figure to read (issue 35's target: 0.5x or
better on both kinds).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo_data import load

from tulving import Memory

Session = tuple[datetime, list[str]]


def locomo_sessions(path: str, turns: int) -> list[Session]:
    out: list[Session] = []
    taken = 0
    for conv in load(path):
        for number in sorted({t.session for t in conv.turns}):
            group = [t for t in conv.turns if t.session == number]
            out.append((group[0].date, [t.text for t in group]))
            taken += len(group)
            if taken >= turns:
                return out
    return out


def longmemeval_sessions(folder: str, turns: int, min_chars: int = 600) -> list[Session]:
    """Sessions of long turns: each session's turns of ``min_chars`` or more, as the
    data's protocol writes them (``[YYYY-MM-DD] role: content``)."""
    out: list[Session] = []
    taken = 0
    for path in sorted(Path(folder).glob("*.json")):
        item = json.loads(path.read_text(encoding="utf-8"))
        for date, session in zip(item["haystack_dates"], item["haystack_sessions"],
                                 strict=True):
            at = datetime.strptime(date.split(" (")[0], "%Y/%m/%d").replace(tzinfo=UTC)
            texts = [f"[{at:%Y-%m-%d}] {t['role']}: {t['content']}" for t in session
                     if len(t["content"]) >= min_chars]
            if texts:
                out.append((at, texts))
                taken += len(texts)
            if taken >= turns:
                return out
    return out


def measure(sessions: Sequence[Session], folder: Path, name: str,
            options: dict[str, Any] | None) -> dict[str, Any]:
    memory = Memory(folder / f"{name}.db", agent_id="bench", options=options)
    memory.startup()
    embedder = memory.ctx.embedder
    assert embedder is not None
    embedder.embed(["warm up the batch sessions", "and the tokenizer"])
    raw = stored = 0.0
    count = chars = 0
    try:
        for at, texts in sessions:
            began = time.perf_counter()
            embedder.embed(texts)
            raw += time.perf_counter() - began
            began = time.perf_counter()
            memory.store_many({"content": t, "type": "EPISODE", "valid_from": at}
                              for t in texts)
            stored += time.perf_counter() - began
            count += len(texts)
            chars += sum(len(t) for t in texts)
    finally:
        memory.close()
    return {"texts": count, "mean_chars": round(chars / max(count, 1)),
            "raw_embed_per_s": round(count / raw, 1),
            "store_many_per_s": round(count / stored, 1),
            "ratio": round(raw / stored, 2)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", required=True, help="locomo_dev.json")
    parser.add_argument("--longmemeval", required=True, help="the longmemeval_s_dev folder")
    parser.add_argument("--turns", type=int, default=1000, help="texts of each kind")
    parser.add_argument("--context-window", type=int, default=None,
                        help="writing.context_window (default: the library's)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    options = ({"writing": {"context_window": args.context_window}}
               if args.context_window is not None else None)
    kinds = {"short turns (LoCoMo)": locomo_sessions(args.locomo, args.turns),
             "long turns (LongMemEval_S, >= 600 chars)": longmemeval_sessions(
                 args.longmemeval, args.turns)}
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="tulving-ingest-") as tmp:
        for number, (kind, sessions) in enumerate(kinds.items()):
            report[kind] = measure(sessions, Path(tmp), f"kind{number}", options)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print("ingest, embedded default with the local model: store_many against the model's "
          "own embed over the same contents, session by session")
    for kind, row in report.items():
        print(f"  {kind:44s} {row['texts']:5d} texts of {row['mean_chars']:5d} chars:  raw "
              f"{row['raw_embed_per_s']:7.1f}/s  store_many {row['store_many_per_s']:7.1f}/s"
              f"  ratio {row['ratio']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
