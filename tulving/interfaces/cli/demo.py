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
import shlex
import tempfile
import time
from importlib import resources
from typing import Any

from tulving.interfaces import render
from tulving.interfaces.cli.config import add_common, add_json, hint, settings_from
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
    agent_id = getattr(args, "agent_id", None) or "demo"
    settings = settings_from(args, path=path, agent_id=agent_id)
    timings: dict[str, float] = {}
    began = time.perf_counter()
    memory = settings.open_memory()
    try:
        memory.startup()
        timings["open_s"] = time.perf_counter() - began
        t = time.perf_counter()
        loaded = superseded = 0
        if memory.stats().active == 0:
            # as an import (tulving store --jsonl does the same): outside any session, so
            # that the end of the next command's session does not archive the sample's
            # observations and episodes as its working notes
            report = memory.store_lines(list(enumerate(sample_items(), 1)),
                                        source="tulving demo sample")
            loaded, superseded = report.written, report.superseded
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
        "agent_id": agent_id,
        "loaded": loaded,
        "superseded": superseded,
        "active": stats.active,
        "adapters": {
            "storage": stats.storage.get("engine"),
            "embedder": stats.embedder,
            "vectors": stats.vectors.adapter if stats.vectors else None,
            "tokenizer": stats.tokenizer,
        },
        "search": {"query": SEARCH, "results": render.search_dicts(results)},
        "curate": render.curated_dict(curated),
        "timings": {k: round(v, 3) for k, v in timings.items()},
    }
    data["try_next"] = try_next(args, path, agent_id)
    out.result(data, _text(data, results, curated, args.budget))
    return OK


def try_next(args: argparse.Namespace, path: str, agent_id: str) -> list[str]:
    """Commands on the demo's own store, as the person can paste them: with its path, its
    agent (the memories are the agent's own: another agent id sees none of them) and the
    adapters this run was given (another embedder would open the store differently)."""
    def cmd(*words: str) -> str:
        return hint(args, *words, path=path, agent_id=agent_id)

    return [
        cmd("curate", "--orient", "--budget", "500"),
        cmd("history", "deploy/strategy"),
        cmd("search", "'timezone bug'", "--type", "OBSERVATION"),
        cmd("store", "'We chose Alembic for migrations'", "--type", "DECISION", "--key", "db/tool"),
        cmd("mcp") + "     # serve it to Claude Code over MCP",
        cmd("serve", "token", "create", "me", "--bind-agent", shlex.quote(agent_id)),
        cmd("serve") + "   # then open http://127.0.0.1:8780/ui/ (the inspector)",
    ]


def _text(data: dict[str, Any], results: Any, curated: Any, budget: int) -> str:
    t = data["timings"]
    a = data["adapters"]
    loaded = f"loaded {data['loaded']} memories in {t['load_s']:.2f} s"
    if data["superseded"]:
        loaded += (f" ({data['superseded']} superseded an earlier version under the same "
                   f"key, which stays in its history)")
    lines = [
        f"Tulving demo: {data['active']} active memories of a fictional project (Harbor), "
        f"agent {data['agent_id']!r}, in {data['path']}",
        f"  stack: {a['storage']} + {a['vectors']} index + {a['embedder']} embedder, "
        f"{a['tokenizer']} tokens; no server, no API key",
        f"  opened in {t['open_s']:.2f} s, {loaded}",
        "",
        f"$ tulving search {SEARCH!r}   ({t['search_ms']:.1f} ms)",
        render.search_text(SEARCH, results),
        "",
        f"$ tulving curate {CURATE!r} --budget {budget}   ({t['curate_ms']:.1f} ms, "
        f"{curated.token_count}/{budget} tokens, {len(curated.entries)} memories, "
        f"{render.omitted_count(curated)} left out)",
        "-" * 72,
        curated.content,
        "-" * 72,
        "",
        "Try next (same store):",
        *(f"  {command}" for command in data["try_next"]),
        f"Finished in {t['total_s']:.2f} s.",
    ]
    return "\n".join(lines)

