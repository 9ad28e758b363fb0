"""Session summaries without an LLM on LoCoMo dev: do they copy the turns, how long are they?

Usage::

    .venv/bin/python benchmarks/summaries_locomo.py /work/shared/data/locomo/locomo_dev.json

Each session of the five dev conversations is told to a fresh ``Memory`` (hashing
embedder, no LLM) inside ``memory.session()``: one ``remember()`` of the session's turns
(``Speaker: text``); ending the session writes its summary. For each summary:

- copied: a sentence of it (split at ``.!?;`` and line ends, at least 6 words) found
  verbatim (white space and case folded) inside a turn of more than 12 words. Lines under
  ``Decided:``, ``Known:``, ``Plans and procedures:`` and ``Notes:`` are what the digest
  keeps on purpose (decisions quoted, facts and preferences as extraction stated them) and
  are counted apart;
- ratio: the summary's cl100k tokens over its session's turns' tokens.

Beside it, the same figures for the digest of the release before (``_digest_before.py``,
which listed every turn under ``Activity:``), on the same sessions in the same run.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _digest_before import digest_before
from _locomo_data import load

from tulving import Memory
from tulving.adapters.tokenizers.tiktoken import create_cl100k
from tulving.domain.query import EntryFilter
from tulving.domain.types import MemoryType

KEPT = ("Decided:", "Known:", "Plans and procedures:", "Notes:")
_SPLIT = re.compile(r"[.!?;]\s+|\n")


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def copied(summary: str, turns: list[str]) -> tuple[int, int]:
    """(sentences copied from a long turn outside what is kept on purpose, inside it)."""
    long_turns = [_fold(t) for t in turns if len(t.split()) > 12]
    outside = inside = 0
    kept = False
    for line in summary.splitlines():
        if line.rstrip().endswith(":") and not line.startswith("- "):
            kept = line.strip() in KEPT
            continue
        if not line.startswith("- "):
            kept = False
        for sentence in _SPLIT.split(line.lstrip("- ").strip('"')):
            words = sentence.split()
            if len(words) >= 6 and any(_fold(sentence) in t for t in long_turns):
                if kept:
                    inside += 1
                else:
                    outside += 1
    return outside, inside


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data")
    parser.add_argument("--limit-conversations", type=int, default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    count = create_cl100k(None).count
    rows: dict[str, list[tuple[int, int, float]]] = {"after": [], "before": []}
    for conv in load(args.data, args.limit_conversations):
        sessions: dict[int, list[str]] = {}
        for turn in conv.turns:
            sessions.setdefault(turn.session, []).append(re.sub(r"^\[[^\]]*\]\s*", "", turn.text))
        for _number, turns in sorted(sessions.items()):
            with tempfile.TemporaryDirectory() as tmp, Memory(
                    Path(tmp) / "m.db", agent_id="s", embedder="hashing") as memory:
                with memory.session() as session:
                    memory.remember("\n".join(turns))
                summary = memory.get(session.summary_id).content if session.summary_id else ""
                flt = EntryFilter(partitions=memory.ctx.visible_partitions(),
                                  session_id=session.id)
                entries = [e for e in memory.ctx.storage.query(flt, newest_first=False)
                           if e.type is not MemoryType.SUMMARY]
                before = digest_before(session.ended or session.record, entries)
            source = sum(count(t) for t in turns)
            for name, text in (("after", summary), ("before", before)):
                outside, inside = copied(text, turns)
                rows[name].append((outside, inside, count(text) / source))
        print(f"{conv.sample_id}: {len(sessions)} sessions", file=sys.stderr)
    for name in ("before", "after"):
        part = rows[name]
        ratios = [r for _, _, r in part]
        print(f"{name}: {len(part)} sessions; sentences copied from a turn of more than 12 "
              f"words: {sum(o for o, _, _ in part)} (sessions with any: "
              f"{sum(1 for o, _, _ in part if o)}), in lines kept on purpose: "
              f"{sum(i for _, i, _ in part)}; summary/source tokens mean "
              f"{statistics.mean(ratios):.3f}, median {statistics.median(ratios):.3f}, "
              f"max {max(ratios):.3f}")


if __name__ == "__main__":
    main()
