"""``remember()`` on LoCoMo with no LLM, next to per-turn ``store_many`` on the same data.

Usage: ``.venv/bin/python benchmarks/remember_locomo.py /path/to/locomo_dev.json``
(``--limit-conversations N``, ``--embedder hashing`` for a quick run, ``--json``).

Both arms hold the same text per turn (``Speaker: text [photo: caption]``, valid from the
session date) with the local MiniLM embedder. ``store_many``: one memory per turn, one
batch per session. ``remember``: each session's turns as one transcript, session date as
``valid_from``; it keeps every turn as an EPISODE and adds the typed memories the rules
extract (preferences, facts, decisions, plans, procedures). Measured: ingest turns/s and
entries/s, evidence recall@10 of ``search`` (fraction of a question's evidence turns
whose full text is an entry in the top 10), and ``curate`` coverage at 1,000 tokens
(evidence text fully inside the curated content). Questions: categories 1-4 with
evidence, as in ``shared/data/locomo/README.md``. Last: the latency of ``remember()`` for
one session with an LLM, through the real openai client against the scripted stub server
(a fixed extraction reply), next to the same call with no LLM.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _locomo_data import load, parse_session_date

from tulving import Memory
from tulving.testing.openai_server import ChatReply, OpenAIStubServer

TOP_K = 10
BUDGET = 1_000


def sessions_of(item: dict[str, Any]) -> list[tuple[Any, list[tuple[str, str]]]]:
    """[(date, [(dia_id, "Speaker: text [photo: ...]"), ...]), ...] in session order."""
    conv = item["conversation"]
    numbers = sorted(int(k.split("_")[1]) for k in conv
                     if k.startswith("session_") and k.count("_") == 1)
    out = []
    for n in numbers:
        date = parse_session_date(conv[f"session_{n}_date_time"])
        turns = []
        for t in conv[f"session_{n}"]:
            text = " ".join(str(t["text"]).split())
            line = f"{t['speaker']}: {text}"
            if t.get("blip_caption"):
                line += f" [photo: {t['blip_caption']}]"
            turns.append((t["dia_id"], line))
        out.append((date, turns))
    return out


def evaluate(memory: Memory, questions: Sequence[Any], text_of: dict[str, str]) -> tuple[float, float]:
    recall, coverage = [], []
    for q in questions:
        hits = {h.entry.content for h in memory.search(q.text, top_k=TOP_K)}
        recall.append(sum(text_of[e] in hits for e in q.evidence) / len(q.evidence))
        if hasattr(memory, "curate"):
            content = memory.curate(q.text, token_budget=BUDGET).content
            coverage.append(sum(text_of[e] in content for e in q.evidence) / len(q.evidence))
    return statistics.mean(recall), statistics.mean(coverage) if coverage else float("nan")


def run(path: str, limit: int | None, embedder: str) -> dict[str, Any]:
    raw = json.loads(Path(path).read_text(encoding="utf-8"))[: limit or None]
    convs = load(path, limit)
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for arm in ("store_many", "remember"):
            turns = entries = 0
            seconds = 0.0
            recalls, coverages, weights = [], [], []
            for item, conv in zip(raw, convs, strict=True):
                sessions = sessions_of(item)
                text_of = {d: line for _, ts in sessions for d, line in ts}
                memory = Memory(Path(folder) / f"{arm}-{conv.sample_id}.db",
                                agent_id=conv.sample_id, embedder=embedder)
                memory.startup()
                started = time.perf_counter()
                for date, ts in sessions:
                    if arm == "store_many":
                        out = memory.store_many(
                            {"content": line, "type": "EPISODE", "valid_from": date,
                             "metadata": {"dia_id": d}} for d, line in ts)
                    else:
                        out = memory.remember("\n".join(line for _, line in ts), valid_from=date,
                                              wait=True)
                    entries += len(out)
                    turns += len(ts)
                seconds += time.perf_counter() - started
                recall, cov = evaluate(memory, conv.questions, text_of)
                recalls.append(recall)
                coverages.append(cov)
                weights.append(len(conv.questions))
                memory.close()
            total = sum(weights)
            results[arm] = {
                "turns": turns, "entries": entries, "seconds": round(seconds, 2),
                "turns_per_s": round(turns / seconds, 1),
                "entries_per_s": round(entries / seconds, 1),
                "recall@10": round(sum(r * w for r, w in zip(recalls, weights, strict=False)) / total, 4),
                f"curate_coverage@{BUDGET}": round(
                    sum(c * w for c, w in zip(coverages, weights, strict=False)) / total, 4),
                "questions": total,
            }
    results["latency"] = llm_latency(raw[0], embedder)
    return results


def llm_latency(item: dict[str, Any], embedder: str) -> dict[str, Any]:
    """remember() of each session of one conversation: stub LLM vs no LLM, in ms."""
    reply = json.dumps({"memories": [
        {"type": "PREFERENCE", "content": "Caroline loves painting", "entity": "Caroline",
         "attribute": "painting", "value": "loves"},
        {"type": "FACT", "content": "Melanie has two kids", "entity": "Melanie",
         "attribute": "children", "value": "two"},
    ]})
    sessions = sessions_of(item)
    out: dict[str, Any] = {}
    with OpenAIStubServer(responder=lambda body: ChatReply(reply)) as server, \
            tempfile.TemporaryDirectory() as folder:
        for name, llm, options in (
            ("no_llm", None, None),
            ("stub_llm", "openai", {"llm": {"base_url": server.base_url, "model": "stub-chat"}}),
        ):
            memory = Memory(Path(folder) / f"{name}.db", agent_id="lat", embedder=embedder,
                            llm=llm, options=options)
            memory.startup()
            times = []
            for date, ts in sessions:
                started = time.perf_counter()
                memory.remember("\n".join(line for _, line in ts), valid_from=date)
                times.append((time.perf_counter() - started) * 1000)
            times.sort()
            out[name] = {"p50_ms": round(statistics.median(times), 1),
                         "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1),
                         "llm_calls": memory.stats()["llm"]["calls"]}
            memory.close()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path")
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = run(args.path, args.limit_conversations, args.embedder)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    base, rem = results["store_many"], results["remember"]
    print(f"LoCoMo: {base['turns']} turns, {base['questions']} questions, embedder {args.embedder}")
    print(f"{'arm':<12}{'turns/s':>10}{'entries/s':>11}{'entries':>9}{'recall@10':>11}"
          f"{'curate@1000':>13}")
    for name, r in (("store_many", base), ("remember", rem)):
        print(f"{name:<12}{r['turns_per_s']:>10}{r['entries_per_s']:>11}{r['entries']:>9}"
              f"{r['recall@10']:>11}{r[f'curate_coverage@{BUDGET}']:>13}")
    print(f"ratio remember/store_many: ingest {rem['turns_per_s'] / base['turns_per_s']:.2f}x, "
          f"recall {rem['recall@10'] / base['recall@10']:.3f}x, curate coverage "
          f"{rem[f'curate_coverage@{BUDGET}'] / base[f'curate_coverage@{BUDGET}']:.3f}x")
    lat = results["latency"]
    print(f"remember() per session: no LLM p50 {lat['no_llm']['p50_ms']} ms "
          f"(p95 {lat['no_llm']['p95_ms']}); stub LLM p50 {lat['stub_llm']['p50_ms']} ms "
          f"(p95 {lat['stub_llm']['p95_ms']}, {lat['stub_llm']['llm_calls']} calls)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
