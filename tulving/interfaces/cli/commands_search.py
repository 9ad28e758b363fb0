"""Reading by relevance: search (ranked matches) and curate (a budgeted context block)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from tulving.domain.errors import ValidationError
from tulving.domain.input_limits import MIN_SCORE, TOKEN_BUDGET, TOP_K
from tulving.interfaces import render
from tulving.interfaces.cli.commands_entries import TYPES
from tulving.interfaces.cli.config import add_common, add_json
from tulving.interfaces.cli.output import OK, Output
from tulving.interfaces.jsonl import parse_time


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--type",
        "-t",
        action="append",
        dest="types",
        choices=TYPES,
        type=str.upper,
        help="only this type (repeatable)",
    )
    p.add_argument("--tag", action="append", dest="tags", help="only with this tag (repeatable)")
    p.add_argument("--since", help="only memories valid from this ISO date/time")
    p.add_argument("--until", help="only memories valid up to this ISO date/time")


def register(sub: Any, run_with_memory: Any) -> None:
    p = sub.add_parser("search", help="ranked hybrid search (meaning + words)")
    p.add_argument("query")
    p.add_argument("--top-k", "-n", type=int, default=10,
                   help=f"how many results (default 10; {TOP_K.bounds_text()})")
    p.add_argument("--mode", choices=("hybrid", "semantic", "lexical", "key"), default="hybrid")
    p.add_argument("--min-score", type=float, default=None,
                   help=f"only results scoring at least this ({MIN_SCORE.bounds_text()}; "
                        "in hybrid mode a calibrated probability that the memory answers "
                        "the query: 0.04 keeps ~80%% of answers and drops ~60%% of the hits of questions "
                        "nothing stored answers)")
    _filters(p)
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _search))

    p = sub.add_parser("curate", help="the memories that matter, packed into a token budget")
    p.add_argument("query", nargs="?", help="the task at hand (omit with --orient)")
    p.add_argument("--budget", "-b", type=int, default=2000,
                   help=f"token budget (default 2000; {TOKEN_BUDGET.bounds_text()})")
    p.add_argument(
        "--orient",
        action="store_true",
        help="cold-start briefing: decisions, plans, preferences, recent work",
    )
    _filters(p)
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _curate))


def _times(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "since": parse_time("--since", args.since) if args.since else None,
        "until": parse_time("--until", args.until) if args.until else None,
    }


def _search(memory: Any, args: argparse.Namespace, out: Output) -> int:
    began = time.perf_counter()
    results = memory.search(
        args.query, args.top_k, mode=args.mode, types=args.types, tags=args.tags,
        min_score=args.min_score, **_times(args)
    )
    ms = (time.perf_counter() - began) * 1000
    out.result(
        {"query": args.query, "elapsed_ms": round(ms, 2), "results": render.search_dicts(results)},
        render.search_text(args.query, results),
    )
    return OK


def _curate(memory: Any, args: argparse.Namespace, out: Output) -> int:
    mode = "orient" if args.orient else "query"
    if mode == "query" and not args.query:
        raise ValidationError("curate needs a query, or --orient for a cold-start briefing")
    curated = memory.curate(
        args.query,
        token_budget=args.budget,
        mode=mode,
        types=args.types,
        tags=args.tags,
        **_times(args),
    )
    data = render.curated_dict(curated)
    out.result(data, curated.content or "(no memories to show)")
    if not out.as_json:
        out.info(
            f"-- {curated.token_count}/{args.budget} tokens, "
            f"{len(curated.entries)} memories, {render.omitted_count(curated)} left out"
        )
    return OK
