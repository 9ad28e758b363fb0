"""Moving memory between stores, machines and models: export, import, clear.

``export`` writes a bundle (see ``docs/operations/portability.md``) of what this identity
sees; ``import`` merges one in, all or nothing, with a progress bar; ``clear`` forgets a
whole scope and asks first (``--yes`` for scripts).
"""

from __future__ import annotations

import argparse
from typing import Any

from tulving.application.portability.formats.names import READ_FORMATS, WRITE_FORMATS
from tulving.domain.errors import ValidationError
from tulving.interfaces.cli.commands_entries import TYPES
from tulving.interfaces.cli.config import add_common, add_json
from tulving.interfaces.cli.output import OK, USAGE, Output, confirmed
from tulving.interfaces.jsonl import parse_time

FOREIGN = READ_FORMATS
EXPORTS = WRITE_FORMATS
SCOPES = ("agent", "session", "personal", "shared", "workspace", "model_specific")


def register(sub: Any, run_with_memory: Any) -> None:
    p = sub.add_parser("export", help="write this memory (or a filtered part) to a bundle file")
    p.add_argument("file", help="the bundle to write (replaced whole, never left half-written)")
    p.add_argument("--to", dest="target_format", choices=("bundle", *EXPORTS), default="bundle",
                   help="bundle (default), letta (an agent file: the pinned memories as memory "
                   "blocks) or otel (OpenTelemetry memory records, every field kept)")
    p.add_argument("-t", "--type", dest="types", action="append", choices=TYPES)
    p.add_argument("--tag", dest="tags", action="append")
    p.add_argument("--scope", choices=SCOPES)
    p.add_argument("--since", help="only memories valid from this ISO date on")
    p.add_argument("--until", help="only memories valid up to this ISO date")
    p.add_argument("--active-only", action="store_true", help="leave archived versions out")
    p.add_argument("--no-embeddings", action="store_true", help="leave vectors out")
    p.add_argument("--redact", action="store_true",
                   help="mask secrets and personal data (and drop the vectors of what changed)")
    p.add_argument("--bundle-key", dest="bundle_key", default=None, metavar="env:VAR|file:PATH",
                   help="encrypt the whole bundle (manifest included) with this key")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _export, progress=True))

    p = sub.add_parser("import", help="merge a bundle, or another memory system's export, "
                       "into this memory (all or nothing)")
    p.add_argument("file")
    p.add_argument("--from", dest="source_format", choices=("bundle", *FOREIGN), default="bundle",
                   help="the file's format: a Tulving bundle (default), a Mem0 export (get_all "
                   "JSON), a Zep/Graphiti graph, a Letta agent file (.af) or OpenTelemetry "
                   "memory records")
    p.add_argument("--reembedding", choices=("auto", "keep", "drop"), default="auto",
                   help="auto (default): keep the bundle's vectors when the model matches")
    p.add_argument("--on-conflict", choices=("newest", "keep_existing", "overwrite"),
                   default="newest")
    p.add_argument("--remap-identity", action="store_true",
                   help="move entries of another user/workspace into this one")
    p.add_argument("--dry-run", action="store_true", help="report what would change; write nothing")
    p.add_argument("--bundle-key", dest="bundle_key", default=None, metavar="env:VAR|file:PATH",
                   help="the key of an encrypted bundle")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _import, progress=True))

    p = sub.add_parser("clear", help="forget every memory this agent wrote in one scope")
    p.add_argument("--scope", choices=SCOPES, required=True)
    p.add_argument("--hard", action="store_true", help="delete for good instead of archiving")
    p.add_argument("--yes", action="store_true", help="do not ask (for scripts)")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _clear))


def _export(memory: Any, args: argparse.Namespace, out: Output) -> int:
    if args.target_format != "bundle":
        return _export_to(memory, args, out)
    report = memory.export(
        args.file, tags=args.tags, types=args.types, scope=args.scope,
        since=parse_time("--since", args.since) if args.since else None,
        until=parse_time("--until", args.until) if args.until else None,
        include_archived=not args.active_only, include_embeddings=not args.no_embeddings,
        redact=args.redact, encryption=args.bundle_key)
    out.result({"path": report.path, "entries": report.entries, "vectors": report.vectors,
                "bytes": report.bytes, "manifest": report.manifest},
               f"exported {report.entries} memories ({report.vectors} vectors, "
               f"{report.bytes} bytes) to {report.path}")
    return OK


def _export_to(memory: Any, args: argparse.Namespace, out: Output) -> int:
    refused = [flag for flag, given in (("--scope", args.scope), ("--no-embeddings",
               args.no_embeddings), ("--bundle-key", args.bundle_key)) if given]
    if refused:
        raise ValidationError(f"{', '.join(refused)}: only for --to bundle")
    report = memory.export_to(
        args.file, format=args.target_format, tags=args.tags, types=args.types,
        since=parse_time("--since", args.since) if args.since else None,
        until=parse_time("--until", args.until) if args.until else None,
        include_archived=not args.active_only, redact=args.redact)
    note = f"; {report.left_out} left out: {report.why_left_out}" if report.left_out else ""
    out.result(report.as_dict(), f"exported {report.records} memories as {report.format} "
               f"({report.bytes} bytes) to {report.path}{note}")
    return OK


def _import_from(memory: Any, args: argparse.Namespace, out: Output) -> int:
    refused = [flag for flag, given in (("--reembedding", args.reembedding != "auto"),
               ("--bundle-key", args.bundle_key)) if given]
    if refused:
        raise ValidationError(f"{', '.join(refused)}: only for bundles (not --from "
                              f"{args.source_format})")
    report = memory.import_from(args.file, format=args.source_format, dry_run=args.dry_run,
                                remap_identity=args.remap_identity,
                                on_conflict=args.on_conflict)
    out.result(report.as_dict(), report.summary())
    return OK


def _import(memory: Any, args: argparse.Namespace, out: Output) -> int:
    if args.source_format != "bundle":
        return _import_from(memory, args, out)
    report = memory.import_bundle(args.file, reembedding=args.reembedding,
                                  on_conflict=args.on_conflict, dry_run=args.dry_run,
                                  remap_identity=args.remap_identity,
                                  encryption=args.bundle_key)
    counts = report.counts()
    verb = "would import" if report.dry_run else "imported"
    out.result({**counts, "dry_run": report.dry_run, "added_ids": report.added,
                "updated_ids": report.updated, "conflict_ids": report.conflicts},
               f"{verb}: {counts['added']} added, {counts['updated']} updated, "
               f"{counts['skipped']} unchanged, {counts['conflicts']} conflicts, "
               f"{counts['reembedded']} re-embedded")
    return OK


def _clear(memory: Any, args: argparse.Namespace, out: Output) -> int:
    if not confirmed(args.yes, "clear forgets a whole scope",
                     f"Forget every {args.scope} memory of this agent?", "yes"):
        out.info("nothing cleared")
        return USAGE
    count = memory.clear(scope=args.scope, confirm=True, hard=args.hard)
    verb = "deleted" if args.hard else "archived"
    out.result({"scope": args.scope, verb: count}, f"{verb} {count} {args.scope} memories")
    return OK
