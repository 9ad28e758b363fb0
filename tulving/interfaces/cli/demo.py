"""``tulving demo``: the embedded default, end to end, in a few seconds and offline.

Loads the shipped sample memories of a fictional project into a fresh store (a temporary
folder, or ``--path``), then shows a search and a curated context under a token budget,
with timings, and the commands to try next on the same store. It never touches the
user's configured memory: the demo store path comes from ``--path`` or a temp folder,
never from ``TULVING_PATH`` or tulving.toml.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from importlib import resources
from typing import Any

from tulving.interfaces import render
from tulving.interfaces.cli.config import add_common, add_json, settings_from
from tulving.interfaces.cli.output import OK, Output
from tulving.interfaces.config import check_path
from tulving.interfaces.jsonl import parse_lines

SEARCH = "how do we deploy a new release?"
CURATE = "resuming the auth refactor"
BUDGET = 300


def register(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="load sample memories and show search and curation",
        description="Load a sample memory set (a fictional project) into a "
        "temporary store and show search and curation with "
        "timings. Offline; no API key.",
    )
    p.add_argument("--budget", type=int, default=BUDGET, help=f"curation budget (default {BUDGET})")
    add_json(p)
    add_common(p)
    p.set_defaults(func=run)


def sample_items() -> list[dict[str, Any]]:
    text = resources.files("tulving.data").joinpath("demo_memories.jsonl").read_text("utf-8")
    return list(parse_lines(text.splitlines(), "demo_memories.jsonl"))


def run(args: argparse.Namespace, out: Output) -> int:
    path = getattr(args, "path", None)
    if path:
        check_path(path, "--path")
    else:
        path = os.path.join(tempfile.mkdtemp(prefix="tulving-demo-"), "memory.db")
    settings = settings_from(args, path=path, agent_id=getattr(args, "agent_id", None) or "demo")
    timings: dict[str, float] = {}
    began = time.perf_counter()
    memory = settings.open_memory()
    try:
        memory.startup()
        timings["open_s"] = time.perf_counter() - began
        t = time.perf_counter()
        loaded = 0
        if memory.stats()["active"] == 0:
            loaded = len(memory.store_many(sample_items()))
        timings["load_s"] = time.perf_counter() - t
        t = time.perf_counter()
        results = memory.search(SEARCH, 3)
        timings["search_ms"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        curated = memory.curate(CURATE, token_budget=args.budget)
        timings["curate_ms"] = (time.perf_counter() - t) * 1000
        stats = memory.stats()
    finally:
        memory.close()
    timings["total_s"] = time.perf_counter() - began
    data = {
        "path": path,
        "loaded": loaded,
        "active": stats["active"],
        "adapters": {
            "storage": stats["storage"].get("engine"),
            "embedder": stats["embedder"],
            "vectors": (stats["vectors"] or {}).get("adapter"),
            "tokenizer": stats["tokenizer"],
        },
        "search": {"query": SEARCH, "results": render.search_dicts(results)},
        "curate": render.curated_dict(curated),
        "timings": {k: round(v, 3) for k, v in timings.items()},
    }
    out.result(data, _text(data, results, curated, args.budget))
    return OK


def _text(data: dict[str, Any], results: Any, curated: Any, budget: int) -> str:
    t = data["timings"]
    a = data["adapters"]
    q = _quote(data["path"])
    lines = [
        f"Tulving demo: {data['active']} memories of a fictional project (Harbor) in {data['path']}",
        f"  stack: {a['storage']} + {a['vectors']} index + {a['embedder']} embedder, "
        f"{a['tokenizer']} tokens; no server, no API key",
        f"  opened in {t['open_s']:.2f} s, loaded {data['loaded']} memories in {t['load_s']:.2f} s",
        "",
        f"$ tulving search {SEARCH!r}   ({t['search_ms']:.1f} ms)",
        render.search_text(SEARCH, results),
        "",
        f"$ tulving curate {CURATE!r} --budget {budget}   ({t['curate_ms']:.1f} ms, "
        f"{curated.token_count}/{budget} tokens, {len(curated.entries)} memories, "
        f"{curated.omitted} left out)",
        "-" * 72,
        curated.content,
        "-" * 72,
        "",
        "Try next (same store):",
        f"  tulving --path {q} curate --orient --budget 500",
        f"  tulving --path {q} history deploy/strategy",
        f"  tulving --path {q} search 'timezone bug' --type OBSERVATION",
        f"  tulving --path {q} store 'We chose Alembic for migrations' --type DECISION --key db/tool",
        f"  tulving --path {q} mcp     # serve it to Claude Code over MCP",
        f"  tulving --path {q} serve token create me --bind-agent demo",
        f"  tulving --path {q} serve   # then open http://127.0.0.1:8780/ui/ (the inspector)",
        f"Finished in {t['total_s']:.2f} s.",
    ]
    return "\n".join(lines)


def _quote(path: str) -> str:
    import shlex

    return shlex.quote(path)
