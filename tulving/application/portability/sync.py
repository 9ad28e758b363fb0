"""``Memory.sync(remote)``: exchange deltas with a Tulving server, both ways.

A delta is a bundle (:mod:`.bundle_format`) of the entries this device changed since its
push watermark, archived versions included, so supersedes, corrections and forgets travel
as the new state of each entry; with an end-to-end key it is an encrypted bundle
(:mod:`.bundle_crypto`) the server stores without being able to read it. The server keeps
the deltas of the tenant in an append-only log with sequence numbers; a device pulls
those after its pull watermark and merges each with the importer (by id, conflicts by
``updated_at``, supersede chains merged, never broken).

Order and watermarks, so that an interruption anywhere (either side killed, the
connection dropped) and a second run converge with nothing lost or duplicated:

1. pull: each delta is merged in one transaction, then the pull watermark (the log's
   sequence number) moves past it; dying in between merges it again next time, which
   changes nothing (a bundle imported twice is a no-op);
2. push: the time is noted, the entries with ``updated_at`` at or after the previous push
   watermark (less a margin for writes that were committing while it was taken) are sent,
   and only when the server has acknowledged the delta does the watermark move to the
   noted time; a push that died is sent again, whole, and merges as the same versions.

Watermarks and this device's id live in the store's meta table, per remote.
"""

from __future__ import annotations

import hashlib
import io
import secrets
from datetime import datetime, timedelta
from typing import Any, Protocol

import attrs

from tulving.application.plumbing.context import MemoryContext
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ValidationError

PAGE = 200
#: Writes that were committing when the push watermark was taken are sent next time too.
MARGIN = timedelta(seconds=2)


class SyncRemote(Protocol):
    """The server side as a device sees it (``tulving.client.TulvingClient`` is one)."""

    @property
    def sync_id(self) -> str:
        """A stable name of the remote and the tenant it serves (watermarks are per id)."""

    def sync_push(self, device: str, data: bytes, e2e: bool) -> dict[str, Any]: ...

    def sync_list(self, after: int, limit: int) -> list[dict[str, Any]]: ...

    def sync_fetch(self, seq: int) -> bytes: ...


@attrs.define
class SyncReport:
    pulled_deltas: int = 0
    pulled_bytes: int = 0
    added: int = 0
    updated: int = 0
    conflicts: int = 0
    pushed_entries: int = 0
    pushed_bytes: int = 0
    pull_watermark: int = 0
    e2e: bool = False

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _meta_key(remote: SyncRemote, what: str) -> str:
    digest = hashlib.sha256(remote.sync_id.encode()).hexdigest()[:16]
    return f"sync:{digest}:{what}"


def device_id(ctx: MemoryContext) -> str:
    """This store's device id (made once, kept in its meta table)."""
    found = ctx.storage.get_meta("sync:device")
    if found:
        return found
    made = secrets.token_hex(8)
    ctx.storage.set_meta("sync:device", made)
    return made


def _salt(ctx: MemoryContext) -> bytes:
    """This device's key-derivation salt for E2E deltas: one, so the slow derivation runs
    once per process (each delta still has its own key: see bundle_crypto)."""
    found = ctx.storage.get_meta("sync:salt")
    if found:
        return bytes.fromhex(found)
    made = secrets.token_bytes(16)
    ctx.storage.set_meta("sync:salt", made.hex())
    return made


def pull(memory: Any, remote: SyncRemote, key: EncryptionKey | None,
         report: SyncReport) -> None:
    ctx: MemoryContext = memory.ctx
    me = device_id(ctx)
    name = _meta_key(remote, "pulled")
    watermark = int(ctx.storage.get_meta(name) or 0)
    while True:
        page = remote.sync_list(watermark, PAGE)
        if not page:
            break
        for delta in page:
            seq = int(delta["seq"])
            if delta.get("device") != me:
                data = remote.sync_fetch(seq)
                result = memory.import_bundle(io.BytesIO(data), encryption=key,
                                              reembedding="auto", on_conflict="newest")
                report.pulled_deltas += 1
                report.pulled_bytes += len(data)
                report.added += len(result.added)
                report.updated += len(result.updated)
                report.conflicts += len(result.conflicts)
            watermark = seq
            ctx.storage.set_meta(name, str(watermark))
    report.pull_watermark = watermark


def push(memory: Any, remote: SyncRemote, key: EncryptionKey | None,
         report: SyncReport, library_version: str) -> None:
    from tulving.application.portability.exporter import export

    ctx: MemoryContext = memory.ctx
    name = _meta_key(remote, "pushed")
    previous = ctx.storage.get_meta(name)
    since: datetime | None = datetime.fromisoformat(previous) - MARGIN if previous else None
    started = ctx.clock.now()

    def changed(entry: MemoryEntry) -> bool:
        return since is None or entry.updated_at >= since

    buffer = io.BytesIO()
    flt = memory.sync_filter()
    result = export(ctx, buffer, flt, scope=None, include_embeddings=True, redacted=False,
                    filters={"sync_since": previous}, library_version=library_version,
                    encryption=key, select=changed, salt=_salt(ctx) if key else None)
    if result.entries:
        data = buffer.getvalue()
        remote.sync_push(device_id(ctx), data, key is not None)
        report.pushed_entries += result.entries
        report.pushed_bytes += len(data)
    ctx.storage.set_meta(name, started.isoformat())


def sync(memory: Any, remote: SyncRemote, key: EncryptionKey | None,
         library_version: str) -> SyncReport:
    for method in ("sync_push", "sync_list", "sync_fetch"):
        if not callable(getattr(remote, method, None)):
            raise ValidationError(f"the remote has no {method}(): pass a TulvingClient")
    report = SyncReport(e2e=key is not None)
    pull(memory, remote, key, report)
    push(memory, remote, key, report, library_version)
    return report
