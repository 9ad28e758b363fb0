"""Issue 54's tables for ``benchmarks/redaction.py``: the worst-case cost of masking
(``--worst-case``) and the third corpus with contact details and false positives on the
dev conversations (``--only-54``)."""

from __future__ import annotations

import collections
import json
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "secrets_corpus"
sys.path.insert(0, str(CORPUS))

import adversarial  # noqa: E402

from tulving.domain import pii, redaction  # noqa: E402


def _seconds(fn: Callable[[str], object], text: str) -> float:
    began = time.perf_counter()
    fn(text)
    return time.perf_counter() - began


def worst_case(sizes: list[int], top: int) -> list[str]:
    """Every adversarial unit at the first size, the ``top`` costliest at every size, the
    raw betterleaks engine on the same text beside them."""
    redaction.redact("load the rule sets")
    units = adversarial.units(adversarial.rule_triggers())
    first = sizes[0]
    timed = []
    for name, unit in units.items():
        text = adversarial.text_of(unit, first)
        timed.append((_seconds(redaction._redact_uncached, text), name))
    timed.append((_seconds(redaction._redact_uncached, adversarial.random_base64(first)),
                  "random base64"))
    timed.sort(reverse=True)
    rows = [f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
            f"{len(timed)} units at {first:,} characters, the {top} costliest at every size",
            "", "| unit | " + " | ".join(f"{s:,} chars (s)" for s in sizes)
            + " | s per 100 kB at the largest | raw betterleaks at the largest (s) |",
            "|---|" + "---:|" * (len(sizes) + 2)]
    for cost, name in timed[:top]:
        unit = units.get(name)
        cells, last = [], 0.0
        for size in sizes:
            text = adversarial.random_base64(size) if unit is None else \
                adversarial.text_of(unit, size)
            last = cost if size == first else _seconds(redaction._redact_uncached, text)
            cells.append(f"{last:.3f}")
        raw = "-"
        try:
            import betterleaks

            text = adversarial.random_base64(sizes[-1]) if unit is None else \
                adversarial.text_of(unit, sizes[-1])
            raw = f"{_seconds(betterleaks.scan_string, text):.3f}"
        except ImportError:
            pass
        rows.append(f"| {name} | " + " | ".join(cells)
                    + f" | {last / sizes[-1] * 100_000:.3f} | {raw} |")
    rows.append("")
    rows.append(f"all {len(timed)} units at {first:,} characters: total {sum(c for c, _ in timed):.1f} s, "
                f"median {sorted(c for c, _ in timed)[len(timed) // 2] * 1000:.1f} ms")
    return rows


def _kinds(name: str) -> list[dict[str, Any]]:
    return list(json.loads((CORPUS / f"{name}.json").read_text())["kinds"])


def _caught(out: str, value: str) -> bool:
    return value not in out and "[REDACTED:" in out


def dev_turns(locomo: str | None, longmemeval: str | None) -> dict[str, list[str]]:
    sets: dict[str, list[str]] = {}
    if locomo:
        from _locomo_data import load

        sets["LoCoMo turns"] = [t.text for c in load(locomo) for t in c.turns]
    if longmemeval:
        seen: set[str] = set()
        for path in sorted(Path(longmemeval).rglob("*.json")):
            raw = json.loads(path.read_text())
            for session in raw.get("haystack_sessions", []):
                seen.update(turn["content"] for turn in session)
        sets["LongMemEval turns (distinct)"] = sorted(seen)
    return sets


def round3(locomo: str | None, longmemeval: str | None) -> list[str]:
    redaction.redact("load the rule sets")
    rows = ["| kind | source | at the doors | beyond the doors (spans, logs) | pii policy |",
            "|---|---|---:|---:|---:|"]
    for name in ("secrets_round3", "identifiers_round3", "contacts_round3"):
        for kind in _kinds(name):
            examples = kind["examples"]
            n = len(examples)
            doors = sum(_caught(redaction.redact(e["text"]), e["value"]) for e in examples)
            beyond = sum(_caught(redaction.redact_all(e["text"]), e["value"])
                         for e in examples)
            policy = sum(_caught(pii.redact_pii(e["text"])[0], e["value"]) for e in examples)
            source = kind.get("source") or kind.get("validator")
            shown = "-" if name == "secrets_round3" else f"{policy}/{n}"  # personal data only
            rows.append(f"| {kind['kind']} | {source} | {doors}/{n} | {beyond}/{n} "
                        f"| {shown} |")
    rows += ["", "| negative set | texts | changed at the doors | changed beyond the doors "
             "| contact details found (kinds) |", "|---|---:|---:|---:|---|"]
    sets: dict[str, list[str]] = {}
    for name in ("negatives", "negatives_round2", "negatives_round3"):
        sets.update(json.loads((CORPUS / f"{name}.json").read_text())["categories"])
    rng = random.Random(54)
    sets["10,000 random float reprs"] = [repr(rng.random()) for _ in range(10_000)]
    sets.update(dev_turns(locomo, longmemeval))
    for name, texts in sets.items():
        doors = sum(redaction.redact(t) != t for t in texts)
        beyond = sum(redaction.redact_all(t) != t for t in texts)
        kinds = collections.Counter(m.kind for t in texts for m in pii.find_contacts(t))
        rows.append(f"| {name} | {len(texts)} | {doors} | {beyond} | "
                    f"{', '.join(f'{k} {v}' for k, v in sorted(kinds.items())) or '-'} |")
    return rows
