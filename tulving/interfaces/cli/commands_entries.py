"""Commands on single memories: store, get, history, forget, list (keys, or every entry
page by page with ``--all``)."""

from __future__ import annotations

import argparse
import hashlib
import shlex
import sys
from typing import Any

from tulving.domain.errors import SecurityError, ValidationError
from tulving.interfaces import render
from tulving.interfaces.cli.config import add_common, add_json, hint
from tulving.interfaces.cli.output import OK, Output, ProgressLine
from tulving.interfaces.jsonl import numbered_lines

TYPES = ("FACT", "DECISION", "OBSERVATION", "PLAN", "SUMMARY", "PREFERENCE", "PROCEDURE", "EPISODE")
IMPORT_BATCH = 256


def register(sub: Any, run_with_memory: Any) -> None:
    p = sub.add_parser(
        "store",
        help="store a memory (or import JSON Lines with --jsonl)",
        description="Store one memory, or many from a JSON Lines file.",
    )
    p.add_argument("content", nargs="?", help="the memory text; '-' reads stdin")
    p.add_argument(
        "--type",
        "-t",
        choices=TYPES,
        default="FACT",
        type=str.upper,
        help="memory type (default FACT)",
    )
    p.add_argument("--key", "-k", help="stable key; storing again supersedes the old version")
    p.add_argument("--tag", action="append", default=None, dest="tags",
                   help="tag (repeatable); storing a key again keeps its tags unless given")
    p.add_argument("--no-tags", action="store_true",
                   help="clear the tags a key's earlier version had")
    p.add_argument("--importance", type=float,
                   help="0..1 (default 0.5, or the earlier version's for a key)")
    pin = p.add_mutually_exclusive_group()
    pin.add_argument("--pinned", action="store_true", default=None,
                     help="never decays, never evicted")
    pin.add_argument("--unpinned", dest="pinned", action="store_false", default=None,
                     help="unpin (storing a key again keeps its pinned flag otherwise)")
    p.add_argument(
        "--jsonl",
        metavar="FILE",
        help="import memories from JSON Lines ('-' for stdin), one object a line: every "
        "line is checked first (nothing is written if one is bad), then batches are "
        "written; a rerun after a crash resumes where the last batch ended",
    )
    p.add_argument("--batch-size", type=int, default=IMPORT_BATCH,
                   help=f"--jsonl: lines per transaction (default {IMPORT_BATCH})")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _store))

    p = sub.add_parser("get", help="show one memory by id or key")
    p.add_argument("id_or_key")
    p.add_argument("--raw", action="store_true", help="do not redact secrets in the output")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _get))

    p = sub.add_parser("history", help="every version of a key, newest first")
    p.add_argument("key")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _history))

    p = sub.add_parser("forget", help="archive a memory (or delete it with --hard)")
    p.add_argument("id_or_key")
    p.add_argument("--hard", action="store_true", help="delete for good (not recoverable)")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _forget))

    p = sub.add_parser("list", help="list memory keys (optionally under a prefix); "
                       "--all lists every memory, keyed or not, a page at a time")
    p.add_argument("prefix", nargs="?", default="")
    p.add_argument("--all", action="store_true", help="every memory, not only keys")
    p.add_argument("--limit", type=int, default=50, help="--all: page size (default 50)")
    p.add_argument("--cursor", help="--all: the next_cursor a previous page printed")
    p.add_argument("--type", dest="types", action="append", choices=TYPES,
                   help="--all: only this type (repeatable)")
    p.add_argument("--archived", action="store_true", help="--all: include archived ones")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _list))


def _store(memory: Any, args: argparse.Namespace, out: Output) -> int:
    if args.jsonl:
        if args.content:
            raise ValidationError("give either content or --jsonl, not both")
        return _import(memory, args, out)
    content = args.content
    if content is None:
        raise ValidationError("store needs the memory text (or --jsonl FILE)")
    if content == "-":
        content = sys.stdin.read()
    if args.no_tags and args.tags:
        raise ValidationError("give --tag or --no-tags, not both")
    tags = [] if args.no_tags else args.tags
    done = memory.store(content, type=args.type, key=args.key, tags=tags,
                        importance=args.importance, pinned=args.pinned, report=True)
    entry = done.entry
    note = f", superseding {entry.supersedes}" if entry.supersedes else ""
    verb = "reinforced" if done.outcome == "reinforced" else "stored"
    out.result(
        {"stored": render.entry_dict(entry), **done.as_dict()},
        f"{verb} {entry.type.value} {entry.id}" + (f" key={entry.key}" if entry.key else "") + note,
    )
    return OK


def _import(memory: Any, args: argparse.Namespace, out: Output) -> int:
    from tulving.application.portability.lines_import import LinesRefused

    if "\x00" in args.jsonl:
        raise SecurityError("--jsonl path contains a NUL character")
    if args.jsonl == "-":
        raw = sys.stdin.buffer.read()
    else:
        with open(args.jsonl, "rb") as handle:
            raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{args.jsonl} is not UTF-8 text ({exc})") from exc
    items, bad = numbered_lines(text.splitlines(), args.jsonl)
    if bad:  # not JSON objects: refused before the store is asked about the rest
        raise LinesRefused(bad, args.jsonl)
    progress = ProgressLine()
    try:
        report = memory.store_lines(items, source=hashlib.sha256(raw).hexdigest(),
                                    batch_size=args.batch_size, progress=progress)
    except LinesRefused as exc:
        raise LinesRefused(exc.bad, args.jsonl) from exc
    finally:
        progress.finish()
    done = report.already_written
    note = ""
    if report.resumed:
        note = f" (resumed after line {done} of {report.lines} of an earlier run)"
    elif done and not report.written:
        note = " (this file was imported whole before: nothing written again)"
    out.result({"imported": report.written, "source": args.jsonl, **report.as_dict()},
               f"imported {report.written} memories from {args.jsonl}{note}")
    return OK


def _get(memory: Any, args: argparse.Namespace, out: Output) -> int:
    entry = memory.get(args.id_or_key)
    if args.raw:
        data = render.entry_dict(entry, raw=True)
        if out.as_json:
            import json

            print(json.dumps(data, indent=2, ensure_ascii=False), file=out.out)
        else:
            print(
                f"[{entry.type.value}] {entry.key or ''} {entry.id}\n{entry.content}", file=out.out
            )
        return OK
    out.result(render.entry_dict(entry), render.entry_line(entry))
    return OK


def _history(memory: Any, args: argparse.Namespace, out: Output) -> int:
    versions = memory.history(args.key)
    out.result(
        {"key": args.key, "versions": [render.entry_dict(e) for e in versions]},
        "\n".join(render.entry_line(e) for e in versions),
    )
    return OK


def _forget(memory: Any, args: argparse.Namespace, out: Output) -> int:
    entry = memory.forget(args.id_or_key, hard=args.hard)
    verb = "deleted" if args.hard else "archived"
    out.result({verb: render.entry_dict(entry)}, f"{verb} {entry.id}")
    return OK


def _list(memory: Any, args: argparse.Namespace, out: Output) -> int:
    if args.all:
        if args.prefix:
            raise ValidationError("list --all takes no prefix (use --type to narrow it)")
        page = memory.list_entries(args.limit, args.cursor, types=args.types,
                                   include_archived=args.archived)
        lines = [render.entry_line(e) for e in page.entries] or ["(no memories)"]
        if page.next_cursor:
            more = ["list", "--all", "--limit", str(args.limit), "--cursor",
                    shlex.quote(page.next_cursor)]
            more += [f"--type {t}" for t in args.types or ()]
            more += ["--archived"] if args.archived else []
            lines.append(f"(more: {hint(args, *more)})")
        out.result({"entries": [render.entry_dict(e) for e in page.entries],
                    "next_cursor": page.next_cursor}, "\n".join(lines))
        return OK
    if args.cursor or args.types or args.archived:
        raise ValidationError("--cursor, --type and --archived apply to list --all only")
    keys = memory.list_keys(args.prefix)
    out.result({"prefix": args.prefix, "keys": keys}, "\n".join(keys) if keys else "(no keys)")
    return OK
