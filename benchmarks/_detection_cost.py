"""Run by ``redaction.py`` in a subprocess, once per code tree and choice: what detection
costs where a door pays it. Prints one JSON object. Works on the tree before issue 42
(no masks kept with entries) and after.

    python _detection_cost.py TEXTS.json QUERIES.json CHOICE

CHOICE: ``read`` (every door scans the text it shows; the kept masks, if any, are
ignored by changing the rules' revision) or ``kept`` (doors apply the masks found when
the memory was written).
"""

from __future__ import annotations

import json
import statistics
import sys
import time


def main() -> None:
    with open(sys.argv[1]) as handle:
        texts = json.load(handle)
    with open(sys.argv[2]) as handle:
        queries = json.load(handle)
    choice = sys.argv[3]
    from tulving import Memory, redact
    from tulving.domain import redaction

    shown = getattr(redaction, "shown_content", None) or (
        lambda e: redaction.redact_stored(e.content, e.key))
    redact("warm up: load the rule sets")  # tulving.redact installs them (the domain's alone has none)
    with Memory(":memory:", agent_id="bench", embedder="hashing", vectors="exact") as m:
        began = time.perf_counter()
        for start in range(0, len(texts), 500):
            m.store_many([{"content": t, "type": "OBSERVATION"}
                          for t in texts[start:start + 500]])
        store_us = (time.perf_counter() - began) / len(texts) * 1e6
        if choice == "read" and hasattr(redaction, "RULES_REVISION"):
            redaction.RULES_REVISION = "ignored"  # the masks found at write no longer fit
        entries, cursor = [], None
        while True:
            page = m.list_entries(1000, cursor)
            entries += page.entries
            cursor = page.next_cursor
            if cursor is None:
                break
        laps = []
        for _ in range(3):
            redaction._cached.cache_clear()
            began = time.perf_counter()
            for e in entries:
                shown(e)
            laps.append((time.perf_counter() - began) / len(entries) * 1e6)
        first_shown_us = min(laps)
        curates = []
        for q in queries:
            redaction._cached.cache_clear()  # every memory it shows is shown for the first time
            began = time.perf_counter()
            m.curate(q, token_budget=2000)
            curates.append((time.perf_counter() - began) * 1e3)
        warm = []
        for q in queries:  # again, the process's cache warm: what a busy server pays
            began = time.perf_counter()
            m.curate(q, token_budget=2000)
            warm.append((time.perf_counter() - began) * 1e3)
    print(json.dumps({"store_us": store_us, "first_shown_us": first_shown_us,
                      "curate_cold_ms": statistics.median(curates),
                      "curate_warm_ms": statistics.median(warm), "entries": len(entries)}))


if __name__ == "__main__":
    main()
