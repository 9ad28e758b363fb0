"""Redaction: recall and false positives per kind on the corpus, and the cost per memory,
for the detector of issue 34 (detect-secrets' plugins and python-stdnum's validators,
loaded as rule sets) against the hand-written one before it (``_redaction_before.py``),
in the same run.

    PYTHONPATH=. .venv/bin/python benchmarks/redaction.py \\
        [--corpus tests/fixtures/secrets_corpus] \\
        [--locomo /work/shared/data/locomo/locomo_dev.json] [--repeat 5] \\
        [--only-42 [--before-tree DIR]] [--only-54 [--longmemeval DIR]]
        [--worst-case [--sizes 10000,100000,1000000] [--top 8]]

``--only-42`` prints issue 42's tables instead: every kind of the second corpus looked
for at every door, false positives on every negative set, and what detection costs where
it is paid (``_detection_cost.py``: before this issue, now scanned at read, now found at
write and kept), each in a fresh process, beside the raw engine.

``--only-54`` prints issue 54's: the third corpus per kind (at the doors, beyond them
where contact details are masked too, under the ``pii`` policy) and every negative set
with 10,000 float reprs and the dev conversations (LoCoMo, LongMemEval's distinct turns),
changed at the doors and beyond, with the contact details found in each. ``--worst-case``
times every adversarial unit (``tests/fixtures/secrets_corpus/adversarial.py``) and the
costliest up to 1 MB, with the raw betterleaks engine on the same text.

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

from tulving.application.plumbing.rule_set_source import install_rule_sets
from tulving.domain import pii, redaction

install_rule_sets()  # the rule sets a Memory masks with (the domain alone has none)
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


# ------------------------------------------------------------------ issue 42: doors and cost
def load_round2(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                       dict[str, list[str]]]:
    secrets = json.loads((folder / "secrets_round2.json").read_text())["kinds"]
    ids = json.loads((folder / "identifiers_round2.json").read_text())["kinds"]
    negatives = json.loads((folder / "negatives_round2.json").read_text())["categories"]
    return secrets, ids, negatives


#: Sources whose values name their own kind (a vendor prefix, a distinctive shape): they
#: are masked standing alone, so they are also tried as a key and as a tag by themselves.
#: The others (a password after ``PGPASSWORD=``, a BSN after "BSN") are recognisable only
#: with their context, so their whole example text is what goes in a tag.
_SELF_NAMING = ("betterleaks", "detect-secrets", "tulving-plugin", "tulving-context:vendor")


def _self_naming(kind: dict[str, Any]) -> bool:
    source = str(kind.get("source") or "")
    return source.startswith(_SELF_NAMING) or kind.get("anchored") is False


def doors_table(kinds: list[dict[str, Any]]) -> tuple[list[str], int]:
    """Each example stored as a memory (its text as the content, as a metadata value and,
    where it fits, as a tag; a value that names its own kind also as a key and a tag by
    itself), then looked for in what each door shows: the JSON every door renders (HTTP,
    MCP, CLI --json: ``render.entry_dict``), the CLI's text line, the curated block (the
    memory checked to be in it), the key listing, an error message quoting it. A cell is
    the examples masked there out of those the door shows; "-": the door cannot hold it
    (a key has no spaces, a tag at most 64 characters)."""
    import re

    from tulving import Memory
    from tulving.interfaces import render

    doors = ("entry JSON", "CLI line", "curate", "metadata", "tag", "key", "error")
    rows = ["| kind | source | " + " | ".join(doors) + " |",
            "|---|---|" + "---:|" * len(doors)]
    fully = 0
    with Memory(":memory:", agent_id="bench", embedder="hashing", vectors="exact") as m:
        for kind in kinds:
            counts = {d: [0, 0] for d in doors}
            alone = _self_naming(kind)
            for example in kind["examples"]:
                text, value = example["text"], example["value"]
                key = value if alone and re.fullmatch(
                    r"[A-Za-z0-9][A-Za-z0-9._:/\-]{0,190}", value) and ".." not in value \
                    and "//" not in value else None
                tag = value if alone else text
                if len(tag) > 64 or not tag.isprintable() or "," in tag:
                    tag = None
                e = m.store(text, type="FACT", key=f"k/{key}" if key else None,
                            tags=[tag] if tag else [], metadata={"note": text})
                curated = m.curate(text, token_budget=4000)
                assert any(c.entry.id == e.id for c in curated.entries), kind["kind"]
                shown = {
                    "entry JSON": json.dumps(render.entry_dict(e)),
                    "CLI line": render.entry_line(e),
                    "curate": curated.content,
                    "metadata": json.dumps(render.entry_dict(e)["metadata"]),
                    "tag": json.dumps(render.entry_dict(e)["tags"]) if tag else None,
                    "key": json.dumps(render.scrub(m.list_keys("k/"))) if key else None,
                    "error": str(render.scrub(f"no memory with key '{key or text}'")),
                }
                for door, out in shown.items():
                    if out is None:
                        continue
                    counts[door][1] += 1
                    counts[door][0] += value not in out
                m.forget(e.id, hard=True)
            cells = [f"{a}/{n}" if n else "-" for a, n in counts.values()]
            fully += all(a == n for a, n in counts.values())
            rows.append(f"| {kind['kind']} | {kind.get('source') or kind.get('validator')} | "
                        + " | ".join(cells) + " |")
    return rows, fully


def detection_cost(texts: list[str], queries: list[str], before_tree: str | None,
                   rounds: int = 3) -> list[str]:
    """First-shown memory and curate() end to end, for each place detection can be paid,
    each in a fresh process (``_detection_cost.py``), with the raw engine beside it."""
    import os
    import tempfile

    folder = tempfile.mkdtemp()
    texts_file, queries_file = f"{folder}/texts.json", f"{folder}/queries.json"
    Path(texts_file).write_text(json.dumps(texts))
    Path(queries_file).write_text(json.dumps(queries))
    script = str(Path(__file__).parent / "_detection_cost.py")
    runs = []
    if before_tree:
        runs.append(("before (issue 34's rules), scanned at read", before_tree, "read"))
    runs += [("now (issue 42's rules), scanned at read", str(ROOT), "read"),
             ("now, found at write and kept (masks applied at read)", str(ROOT), "kept")]
    rows = [f"medians of {rounds} interleaved runs; load average {os.getloadavg()[0]:.1f}", "",
            "| where detection is paid | store_many (µs/memory) | first-shown memory (µs) "
            "| curate, cold cache (ms, p50) | curate, warm (ms, p50) |",
            "|---|---:|---:|---:|---:|"]
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in runs}
    for _ in range(rounds):  # interleaved, so that load weighs on every choice alike
        for name, tree, choice in runs:
            env = {**os.environ, "PYTHONPATH": tree}
            out = subprocess.run([sys.executable, script, texts_file, queries_file, choice],
                                 capture_output=True, text=True, env=env, cwd=tree)
            if out.returncode:
                raise SystemExit(f"{name}: {out.stderr[-2000:]}")
            results[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    for name, found in results.items():
        r = {k: statistics.median(x[k] for x in found) for k in found[0]}
        rows.append(f"| {name} | {r['store_us']:.0f} | {r['first_shown_us']:.1f} | "
                    f"{r['curate_cold_ms']:.2f} | {r['curate_warm_ms']:.2f} |")
    try:
        import betterleaks

        betterleaks.scan_string("warm")
        began = time.perf_counter()
        for text in texts:
            betterleaks.scan_string(text)
        raw = (time.perf_counter() - began) / len(texts) * 1e6
        rows.append(f"| raw engine: betterleaks.scan_string alone | - | {raw:.1f} | - | - |")
    except ImportError:
        pass
    return rows


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
    parser.add_argument("--before-tree", default=None,
                        help="a checkout of the code before issue 42 (git archive faf4ddf "
                             "| tar -x -C DIR): its detection cost is measured beside today's")
    parser.add_argument("--only-42", action="store_true",
                        help="only issue 42's tables (round-2 corpus, doors, cost)")
    parser.add_argument("--only-54", action="store_true",
                        help="only issue 54's tables (round-3 corpus, contacts, negatives)")
    parser.add_argument("--longmemeval", default=None, help="LongMemEval folder (negatives)")
    parser.add_argument("--worst-case", action="store_true",
                        help="the cost of the adversarial units, up to --sizes")
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    if args.only_42:
        main_42(args)
        return
    if args.only_54 or args.worst_case:
        import _redaction_54

        if args.only_54:
            print("\n".join(_redaction_54.round3(args.locomo, args.longmemeval)))
        if args.worst_case:
            sizes = [int(s) for s in args.sizes.split(",")]
            print("\n".join(_redaction_54.worst_case(sizes, args.top)))
        return
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


def main_42(args: argparse.Namespace) -> None:
    secrets2, ids2, negatives2 = load_round2(Path(args.corpus))
    rules = redaction.rule_sets.current()
    print(f"rule sets: {rules.source}; {len(rules.secrets)} credential rules (betterleaks "
          f"counts as one, with its 460+ inside), {len(rules.identifiers)} identifier rules\n")
    rows, fully = doors_table(secrets2 + ids2)
    print("\n".join(rows))
    print(f"\n{fully}/{len(secrets2) + len(ids2)} kinds masked at every door\n")
    _, _, negatives = load_corpus(Path(args.corpus))
    locomo = locomo_turns(args.locomo)
    sets = {**negatives, **negatives2}
    if locomo:
        sets["LoCoMo turns (real conversation)"] = locomo
    print("| negative set | texts | changed |\n|---|---:|---:|")
    for name, texts in sets.items():
        print(f"| {name} | {len(texts)} | {sum(redaction.redact(t) != t for t in texts)} |")
    print()
    texts = locomo[:3000] or [e["text"] for k in secrets2 + ids2 for e in k["examples"]]
    queries = locomo_questions(args.locomo)[:40] or [k["kind"] for k in secrets2]
    print("\n".join(detection_cost(texts, queries, args.before_tree)))


if __name__ == "__main__":
    main()
