"""Redaction: recall and false positives per kind on the corpus, and the cost per memory,
for the detector of issue 34 (detect-secrets' plugins and python-stdnum's validators,
loaded as rule sets) against the hand-written one before it (``_redaction_before.py``),
in the same run.

    PYTHONPATH=. .venv/bin/python benchmarks/redaction.py \\
        [--corpus tests/fixtures/secrets_corpus] \\
        [--locomo /work/shared/data/locomo/locomo_dev.json] [--repeat 5]

Recall: an example counts as caught when its value is gone from the output (masked whole,
not a prefix of it). False positives: a negative text that comes out changed. The third
detector column, detect-secrets with its default plugins (entropy and keyword ones
included), shows why Tulving leaves those out. With ``--locomo``, LoCoMo's turns (real
conversation, no credentials) are a second negative set and the text the costs are
measured on; without it, the corpus texts are.

Costs are microseconds per memory (median over ``--repeat`` passes): *shown* is what every
door pays for each memory it shows (search results, curated entries, MCP and HTTP output);
*stored* is what a write under ``policy={"pii": "redact", "secrets": "redact"}`` pays;
*block* is one curated block of about 7 kB; *first use* loads the rule sets (imports
detect-secrets and python-stdnum), once per process. End to end, on the same Memory: a
``curate()`` (2,000 tokens, LoCoMo's questions) and a ``store_many`` under that policy,
each with the detector before patched in for the one now (the only difference).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _redaction_before as before

from tulving.domain import pii, redaction

ROOT = Path(__file__).resolve().parent.parent


def load_corpus(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                        dict[str, list[str]]]:
    secrets = json.loads((folder / "secrets.json").read_text())["kinds"]
    personal = json.loads((folder / "personal_data.json").read_text())["kinds"]
    negatives = json.loads((folder / "negatives.json").read_text())["categories"]
    return secrets, personal, negatives


def detect_secrets_defaults() -> Callable[[str], str]:
    """detect-secrets as it scans a file (its default plugins and filters, entropy and
    keyword plugins included; verification off, so nothing leaves the machine): the
    values it reports are masked."""
    from detect_secrets.core.scan import _process_line_based_plugins
    from detect_secrets.settings import default_settings, get_settings

    def scrub(text: str) -> str:
        with default_settings():
            get_settings().disable_filters(
                "detect_secrets.filters.common.is_ignored_due_to_verification_policies")
            lines = list(enumerate(text.splitlines() or [text], start=1))
            values = {s.secret_value for s in _process_line_based_plugins(lines, "memory.txt")
                      if s.secret_value}
        for value in sorted(values, key=len, reverse=True):
            text = text.replace(value, "[REDACTED:ds]")
        return text
    return scrub


def caught(fn: Callable[[str], str], example: dict[str, Any]) -> bool:
    out = fn(example["text"])
    return example["value"] not in out and "[REDACTED:" in out


def recall_table(secrets: list[dict[str, Any]], personal: list[dict[str, Any]],
                 ds: Callable[[str], str]) -> tuple[list[str], dict[str, int]]:
    old_policy = lambda t: before.redact_pii(before.redact(t))[0]  # noqa: E731
    new_policy = lambda t: pii.redact_pii(redaction.redact_secrets(t)[0])[0]  # noqa: E731
    rows = ["| kind | source | examples | before: shown | now: shown | before: pii policy "
            "| now: pii policy | detect-secrets defaults |",
            "|---|---|---:|---:|---:|---:|---:|---:|"]
    totals = {"kinds": 0, "examples": 0, "before": 0, "now": 0, "ds": 0,
              "before_policy": 0, "now_policy": 0, "kinds_now": 0}
    for group, kinds in (("secret", secrets), ("personal", personal)):
        for kind in kinds:
            examples = kind["examples"]
            n = len(examples)
            b = sum(caught(before.redact, e) for e in examples)
            w = sum(caught(redaction.redact, e) for e in examples)
            d = sum(caught(ds, e) for e in examples)
            bp = sum(caught(old_policy, e) for e in examples)
            wp = sum(caught(new_policy, e) for e in examples)
            source = kind.get("source") or kind.get("validator") or "tulving"
            if group == "personal" and kind.get("contact"):
                source = "tulving (contact: policy only)"
            rows.append(f"| {kind['kind']} | {source} | {n} | {b}/{n} | {w}/{n} | {bp}/{n} "
                        f"| {wp}/{n} | {d}/{n} |")
            totals["kinds"] += 1
            totals["examples"] += n
            totals["before"] += b
            totals["now"] += w
            totals["ds"] += d
            totals["before_policy"] += bp
            totals["now_policy"] += wp
            caught_now = wp if kind.get("contact") else w
            totals["kinds_now"] += int(caught_now == n)
    return rows, totals


def negatives_table(negatives: dict[str, list[str]], ds: Callable[[str], str],
                    locomo: list[str]) -> list[str]:
    rows = ["| negative set | texts | before: changed | now: changed | detect-secrets "
            "defaults: changed |", "|---|---:|---:|---:|---:|"]
    sets = dict(negatives)
    if locomo:
        sets["LoCoMo turns (real conversation)"] = locomo
    for name, texts in sets.items():
        b = sum(before.redact(t) != t for t in texts)
        w = sum(redaction.redact(t) != t for t in texts)
        d = sum(ds(t) != t for t in texts)
        rows.append(f"| {name} | {len(texts)} | {b} | {w} | {d} |")
    return rows


def per_memory_us(fn: Callable[[str], Any], texts: list[str], repeat: int) -> float:
    laps = []
    for _ in range(repeat):
        began = time.perf_counter()
        for text in texts:
            fn(text)
        laps.append((time.perf_counter() - began) / len(texts))
    return statistics.median(laps) * 1e6


def first_use_ms() -> float:
    code = ("import time, tulving; from tulving import redact; t = time.perf_counter(); "
            "redact('x'); print((time.perf_counter() - t) * 1000)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(ROOT), check=True)
    return float(out.stdout.strip())


def costs(texts: list[str], repeat: int) -> list[str]:
    redaction.redact("warm up: load the rule sets")
    block = "\n".join(texts[:60])[:7000]
    rows = ["| cost per memory | before (µs) | now (µs) | now / before |", "|---|---:|---:|---:|"]
    cases = {
        # uncached: what a text costs the first time it is shown (later showings of the
        # same text hit redaction's cache; the end-to-end curate below includes that)
        f"shown (redact, {len(texts)} memories)": (before.redact,
                                                   redaction._redact_uncached, texts),
        "stored under pii+secrets redact": (
            lambda t: before.redact_pii(before.redact(t)),
            lambda t: pii.redact_pii(redaction.redact_secrets(t)[0]), texts),
        f"one curated block ({len(block)} chars)": (before.redact,
                                                    redaction._redact_uncached, [block] * 50),
    }
    for name, (old, new, sample) in cases.items():
        b = per_memory_us(old, sample, repeat)
        w = per_memory_us(new, sample, repeat)
        rows.append(f"| {name} | {b:.1f} | {w:.1f} | {w / b:.1f}x |")
    rows.append(f"| first use in a process (loads the rule sets) | - | {first_use_ms() * 1000:.0f} "
                "| - |")
    return rows


def end_to_end(texts: list[str], queries: list[str], repeat: int) -> list[str]:
    """curate() and a policed store_many with each detector, same data, same run."""
    import tulving.application.curation.curator as curator
    import tulving.domain.write_policy as write_policy
    from tulving import Memory

    patches = {"before": (before.redact_stored, lambda t: before.redact_with_count(t),
                          before.redact_pii),
               "now": (redaction.redact_stored, redaction.redact_secrets, pii.redact_pii)}
    kept = (curator.redact_stored, write_policy.redact_secrets, write_policy.redact_pii)
    results: dict[str, dict[str, float]] = {}
    policy = {"pii": "redact", "secrets": "redact"}
    items = [{"content": t, "type": "OBSERVATION"} for t in texts]
    laps: dict[str, list[float]] = {name: [] for name in patches}
    stores: dict[str, list[float]] = {name: [] for name in patches}
    try:
        # a warm-up pass (discarded), then the two detectors in turn, so that load and
        # caches weigh on both alike
        for round_ in range(repeat + 1):
            for name, (shown, secrets, personal) in patches.items():
                curator.redact_stored = shown
                write_policy.redact_secrets = secrets  # type: ignore[assignment]
                write_policy.redact_pii = personal
                with Memory(":memory:", agent_id="bench", embedder="hashing", vectors="exact",
                            policy=policy) as m:
                    began = time.perf_counter()
                    m.store_many(items)
                    stored = (time.perf_counter() - began) / len(items)
                    curated = []
                    for q in queries:
                        began = time.perf_counter()
                        m.curate(q, token_budget=2000)
                        curated.append(time.perf_counter() - began)
                if round_:
                    stores[name].append(stored)
                    laps[name].extend(curated)
        for name in patches:
            results[name] = {"curate": statistics.median(laps[name]) * 1e3,
                             "store": statistics.median(stores[name]) * 1e6}
    finally:
        curator.redact_stored, write_policy.redact_secrets, write_policy.redact_pii = kept
    b, w = results["before"], results["now"]
    return [f"| curate(), 2,000 tokens, p50 (ms) | {b['curate']:.2f} | {w['curate']:.2f} "
            f"| {w['curate'] / b['curate']:.2f}x |",
            f"| store_many under pii+secrets redact (µs per memory) | {b['store']:.0f} "
            f"| {w['store']:.0f} | {w['store'] / b['store']:.2f}x |"]


def locomo_turns(path: str | None) -> list[str]:
    if not path:
        return []
    from _locomo_data import load

    return [t.text for conv in load(path) for t in conv.turns]


def locomo_questions(path: str | None) -> list[str]:
    if not path:
        return []
    from _locomo_data import load

    return [q.text for conv in load(path) for q in conv.questions]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(ROOT / "tests/fixtures/secrets_corpus"))
    parser.add_argument("--locomo", default=None, help="LoCoMo json (a negative set)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    secrets, personal, negatives = load_corpus(Path(args.corpus))
    ds = detect_secrets_defaults()
    locomo = locomo_turns(args.locomo)
    rules = redaction.rule_sets.current()
    print(f"rule sets: {rules.source}; {len(rules.secrets)} credential rules, "
          f"{len(rules.identifiers)} identifier rules\n")
    rows, totals = recall_table(secrets, personal, ds)
    print("\n".join(rows))
    print(f"\n{len(secrets)} secret kinds, {len(personal)} personal-data kinds, "
          f"{totals['examples']} examples: caught at the doors before {totals['before']}, "
          f"now {totals['now']}; under the pii policy before {totals['before_policy']}, "
          f"now {totals['now_policy']}; detect-secrets defaults {totals['ds']}. Kinds fully "
          f"caught now: {totals['kinds_now']}/{totals['kinds']}.\n")
    print("\n".join(negatives_table(negatives, ds, locomo)))
    print()
    texts = locomo or [e["text"] for k in secrets + personal for e in k["examples"]] + [
        t for ts in negatives.values() for t in ts]
    print("\n".join(costs(texts, args.repeat)))
    queries = locomo_questions(args.locomo) or [k["kind"].replace("_", " ") for k in secrets]
    print("\n".join(end_to_end(texts[:3000], queries[:50], max(1, args.repeat // 2))))


if __name__ == "__main__":
    main()
