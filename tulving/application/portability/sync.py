"""``Memory.sync(remote)``: exchange deltas with a Tulving server, both ways.

A delta is a bundle (``.bundle_format``) of the entries this device changed since its
push watermark, archived versions included, so supersedes, corrections and forgets travel
as the new state of each entry; with an end-to-end key it is an encrypted bundle
(``.bundle_crypto``) the server stores without being able to read it. The server keeps
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
(``tulving.application.governance.erasure.replay()``), remembers it, and replays what
it remembers after every later merge, so an older delta cannot bring erased entries back.

Tenancy is the token's (the server decides it at the door). Before anything moves, the
device asks the server which tenant its token acts for: the same as this Memory's, and
sync goes on; this Memory names no tenant (no user, no workspace), and its entries are
re-homed (same ids) into the token's tenant on push, the token's entries into its own on
pull, and the report says so (``rehomed_to``); any other tenant, and sync stops with a
``ScopeError`` naming the fix, before anything is pulled or pushed.

A delta this device cannot merge (a tampered one, entries of another tenant, a policy
that refuses them) never blocks it: the watermark moves past it and the report lists it
(``skipped``), unless the cause is this device's own (a missing or wrong key, a storage
failure), which stops the sync so it can be fixed and run again. When the server could
not merge a delta this device pushed, it keeps it in quarantine (never handed to other
devices) and the report lists it with the server's reason (``not_merged``).

Watermarks and this device's id live in the store's meta table, per remote; remembered
erasures per tenant.
"""

from __future__ import annotations

import hashlib
import io
import json
import secrets
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

import attrs

from tulving.application.governance import erasure
from tulving.application.governance.erasure import ErasureReport
from tulving.application.plumbing.context import MemoryContext
from tulving.application.portability.importer import ImportTarget
from tulving.application.retrieval.search import build_filter
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import (
    BundleError,
    EncryptionError,
    EncryptionKeyError,
    ScopeError,
    StorageError,
    TulvingError,
    ValidationError,
)
from tulving.domain.identity import tenant_key
from tulving.domain.query import EntryFilter
from tulving.domain.redaction import redact
from tulving.domain.reports import Report
from tulving.domain.sealing import is_sealed, seal, unseal
from tulving.domain.sync_answers import ListedDelta, PushAnswer, TenantAnswer
from tulving.domain.sync_records import SyncDelta

PAGE = 200
ERASURES = "tulving-erasures"
_SEALED_ERASURES = "sync erasures"
_LEGACY_REMEMBERED = "sync:erasures"  # one list for the whole store, before 2026-11-26
#: Writes that were committing when the push watermark was taken are sent next time too.
MARGIN = timedelta(seconds=2)


class SyncRemote(Protocol):
    """The server side as a device sees it (``tulving.client.TulvingClient`` is one)."""

    @property
    def sync_id(self) -> str:
        """A stable name of the remote and the tenant it serves (watermarks are per id)."""

    def sync_push(self, device: str, data: bytes, e2e: bool) -> PushAnswer: ...

    def sync_list(self, after: int, limit: int) -> Sequence[ListedDelta]: ...

    def sync_fetch(self, seq: int) -> bytes: ...


@runtime_checkable
class AsksTenant(Protocol):
    """A remote that says which tenant its token acts for (servers from 2026-11-26 on;
    ``TulvingClient`` does; None from a server older than the question)."""

    def sync_tenant(self) -> TenantAnswer | None: ...


@runtime_checkable
class ListsQuarantine(Protocol):
    """A remote that lists this device's deltas the server could not merge, after a
    sequence number (servers from 2026-11-26 on; None from an older one)."""

    def sync_quarantined(self, device: str | None = None,
                         after: int = 0) -> Sequence[SyncDelta] | None: ...


@attrs.frozen
class SkippedDelta(Report):
    """A pulled delta this device could not merge (the watermark moved past it)."""

    seq: int
    reason: str


@attrs.frozen
class NotMerged(Report):
    """A delta this device pushed that the server did not merge (quarantined there)."""

    seq: int
    delta_id: str
    reason: str


@attrs.frozen
class LocalSide:
    """This Memory's side of sync, handed over by its composition
    (``application.bootstrap``): where deltas are imported (``imports``, under the
    Memory's lock) and what is written before an erasure is replayed (``flush``: the
    pending access statistics and read records of the entries it deletes)."""

    imports: ImportTarget
    flush: Callable[[], None]

    @property
    def ctx(self) -> MemoryContext:
        return self.imports.ctx

    def replay_erasure(self, kind: str, subject_sha256: str,
                       before: datetime) -> ErasureReport:
        """An erasure another device made (see ``erasure.replay``)."""
        self.flush()
        with self.ctx.serial:
            return erasure.replay(self.ctx, self.imports.audit, kind, subject_sha256, before)

    def visible(self) -> EntryFilter:
        """Everything this identity sees, archived versions included (what sync sends)."""
        return attrs.evolve(build_filter(self.ctx, None, None, None, None),
                            include_archived=True)


@attrs.define
class SyncReport(Report):
    """What one ``sync()`` did, both ways: the deltas pulled and what merging them added,
    updated or flagged; the entries and bytes pushed; erasures sent and replayed;
    whether it ran end to end encrypted; and what either side could not merge."""

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
    rehomed_to: str | None = None
    """The tenant this store's entries were re-homed to (a store that names no tenant,
    synced through a token bound to one), e.g. "user 'u1'"; None when not re-homed."""
    skipped: list[SkippedDelta] = attrs.field(factory=list)
    """Pulled deltas this device could not merge (the watermark moved past them)."""
    not_merged: list[NotMerged] = attrs.field(factory=list)
    """Deltas this device pushed that the server did not merge (quarantined there)."""
    merging: list[int] = attrs.field(factory=list)
    """Sequence numbers of pushed deltas the server was still merging when it answered
    (a refusal of one shows in the next sync's ``not_merged``)."""



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


@attrs.frozen
class Tenancy:
    """Where this sync's entries live: ``remote`` is the token's tenant (``tenant_key``)
    and ``rehome`` whether this store's entries move between it and its own."""

    remote: str | None
    rehome: bool = False
    user_id: str | None = None
    workspace_id: str | None = None


def describe_tenant(user_id: str | None, workspace_id: str | None) -> str:
    if user_id is None and workspace_id is None:
        return "no user or workspace"
    parts = [f"user {user_id!r}"] if user_id is not None else []
    if workspace_id is not None:
        parts.append(f"workspace {workspace_id!r}")
    return ", ".join(parts)


def decide_tenancy(side: LocalSide, remote: SyncRemote) -> Tenancy:
    """The token's tenant against this Memory's (see the module doc). A server that does
    not say (older than the rule) is taken to agree; it then checks what it can."""
    if not isinstance(remote, AsksTenant):
        return Tenancy(None)
    answer = remote.sync_tenant()
    if answer is None:
        return Tenancy(None)
    user, workspace = answer.user_id, answer.workspace_id
    me = side.ctx.identity
    if (user, workspace) == (me.user_id, me.workspace_id):
        return Tenancy(tenant_key(user, workspace))
    if me.user_id is None and me.workspace_id is None:
        return Tenancy(tenant_key(user, workspace), True, user, workspace)
    fix = []
    if user is not None:
        fix.append(f"--user-id {user}")
    if workspace is not None:
        fix.append(f"--workspace-id {workspace}")
    opened = " ".join(fix) if fix else "no --user-id or --workspace-id"
    raise ScopeError(
        f"this store acts for {describe_tenant(me.user_id, me.workspace_id)} but the "
        f"server's token acts for {describe_tenant(user, workspace)}: nothing was synced. "
        f"Sync with a token bound to {describe_tenant(me.user_id, me.workspace_id)} "
        f"(tulving serve token create NAME --bind-user ...), or open this store as the "
        f"token's tenant ({opened}; Memory(user_id=..., workspace_id=...))")


#: Errors of this device's own making: the sync stops (fix it, run again) instead of
#: moving past the delta.
_STOPS = (EncryptionKeyError, StorageError)


def pull(side: LocalSide, remote: SyncRemote, key: EncryptionKey | None,
         report: SyncReport, tenancy: Tenancy | None = None) -> None:
    ctx = side.ctx
    me = device_id(ctx)
    name = _meta_key(remote, "pulled")
    watermark = int(ctx.storage.get_meta(name) or 0)
    rehome_from = tenancy.remote if tenancy is not None and tenancy.rehome else None
    while True:
        page = remote.sync_list(watermark, PAGE)
        if not page:
            break
        for delta in page:
            seq = int(delta.seq)
            if delta.device != me:
                data = remote.sync_fetch(seq)
                try:
                    apply_delta(side, data, key, report, rehome_from=rehome_from)
                except _STOPS:
                    raise
                except TulvingError as exc:
                    report.skipped.append(SkippedDelta(seq, failure_reason(exc)))
                else:
                    report.pulled_deltas += 1
                report.pulled_bytes += len(data)
            watermark = seq
            ctx.storage.set_meta(name, str(watermark))
    report.pull_watermark = watermark


def failure_reason(exc: BaseException) -> str:
    return redact(f"{type(exc).__name__}: {exc}")[:500]


def apply_delta(side: LocalSide, data: bytes, key: EncryptionKey | None,
                report: SyncReport | None = None, *,
                rehome_from: str | None = None) -> None:
    """Merge one delta: a bundle, or a list of erasures (the server calls this too for
    plain deltas). ``rehome_from``: a tenant whose entries move into this Memory's with
    their ids (see ``Tenancy``)."""
    from tulving.application.portability.bundle_format import DEFAULT_MAX_BYTES

    report = report if report is not None else SyncReport()
    if is_sealed(data[:16]) or data[:1] == b"{":
        events = read_erasures(data, key)
        _remember(side.ctx, events)
        report.erasures_applied += _replay(side, events)
        return
    importer = side.imports.importer(reembedding="auto", on_conflict="newest",
                                     dry_run=False, remap_identity=False,
                                     max_bytes=DEFAULT_MAX_BYTES, encryption=key,
                                     rehome_from=rehome_from)
    result = side.imports.run(importer, io.BytesIO(data))
    report.added += len(result.added)
    report.updated += len(result.updated)
    report.conflicts += len(result.conflicts)
    if result.added or result.updated:  # an older delta must not bring erased entries back
        _replay(side, _remembered(side.ctx))


def read_erasures(data: bytes, key: EncryptionKey | None) -> list[dict[str, str]]:
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
    except (ValueError, KeyError, TypeError, AssertionError, RecursionError):
        raise BundleError("a malformed erasure delta") from None


def _remembered_key(ctx: MemoryContext) -> str:
    """Erasures are remembered per tenant: one store can serve several (a server) and
    an erasure of one must never be replayed in another."""
    digest = hashlib.sha256(ctx.identity.tenant.encode()).hexdigest()[:16]
    return f"sync:erasures:{digest}"


def _remembered(ctx: MemoryContext) -> list[dict[str, str]]:
    storage = ctx.storage
    raw = storage.get_meta(_remembered_key(ctx))
    if raw is not None:
        return list(json.loads(raw))
    legacy = storage.get_meta(_LEGACY_REMEMBERED)
    known = _legacy_for_tenant(ctx, json.loads(legacy)) if legacy else []
    storage.set_meta(_remembered_key(ctx), json.dumps(known))
    return known


def _legacy_for_tenant(ctx: MemoryContext,
                       events: list[dict[str, str]]) -> list[dict[str, str]]:
    """The events of the store-wide list kept before erasures were remembered per tenant
    that belong to this Memory's tenant: a user's or a workspace's when it is this
    tenant's own, an agent's when this tenant's audit records that erasure."""
    me = ctx.identity

    def sha(kind: str, name: str | None) -> str | None:
        return hashlib.sha256(f"{kind}={name}".encode()).hexdigest() if name else None

    audited = {str(r.details.get("subject_sha256"))
               for r in ctx.storage.audit_records(me.tenant) if r.action == "erase"}
    mine = []
    for event in events:
        kind, subject = event.get("kind"), event.get("subject_sha256")
        if ((kind == "user_id" and subject == sha("user_id", me.user_id))
                or (kind == "workspace_id" and subject == sha("workspace_id", me.workspace_id))
                or (kind == "agent_id" and subject in audited)):
            mine.append(event)
    return mine


def _remember(ctx: MemoryContext, events: list[dict[str, str]]) -> None:
    known = _remembered(ctx)
    grown = False
    for event in events:
        if event not in known:
            known.append(event)
            grown = True
    if grown:
        ctx.storage.set_meta(_remembered_key(ctx), json.dumps(known))


def _replay(side: LocalSide, events: list[dict[str, str]]) -> int:
    done = 0
    for event in events:
        result = side.replay_erasure(event["kind"], event["subject_sha256"],
                                     datetime.fromisoformat(event["before"]))
        done += result.deleted
    return done


def _erasures_since(ctx: MemoryContext, since: datetime | None) -> list[dict[str, str]]:
    """Erasures made on this device (not replays of other devices') since ``since``."""
    events = []
    for record in ctx.storage.audit_records(ctx.identity.tenant):
        details = record.details
        if record.action != "erase" or details.get("replayed"):
            continue
        if since is not None and record.at < since:
            continue
        events.append({"kind": str(details["subject_kind"]),
                       "subject_sha256": str(details["subject_sha256"]),
                       "before": record.at.isoformat()})
    return events


def push(side: LocalSide, remote: SyncRemote, key: EncryptionKey | None,
         report: SyncReport, library_version: str, tenancy: Tenancy | None = None) -> None:
    from tulving.application.portability.exporter import export
    from tulving.application.portability.importer import rehomed

    ctx = side.ctx
    name = _meta_key(remote, "pushed")
    previous = ctx.storage.get_meta(name)
    since: datetime | None = datetime.fromisoformat(previous) - MARGIN if previous else None
    started = ctx.clock.now()
    # The margin re-sends what was committing when the watermark was taken; what the last
    # push already sent in that window, unchanged since, is not sent again (a quick second
    # sync would otherwise push the same entries, and a refused one be quarantined twice).
    recent_name = _meta_key(remote, "pushed-recent")
    already = set(json.loads(ctx.storage.get_meta(recent_name) or "[]")) if previous else set()
    window = started - MARGIN
    sent_recently: list[str] = []

    def changed(entry: MemoryEntry) -> bool:
        if since is not None and entry.updated_at < since:
            return False
        version = f"{entry.id}@{entry.updated_at.isoformat()}"
        if entry.updated_at >= window:
            sent_recently.append(version)  # still in the next push's margin: remembered
        return version not in already

    transform = None
    if tenancy is not None and tenancy.rehome:
        to_user, to_workspace = tenancy.user_id, tenancy.workspace_id
        report.rehomed_to = describe_tenant(to_user, to_workspace)

        def transform(entry: MemoryEntry) -> MemoryEntry:
            return rehomed(entry, to_user, to_workspace)

    buffer = io.BytesIO()
    flt = side.visible()
    result = export(ctx, buffer, flt, scope=None, include_embeddings=True, redacted=False,
                    filters={"sync_since": previous}, library_version=library_version,
                    encryption=key, select=changed, salt=_salt(ctx) if key else None,
                    transform=transform)
    if result.entries:
        data = buffer.getvalue()
        _pushed(report, remote.sync_push(device_id(ctx), data, key is not None))
        report.pushed_entries += result.entries
        report.pushed_bytes += len(data)
    events = _erasures_since(ctx, since)
    _remember(ctx, events)
    if events:
        body = json.dumps({"format": ERASURES, "version": 1, "erasures": events},
                          sort_keys=True).encode()
        if key is not None:
            body = seal(key, body, _SEALED_ERASURES, salt=_salt(ctx))
        _pushed(report, remote.sync_push(device_id(ctx), body, key is not None))
        report.erasures_pushed += len(events)
        report.pushed_bytes += len(body)
    ctx.storage.set_meta(recent_name, json.dumps(sorted(sent_recently)))
    ctx.storage.set_meta(name, started.isoformat())


def _pushed(report: SyncReport, answer: PushAnswer) -> None:
    """The server's answer to a push: a quarantined delta goes into the report, and one
    still being merged is noted."""
    if answer.state == "quarantined":
        _not_merged(report, answer.seq, answer.delta_id, answer.reason)
    elif answer.state == "pending":
        report.merging.append(int(answer.seq))


def _not_merged(report: SyncReport, seq: int, delta_id: str, reason: str | None) -> None:
    if all(item.seq != seq for item in report.not_merged):
        report.not_merged.append(NotMerged(int(seq), str(delta_id), str(reason or "")[:500]))


def _quarantine_notices(side: LocalSide, remote: SyncRemote, report: SyncReport) -> None:
    """This device's deltas the server quarantined after the push answered (an older
    server merged later; a merge retried after a restart)."""
    if not isinstance(remote, ListsQuarantine):
        return
    ctx = side.ctx
    name = _meta_key(remote, "quarantine-seen")
    seen = int(ctx.storage.get_meta(name) or 0)
    found = remote.sync_quarantined(device_id(ctx), seen)
    if found is None:
        return
    for delta in found:
        _not_merged(report, delta.seq, delta.delta_id, delta.reason)
        seen = max(seen, int(delta.seq))
    told = {item.seq for item in report.not_merged}
    report.merging = [seq for seq in report.merging if seq not in told]
    for item in report.not_merged:
        seen = max(seen, item.seq)
    ctx.storage.set_meta(name, str(seen))


def sync(side: LocalSide, remote: SyncRemote, key: EncryptionKey | None,
         library_version: str) -> SyncReport:
    """One sync with ``remote``, both ways (see the module doc); the caller holds the
    Memory's lock."""
    for method in ("sync_push", "sync_list", "sync_fetch"):
        if not callable(getattr(remote, method, None)):
            raise ValidationError(f"the remote has no {method}(): pass a TulvingClient")
    tenancy = decide_tenancy(side, remote)  # before anything moves
    report = SyncReport(e2e=key is not None)
    previous = side.ctx.storage.get_meta(_meta_key(remote, "pushed"))
    # this device's own erasures are remembered before anything is merged: a delta
    # pushed elsewhere before they were known must not bring the entries back here
    _remember(side.ctx, _erasures_since(
        side.ctx, datetime.fromisoformat(previous) - MARGIN if previous else None))
    pull(side, remote, key, report, tenancy)
    push(side, remote, key, report, library_version, tenancy)
    _quarantine_notices(side, remote, report)
    return report
