"""Looking after a store: stats, evict, maintenance (inspect/purge/vacuum/reindex), doctor."""

from __future__ import annotations

import argparse
import importlib
import os
import time
from typing import TYPE_CHECKING, Any

from tulving.distribution import install_command
from tulving.domain.errors import TulvingError, ValidationError
from tulving.interfaces import render
from tulving.interfaces.cli import extras
from tulving.interfaces.cli.config import (
    add_common,
    add_json,
    hint,
    open_memory,
    settings_from,
)
from tulving.interfaces.cli.output import INTEGRITY, OK, Output, ProgressLine
from tulving.interfaces.jsonl import parse_time

if TYPE_CHECKING:
    from tulving.application.memory import Memory


def register(sub: Any, run_with_memory: Any) -> None:
    p = sub.add_parser("stats", help="counts by type and tag, storage size, adapters")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _stats))

    p = sub.add_parser(
        "evict",
        help="archive memories whose decayed importance fell below a threshold",
        description="Archive (never delete) memories whose importance, decayed since their "
        "last access, is below --threshold. DECISION and pinned memories are exempt.",
    )
    p.add_argument("--threshold", type=float, default=0.05, help="0..1 (default 0.05)")
    p.add_argument("--dry-run", action="store_true", help="show what would be archived")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _evict))

    p = sub.add_parser("maintenance",
                       help="inspect, purge archived, vacuum, reindex, reembed")
    p.add_argument(
        "action",
        choices=("inspect", "purge", "vacuum", "reindex", "reembed"),
        help="inspect: health report; purge: delete archived memories for good; "
        "vacuum: reclaim disk space; reindex: rebuild the vector index; reembed: "
        "embed every memory again by the current rule (after an upgrade says so)",
    )
    p.add_argument("--dry-run", action="store_true", help="purge: only count what would go")
    p.add_argument("--archived-before", help="purge: only memories archived before this ISO date")
    p.add_argument("--force", action="store_true",
                   help="purge: also delete what history chains, corrections and summaries' "
                   "sources need (kept by default)")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _maintenance, progress=True))

    p = sub.add_parser("doctor", help="check adapters, model, tokenizer, index and store")
    add_json(p)
    add_common(p)
    p.set_defaults(func=_doctor)


def _stats(memory: Memory, args: argparse.Namespace, out: Output) -> int:
    stats = memory.stats()
    out.result(stats, render.stats_text(stats))
    return OK


def _evict(memory: Any, args: argparse.Namespace, out: Output) -> int:
    report = memory.evict(args.threshold, dry_run=args.dry_run)
    verb = "would archive" if report.dry_run else "archived"
    out.result(
        {
            "threshold": report.threshold,
            "examined": report.examined,
            "evicted": list(report.evicted),
            "dry_run": report.dry_run,
        },
        f"{verb} {len(report.evicted)} of {report.examined} memories "
        f"(decayed importance below {report.threshold})"
        + "".join(f"\n  {entry_id}" for entry_id in report.evicted),
    )
    return OK


def _maintenance(memory: Memory, args: argparse.Namespace, out: Output) -> int:
    from tulving.application.upkeep.maintenance import InspectReport

    before = parse_time("--archived-before", args.archived_before) if args.archived_before else None
    if args.action != "purge" and (args.dry_run or before or args.force):
        raise ValidationError("--dry-run, --archived-before and --force apply to purge only")
    began = time.perf_counter()
    report = memory.maintenance(args.action, dry_run=args.dry_run, archived_before=before,
                                force=args.force)
    shown = {**report.as_dict(), "elapsed_s": round(time.perf_counter() - began, 3)}
    out.result(shown, _maintenance_text(shown))
    if isinstance(report, InspectReport) and not report.integrity_ok:
        return INTEGRITY
    return OK


def _maintenance_text(report: dict[str, object]) -> str:
    lines = []
    for key, value in report.items():
        if isinstance(value, dict):
            lines.append(f"{key}: " + ", ".join(f"{k}={v}" for k, v in value.items()))
        else:
            lines.append(f"{key}: {value}")
    return "\n".join(lines)


def _doctor(args: argparse.Namespace, out: Output) -> int:
    from tulving.plugins.registry import get_manager

    checks: dict[str, Any] = {}
    problems = 0
    try:
        settings = settings_from(args)
        checks["config"] = {
            "path": settings.path,
            "agent_id": settings.agent_id,
            "sources": dict(settings.sources),
        }
    except TulvingError as exc:
        return out.error(exc)
    _pm, registry = get_manager()
    adapters = []
    for spec in registry.specs():
        available = _adapter_available(spec)
        adapters.append(
            {
                "kind": spec.kind,
                "name": spec.name,
                "plugin": spec.plugin,
                "extra": spec.extra,
                "available": available,
            }
        )
    checks["adapters"] = adapters
    checks["commands"] = [
        {"command": command, "extra": extra, "available": not extras.missing(modules)}
        for command, (extra, modules) in extras.COMMANDS.items()
    ]
    memory = None
    absent = _absent_store(settings)
    try:
        began = time.perf_counter()
        if absent:     # the checks need no store, and a check must not create one
            memory = settings.open_memory(storage="memory", vectors="exact",
                                          progress=ProgressLine())
        else:
            memory = open_memory(settings, progress=ProgressLine())
        memory.startup()
        checks["startup_s"] = round(time.perf_counter() - began, 3)
        ready = memory.warm_up()
        if ready.embedder is not None:
            checks["embedder"] = {**ready.embedder.as_dict(), "ok": True}
        else:
            checks["embedder"] = {"ok": False, "note": "none configured: lexical search only"}
        if ready.tokenizer is not None:
            checks["tokenizer"] = {"name": ready.tokenizer, "ok": ready.tokenizer_ok}
        if absent:
            checks["store"] = {"engine": "sqlite", "exists": False, "path": settings.path}
            checks["integrity_ok"] = True
            checks["index"] = None
        else:
            report = memory.maintenance("inspect")
            checks["store"] = dict(report.storage)
            checks["integrity_ok"] = report.integrity_ok
            checks["index"] = report.index.as_dict() if report.index else None
            if not report.integrity_ok or (report.index and not report.index.healthy):
                problems += 1
    except TulvingError as exc:
        checks["error"] = f"{type(exc).__name__}: {exc}"
        problems += 1
    finally:
        if memory is not None:
            memory.close()
    checks["ok"] = problems == 0
    checks["reindex_hint"] = hint(args, "maintenance", "reindex")
    out.result(checks, _doctor_text(checks))
    return OK if problems == 0 else INTEGRITY


def _absent_store(settings: Any) -> bool:
    """A SQLite store that is not there yet (the default location before a first write):
    ``doctor`` reports it and creates nothing, neither the file nor its folder."""
    path = settings.path
    sqlite = (settings.storage in (None, "sqlite") and "://" not in path
              and path != ":memory:")
    return sqlite and not os.path.exists(os.path.expanduser(path))


def _adapter_available(spec: Any) -> bool:
    """Whether the adapter would load: the packages it declares are all installed (looked
    up, not imported: the sentence-transformers one would import torch). An adapter that
    declares none (a third party's) is imported, which is the only way to know."""
    if spec.requires:
        return not extras.missing(spec.requires)
    module = spec.target.partition(":")[0]
    try:
        importlib.import_module(module)
    except Exception:  # any failure to import means "not available"
        return False
    return True


def _doctor_text(checks: dict[str, Any]) -> str:
    lines = [f"store: {checks['config']['path']} (agent {checks['config']['agent_id']})"]
    by_kind: dict[str, list[str]] = {}
    for a in checks["adapters"]:
        mark = "" if a["available"] else (
            f" (missing: {install_command(a['extra'])})" if a["extra"] else " (cannot import)")
        by_kind.setdefault(a["kind"], []).append(a["name"] + mark)
    for kind, names in sorted(by_kind.items()):
        lines.append(f"  {kind:<10} {', '.join(names)}")
    commands = [c["command"] + ("" if c["available"] else
                                f" (missing: {install_command(c['extra'])})")
                for c in checks.get("commands", ())]
    if commands:
        lines.append(f"  {'commands':<10} {', '.join(commands)}")
    if "error" in checks:
        lines.append(f"FAILED: {checks['error']}")
    else:
        emb = checks.get("embedder", {})
        lines.append(
            f"embedder: {emb.get('model_id', emb.get('note'))}"
            + (f" ({emb['embed_ms']} ms/embed)" if "embed_ms" in emb else "")
        )
        tok = checks.get("tokenizer") or {}
        lines.append(f"tokenizer: {tok.get('name')} {'ok' if tok.get('ok') else 'FAILED'}")
        store = checks.get("store") or {}
        size = store.get("bytes")
        if store.get("exists") is False:
            lines.append(f"storage: {store.get('engine')}, not created yet (the first "
                         "write creates it)")
        else:
            lines.append(
                f"storage: {store.get('engine')} "
                + (render.human_bytes(size) if isinstance(size, int) else "")
                + f", integrity {'ok' if checks.get('integrity_ok') else 'FAILED'}"
            )
        index = checks.get("index")
        if index:
            lines.append(
                f"index: {index['adapter']} {index['count']} vectors, "
                + (
                    "healthy"
                    if index["healthy"]
                    else f"STALE ({index['missing_from_index']} missing, "
                    f"{index['stale_in_index']} extra): run "
                    f"`{checks['reindex_hint']}`"
                )
            )
        lines.append(f"startup: {checks.get('startup_s')} s")
    lines.append("all good" if checks["ok"] else "problems found")
    if os.environ.get("TULVING_PLUGINS"):
        lines.append(f"(plugins limited by TULVING_PLUGINS={os.environ['TULVING_PLUGINS']})")
    return "\n".join(lines)
