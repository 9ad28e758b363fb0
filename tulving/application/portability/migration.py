"""``Memory.import_from`` and ``Memory.export_to``: memory from and to other systems.

Why on the bundle importer's write path: an import from Mem0, Zep/Graphiti, Letta or
OpenTelemetry is an import like any other, so it is one transaction (a refused file writes
nothing), merges by id (a second run of the same file skips every entry), passes the write
policy (redaction), lands in this Memory's tenant (records of another user only with
``remap_identity``) and is audited, by the code that does all that for bundles. Each
format's reader (``formats/``) only translates records into entries and says what it
mapped and what it left out, and why: that is the report.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

import attrs

from tulving.application.plumbing.context import MemoryContext
from tulving.application.portability.exporter import pages, scrubbed, written_whole
from tulving.application.portability.formats.af_writer import blocks_of, write_af
from tulving.application.portability.formats.letta import read_letta
from tulving.application.portability.formats.mem0 import read_mem0
from tulving.application.portability.formats.names import READ_FORMATS, WRITE_FORMATS
from tulving.application.portability.formats.otel import read_otel, write_otel
from tulving.application.portability.formats.translation import (
    DEFAULT_MAX_BYTES,
    Draft,
    Placement,
    Translation,
    load_json,
)
from tulving.application.portability.formats.zep import read_zep
from tulving.application.portability.importer import ImportTarget, readable_file
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ForeignFormatError, ValidationError
from tulving.domain.migration_reports import MigrationExport, MigrationReport
from tulving.domain.query import EntryFilter

Reader = Callable[[object, Placement], Translation]
READERS: dict[str, Reader] = {"mem0": read_mem0, "zep": read_zep, "letta": read_letta,
                              "otel": read_otel}
assert tuple(READERS) == READ_FORMATS
#: The formats ``export_to`` writes.
WRITERS = WRITE_FORMATS
_BATCH = 1000


def read_source(source: str | os.PathLike[str] | bytes | IO[bytes], fmt: str,
                max_bytes: int) -> bytes:
    """The bytes of ``source`` (a path, bytes or a binary file object), at most
    ``max_bytes`` of them (ForeignFormatError past that: nothing is parsed)."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValidationError("max_bytes must be a positive integer")
    if isinstance(source, bytes):
        data = source[:max_bytes + 1]
    elif isinstance(source, str | os.PathLike):
        with open(readable_file(source, fmt), "rb") as handle:
            data = handle.read(max_bytes + 1)
    else:
        data = source.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ForeignFormatError(f"{fmt}: the file is over {max_bytes} bytes (max_bytes)")
    return data


def import_from(target: ImportTarget, fmt: str,
                source: str | os.PathLike[str] | bytes | IO[bytes], *, dry_run: bool = False,
                remap_identity: bool = False, on_conflict: str = "newest",
                max_bytes: int = DEFAULT_MAX_BYTES) -> MigrationReport:
    """Read ``source`` as ``fmt`` and merge what it holds into ``target``'s Memory."""
    reader = READERS.get(fmt) if isinstance(fmt, str) else None
    if reader is None:
        raise ValidationError(f"unknown format {fmt!r}; expected one of: "
                              f"{', '.join(READERS)}")
    if not isinstance(remap_identity, bool):
        raise ValidationError("remap_identity must be True or False")
    importer = target.importer(reembedding="drop", on_conflict=on_conflict, dry_run=dry_run,
                               remap_identity=remap_identity)
    data = read_source(source, fmt, max_bytes)
    ctx = target.ctx
    place = Placement(fmt, ctx.identity, ctx.clock.now(), remap_identity)
    translation = reader(load_json(data, fmt), place)
    described = {"format": fmt, "sha256": hashlib.sha256(data).hexdigest()}
    with ctx.serial:
        report = importer.run_entries(_settled(ctx, translation.drafts),
                                      len(translation.drafts), described)
    return MigrationReport(fmt, report.dry_run, tuple(report.added), tuple(report.updated),
                           tuple(report.skipped), tuple(report.conflicts),
                           translation.mapped, translation.dropped)


def _settled(ctx: MemoryContext, drafts: Sequence[Draft]) -> Iterator[MemoryEntry]:
    """The entries of ``drafts``; one without times of its own whose id this store holds
    with the same text takes that version's times (read inside the import's
    transaction), so a second import of an unchanged file is the same version."""
    for begin in range(0, len(drafts), _BATCH):
        chunk = drafts[begin:begin + _BATCH]
        untimed = [d.entry.id for d in chunk if not d.timed]
        held = {e.id: e for e in ctx.storage.get_many(untimed)} if untimed else {}
        for draft in chunk:
            entry, old = draft.entry, held.get(draft.entry.id)
            if old is not None and old.content_hash == entry.content_hash:
                entry = attrs.evolve(entry, created_at=old.created_at,
                                     updated_at=old.updated_at, valid_from=old.valid_from,
                                     last_accessed_at=old.last_accessed_at)
            yield entry


def export_to(ctx: MemoryContext, fmt: str, target: str | os.PathLike[str] | IO[bytes],
              flt: EntryFilter, *, redacted: bool) -> MigrationExport:
    """Write what ``flt`` selects as ``fmt``: ``otel`` holds every entry (archived
    versions too, when the filter keeps them), ``letta`` the active pinned ones."""
    if fmt not in WRITERS:
        raise ValidationError(f"unknown export format {fmt!r}; expected one of: "
                              f"{', '.join(WRITERS)}")
    entries = [e for page in pages(ctx, flt) for e in page]
    chosen = blocks_of(entries) if fmt == "letta" else entries
    shown = [scrubbed(e) if redacted else e for e in chosen]
    document: Any = (write_af(shown, ctx.identity.agent_id, ctx.clock.now()) if fmt == "letta"
                     else write_otel(shown))
    data = (json.dumps(document, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    left = len(entries) - len(chosen)
    why = ("an agent file holds memory blocks: only active pinned memories are blocks"
           if left else None)
    if isinstance(target, str | os.PathLike):
        path = written_whole(target, lambda handle: handle.write(data), "export")
        return MigrationExport(str(path), fmt, len(chosen), len(data), left, why)
    target.write(data)
    return MigrationExport(None, fmt, len(chosen), len(data), left, why)

