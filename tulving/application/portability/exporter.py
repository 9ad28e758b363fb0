"""``Memory.export``: what this identity sees, streamed into a bundle a page at a time.

Entries are read in id order with a keyset cursor (``EntryFilter.after_id``), ``PAGE`` at a
time with their vectors, so an export of a million entries holds one page in memory. The
target is written beside itself and renamed into place only when whole: a crash or a
full disk never leaves a half bundle under the name the caller asked for.
With ``redact``, what leaves is what every other emission shows (secret shapes masked,
values under credential-named keys masked whole, personal data masked) and an entry whose
text changed loses its vector (a vector of the raw text would carry what was masked).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import attrs

from tulving.application.plumbing.context import MemoryContext
from tulving.application.portability.bundle_crypto import EncryptingWriter
from tulving.application.portability.bundle_format import BundleWriter
from tulving.application.portability.entry_codec import entry_to_record
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import SecurityError, StorageError, ValidationError
from tulving.domain.pii import redact_pii
from tulving.domain.query import EntryFilter
from tulving.domain.redaction import (
    map_strings,
    redact,
    shown_content,
    shown_key,
    shown_tags,
    shown_value,
)
from tulving.domain.types import Scope

PAGE = 1000
Progress = Callable[[str, int, int], None]


@attrs.frozen
class ExportReport:
    """What ``export()`` wrote: the file (None for a file object), how many entries and
    vectors, its size in bytes when known, and the bundle's manifest."""

    path: str | None
    entries: int
    vectors: int
    bytes: int | None
    manifest: dict[str, Any]


def _clean(text: str) -> str:
    return redact_pii(redact(text))[0]


def scrubbed(entry: MemoryEntry) -> MemoryEntry:
    """``entry`` as a redacted export shows it (what every other emission masks)."""
    content = redact_pii(shown_content(entry))[0]
    value = shown_value(entry)
    key = shown_key(entry)
    return attrs.evolve(
        entry, content=content,
        entity=_clean(entry.entity) if entry.entity is not None else None,
        value=redact_pii(value)[0] if value is not None else None,
        key=redact_pii(key)[0] if key is not None else None,
        tags=tuple(redact_pii(t)[0] for t in shown_tags(entry)),
        metadata=map_strings(dict(entry.metadata), _clean), masks=None)


def export(
    ctx: MemoryContext,
    target: str | os.PathLike[str] | IO[bytes],
    flt: EntryFilter,
    *,
    scope: Scope | None,
    include_embeddings: bool,
    redacted: bool,
    filters: dict[str, Any],
    library_version: str,
    progress: Progress | None = None,
    encryption: EncryptionKey | None = None,
    select: Callable[[MemoryEntry], bool] | None = None,
    salt: bytes | None = None,
    transform: Callable[[MemoryEntry], MemoryEntry] | None = None,
) -> ExportReport:
    """``select``: only the entries it accepts (sync sends what changed since a watermark);
    ``salt``: the key-derivation salt of an encrypted bundle (sync reuses one per device);
    ``transform``: each entry as it is to be written, same id (sync re-homes entries into
    its token's tenant)."""
    total = ctx.storage.count(flt)
    if isinstance(target, str | os.PathLike):
        reports: list[ExportReport] = []
        path = written_whole(target, lambda handle: reports.append(_write(
            ctx, handle, flt, scope, include_embeddings, redacted, filters, library_version,
            total, progress, encryption, select, salt, transform)), "bundle")
        return attrs.evolve(reports[0], path=str(path), bytes=path.stat().st_size)
    return _write(ctx, target, flt, scope, include_embeddings, redacted, filters,
                  library_version, total, progress, encryption, select, salt, transform)


def written_whole(target: str | os.PathLike[str], write: Callable[[IO[bytes]], object],
                  what: str) -> Path:
    """``target`` written by ``write`` beside itself and renamed into place only when
    whole and synced: a crash or a full disk never leaves half a file under its name."""
    path = Path(target)
    if "\x00" in str(path):
        raise SecurityError("export path contains a NUL character")
    if path.is_dir():
        raise ValidationError(f"export target {path} is a directory")
    partial = path.with_name(path.name + ".partial")
    try:
        with open(partial, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise StorageError(f"could not write the {what} {path}: {exc}") from exc
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path


def _write(
    ctx: MemoryContext, handle: IO[bytes], flt: EntryFilter, scope: Scope | None,
    include_embeddings: bool, redacted: bool, filters: dict[str, Any], library_version: str,
    total: int, progress: Progress | None, encryption: EncryptionKey | None = None,
    select: Callable[[MemoryEntry], bool] | None = None, salt: bytes | None = None,
    transform: Callable[[MemoryEntry], MemoryEntry] | None = None,
) -> ExportReport:
    sink: IO[bytes] = handle
    if encryption is not None:  # the whole zip, manifest included (see bundle_crypto)
        sink = EncryptingWriter(handle, encryption, salt=salt)  # type: ignore[assignment]
    writer = BundleWriter(sink)
    embedder = ctx.embedder
    with_vectors = include_embeddings and embedder is not None
    try:
        done = 0
        for page in pages(ctx, flt):
            chosen = page if select is None else [e for e in page if select(e)]
            vectors = ctx.storage.vectors_for([e.id for e in chosen]) if with_vectors else {}
            for entry in chosen:
                if scope is not None and entry.scope is not scope:
                    continue
                if transform is not None:
                    entry = transform(entry)
                shown = scrubbed(entry) if redacted else entry
                vector = vectors.get(entry.id)
                if vector is not None and shown.content != entry.content:
                    vector = None
                blob = vector.astype("<f4").tobytes() if vector is not None else None
                writer.add(entry_to_record(shown), blob)
            done += len(page)
            if progress is not None:
                progress("export", min(done, total), total)
        me = ctx.identity
        manifest = writer.finish({
            "library_version": library_version,
            "created_at": ctx.clock.now().isoformat(),
            "source": {"agent_id": me.agent_id, "user_id": me.user_id,
                       "workspace_id": me.workspace_id, "model_id": me.model_id,
                       "storage": ctx.storage.name},
            "filters": filters,
            "redacted": redacted,
            "embedding": _embedding_block(ctx) if writer.rows else None,
        })
        if sink is not handle:
            sink.close()
    except BaseException:
        writer.abort()
        raise
    return ExportReport(None, writer.count, writer.rows, None, manifest)


def _embedding_block(ctx: MemoryContext) -> dict[str, Any]:
    embedder = ctx.embedder
    assert embedder is not None
    return {"model_name": embedder.model_id, "model_id": embedder.model_id,
            "dimensions": int(embedder.dimension), "metric": "cosine",
            "provider": type(embedder).__module__.rsplit(".", 1)[-1]}


def pages(ctx: MemoryContext, flt: EntryFilter) -> Iterator[list[MemoryEntry]]:
    """The entries of ``flt`` in id order, ``PAGE`` at a time (keyset: stable while
    other writers add entries)."""
    cursor: str | None = None
    while True:
        page = ctx.storage.query(attrs.evolve(flt, after_id=cursor), limit=PAGE,
                                 newest_first=False)
        if not page:
            return
        yield list(page)
        cursor = page[-1].id
