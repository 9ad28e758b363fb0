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

Erasures travel as deltas of their own (deletions leave no entry to send): the subject
kind, the sha256 of its name (all the audit keeps) and the time, JSON, or sealed with the
end-to-end key. A device replays one on the entries of that subject created by then
(:func:`tulving.application.governance.erasure.replay`), remembers it, and replays what
it remembers after every later merge, so an older delta cannot bring erased entries back.

Watermarks and this device's id live in the store's meta table, per remote.
"""

from __future__ import annotations

import hashlib
import io
import json
import secrets
from datetime import datetime, timedelta
from typing import Any, Protocol

import attrs

from tulving.application.plumbing.context import MemoryContext
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import BundleError, EncryptionError, EncryptionKeyError, ValidationError
from tulving.domain.sealing import is_sealed, seal, unseal

PAGE = 200
ERASURES = "tulving-erasures"
_SEALED_ERASURES = "sync erasures"
_REMEMBERED = "sync:erasures"
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
    erasures_pushed: int = 0
    erasures_applied: int = 0
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
                apply_delta(memory, data, key, report)
                report.pulled_deltas += 1
                report.pulled_bytes += len(data)
            watermark = seq
            ctx.storage.set_meta(name, str(watermark))
    report.pull_watermark = watermark


def apply_delta(memory: Any, data: bytes, key: EncryptionKey | None,
                report: SyncReport | None = None) -> None:
    """Merge one delta: a bundle, or a list of erasures (the server calls this too for
    plain deltas)."""
    report = report if report is not None else SyncReport()
    if is_sealed(data[:16]) or data[:1] == b"{":
        events = _read_erasures(data, key)
        _remember(memory.ctx, events)
        report.erasures_applied += _replay(memory, events)
        return
    result = memory.import_bundle(io.BytesIO(data), encryption=key, reembedding="auto",
                                  on_conflict="newest")
    report.added += len(result.added)
    report.updated += len(result.updated)
    report.conflicts += len(result.conflicts)
    if result.added or result.updated:  # an older delta must not bring erased entries back
        _replay(memory, _remembered(memory.ctx))


def _read_erasures(data: bytes, key: EncryptionKey | None) -> list[dict[str, str]]:
    if is_sealed(data[:16]):
        if key is None:
            raise EncryptionKeyError("the delta is encrypted: sync with encryption= and its key")
        data = unseal(key, data, _SEALED_ERASURES)
    elif key is not None:
        raise EncryptionError("a plain delta, but a key was given: refused (all devices of "
                              "a tenant sync end to end, or none)")
    try:
        raw = json.loads(data)
        events = raw["erasures"]
        assert raw["format"] == ERASURES
        return [{"kind": str(e["kind"]), "subject_sha256": str(e["subject_sha256"]),
                 "before": str(e["before"])} for e in events]
    except (ValueError, KeyError, TypeError, AssertionError):
        raise BundleError("a malformed erasure delta") from None


def _remembered(ctx: MemoryContext) -> list[dict[str, str]]:
    raw = ctx.storage.get_meta(_REMEMBERED)
    return list(json.loads(raw)) if raw else []


def _remember(ctx: MemoryContext, events: list[dict[str, str]]) -> None:
    known = _remembered(ctx)
    for event in events:
        if event not in known:
            known.append(event)
    ctx.storage.set_meta(_REMEMBERED, json.dumps(known))


def _replay(memory: Any, events: list[dict[str, str]]) -> int:
    done = 0
    for event in events:
        result = memory.replay_erasure(event["kind"], event["subject_sha256"],
                                       datetime.fromisoformat(event["before"]))
        done += int(result["deleted"])
    return done


def _erasures_since(memory: Any, since: datetime | None) -> list[dict[str, str]]:
    """Erasures made on this device (not replays of other devices') since ``since``."""
    events = []
    for record in memory.ctx.storage.audit_records(memory.identity.tenant):
        details = record.details
        if record.action != "erase" or details.get("replayed"):
            continue
        if since is not None and record.at < since:
            continue
        events.append({"kind": str(details["subject_kind"]),
                       "subject_sha256": str(details["subject_sha256"]),
                       "before": record.at.isoformat()})
    return events


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
    events = _erasures_since(memory, since)
    _remember(ctx, events)
    if events:
        body = json.dumps({"format": ERASURES, "version": 1, "erasures": events},
                          sort_keys=True).encode()
        if key is not None:
            body = seal(key, body, _SEALED_ERASURES, salt=_salt(ctx))
        remote.sync_push(device_id(ctx), body, key is not None)
        report.erasures_pushed += len(events)
        report.pushed_bytes += len(body)
    ctx.storage.set_meta(name, started.isoformat())


def sync(memory: Any, remote: SyncRemote, key: EncryptionKey | None,
         library_version: str) -> SyncReport:
    for method in ("sync_push", "sync_list", "sync_fetch"):
        if not callable(getattr(remote, method, None)):
            raise ValidationError(f"the remote has no {method}(): pass a TulvingClient")
    report = SyncReport(e2e=key is not None)
    previous = memory.ctx.storage.get_meta(_meta_key(remote, "pushed"))
    # this device's own erasures are remembered before anything is merged: a delta
    # pushed elsewhere before they were known must not bring the entries back here
    _remember(memory.ctx, _erasures_since(
        memory, datetime.fromisoformat(previous) - MARGIN if previous else None))
    pull(memory, remote, key, report)
    push(memory, remote, key, report, library_version)
    return report
