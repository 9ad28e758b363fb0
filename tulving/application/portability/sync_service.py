"""The server's side of sync (``/v1/sync``) over the store's sync log (``SyncLog``).

The HTTP layer builds one per call from the caller's ``Memory`` view, whose tenant is the
token's: tenancy is decided once, at the door, and everything here acts in that tenant.
The log lives in the store, so every replica over one database serves the same log, and
an encrypted store encrypts it (DESIGN, "The seams").

- **Push** (``receive``): the device name is checked (a full match of
  ``DEVICE_PATTERN``) and a plain delta is read whole before anything is logged: a
  corrupt one, or one holding entries of another tenant, is refused (``BundleError``,
  ``ScopeError`` naming the fix) and nothing is written. Then the delta is appended (the
  database numbers it; the same bytes from the same device again are the same delta).
  End-to-end encrypted deltas are only stored (the server has no key).
- **Merge** (``catch_up``): pending deltas are merged into the server's store in log
  order and settled: merged, or quarantined with the reason when the merge fails for
  anything but a storage fault (which leaves the delta pending, to be merged later).
  ``push`` is ``receive`` then ``catch_up``; the HTTP server merges in the background
  and lets a push wait a moment for its own delta's outcome.
- **Listing**: the deltas devices pull, oldest first, quarantined ones left out: once
  the server knows it cannot merge a delta, no device is handed it, and a device handed
  one while it was being merged passes over what it cannot merge (never blocked).
  ``quarantined`` lists them, with reasons.
- **Exactly once**: one merger per tenant at a time (``SyncLog.sync_merger``: an advisory
  lock on PostgreSQL, so replicas take turns), and it merges only the delta just after
  the watermark, which moves in the same transaction as the merge's audit record. A
  merger killed between its import and that transaction leaves the delta pending: the
  next one merges it again, which changes nothing (a bundle imported twice is a no-op).
"""

from __future__ import annotations

import hashlib
import io

import attrs

from tulving.application.portability.bundle_crypto import is_encrypted_bundle
from tulving.application.portability.bundle_format import DEFAULT_MAX_BYTES, BundleReader
from tulving.application.portability.sync import (
    LocalSide,
    apply_delta,
    describe_tenant,
    failure_reason,
    read_erasures,
)
from tulving.domain.errors import ConfigError, ScopeError, StorageError, ValidationError
from tulving.domain.log_masking import masked_logger
from tulving.domain.sealing import is_sealed
from tulving.domain.sync_answers import PushAnswer, TenantAnswer
from tulving.domain.sync_records import (
    DELTA_MERGED,
    DELTA_PENDING,
    DELTA_QUARANTINED,
    DELTA_STORED,
    SyncDelta,
    check_sync_device,
)
from tulving.ports.storage import SyncLog

log_ = masked_logger(__name__)

#: Most deltas one listing returns.
MAX_PAGE = 1000
#: Sequence numbers are 64-bit integers in every store.
MAX_SEQ = 2**63 - 1


def check_seq(value: object, name: str = "after") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEQ:
        raise ValidationError(f"{name} must be a sequence number 0..{MAX_SEQ}")
    return value


def is_encrypted(data: bytes) -> bool:
    """Whether a delta is end-to-end encrypted (an encrypted bundle or sealed erasures)."""
    return is_encrypted_bundle(data[:32]) or is_sealed(data[:16])


@attrs.frozen
class PushOutcome:
    delta: SyncDelta
    new: bool

    def answer(self) -> PushAnswer:
        """What the device is told (``SyncRemote.sync_push``)."""
        d = self.delta
        return PushAnswer(d.seq, d.delta_id, self.new, d.state, d.state == DELTA_MERGED,
                          d.reason)


def _name(value: object) -> str | None:
    return None if value is None else str(value)[:80]


def delta_dict(delta: SyncDelta) -> dict[str, object]:
    return {"seq": delta.seq, "device": delta.device, "delta_id": delta.delta_id,
            "size": delta.size, "e2e": delta.e2e, "state": delta.state,
            "pushed_at": delta.pushed_at.isoformat(), "reason": delta.reason}


class SyncService:
    """Sync for the tenant of one Memory (or view), built by ``Memory.sync_service()``
    from that Memory's side of sync (its context, lock and audit trail)."""

    def __init__(self, side: LocalSide) -> None:
        storage = side.ctx.storage
        if not isinstance(storage, SyncLog):
            raise ConfigError(f"the {storage.name} store keeps no sync log: sync needs a "
                              "store that implements tulving.ports.storage.SyncLog")
        self.side, self.log = side, storage
        self.tenant: str = side.ctx.identity.tenant

    def tenant_info(self) -> TenantAnswer:
        me = self.side.ctx.identity
        return TenantAnswer(me.user_id, me.workspace_id)

    # push --------------------------------------------------------------------------
    def receive(self, device: str, data: bytes, *, declared_e2e: bool = False) -> PushOutcome:
        """Check a pushed delta and log it (the HTTP server merges it next, in the
        background); the same bytes from the same device again are the delta logged
        then. Nothing is logged when a check fails."""
        check_sync_device(device)
        if not data:
            raise ValidationError("an empty delta")
        e2e = is_encrypted(data)
        if declared_e2e and not e2e:
            raise ValidationError("the delta is declared end-to-end encrypted but its bytes "
                                  "are plain: refused (a plain delta is read and merged)")
        found = self.log.sync_find(self.tenant, device, hashlib.sha256(data).hexdigest())
        if found is not None:  # a retried push: the same delta
            return PushOutcome(found, False)
        if not e2e:
            self.check_delta(data)  # before anything is logged
        delta, new = self.log.sync_append(self.tenant, device, data, e2e=e2e,
                                          at=self.side.ctx.clock.now())
        return PushOutcome(delta, new)

    def push(self, device: str, data: bytes, *, declared_e2e: bool = False) -> PushOutcome:
        """``receive``, then settle every pending delta of the tenant, this one included:
        the answer says whether it was merged (or quarantined, and why)."""
        outcome = self.receive(device, data, declared_e2e=declared_e2e)
        if outcome.delta.state == DELTA_PENDING:
            self.catch_up()
        return attrs.evolve(outcome, delta=self.state_of(outcome.delta))

    def state_of(self, delta: SyncDelta) -> SyncDelta:
        """The delta as the log has it now (its state moves when it is settled)."""
        return self.log.sync_find(self.tenant, delta.device, delta.delta_id) or delta

    def check_delta(self, data: bytes) -> None:
        """Read a plain delta whole: BundleError when it is not one, ScopeError when an
        entry belongs to another tenant than the token's (the message names the fix)."""
        if data[:1] == b"{":
            read_erasures(data, None)  # erasures carry no tenant: replayed in this one
            return
        me = self.side.ctx.identity
        foreign: set[tuple[str | None, str | None]] = set()
        reader = BundleReader(io.BytesIO(data), max_bytes=DEFAULT_MAX_BYTES)
        try:
            for record, _vector in reader.records():  # digests checked as it reads
                # the claimed tenant is enough here: a record whose partition disagrees
                # with it is refused by the import (and the delta quarantined)
                owner = (record.get("user_id"), record.get("workspace_id"))
                if owner != (me.user_id, me.workspace_id):
                    foreign.add((_name(owner[0]), _name(owner[1])))
        finally:
            reader.close()
        if foreign:
            theirs = "; ".join(sorted(describe_tenant(u, w) for u, w in foreign))
            mine = describe_tenant(me.user_id, me.workspace_id)
            raise ScopeError(
                f"this delta holds entries of {theirs}, but the token acts for {mine}: a "
                f"delta is merged only into its token's tenant, and nothing was logged. "
                f"Sync the device's store as {mine} (tulving sync --user-id/--workspace-id, "
                f"Memory(user_id=..., workspace_id=...)), or through a token bound to "
                f"{theirs}; a store that names no user or workspace is re-homed to the "
                f"token's tenant by devices running Tulving 2026-11-26 or later")

    # merging -----------------------------------------------------------------------
    def catch_up(self) -> int:
        """Settle every pending delta of the tenant (merge or quarantine), in order;
        returns how many. Cheap when nothing is pending (two reads)."""
        if not self.pending():
            return 0
        with self.log.sync_merger(self.tenant):
            return self._catch_up_held()

    def _catch_up_held(self) -> int:
        done = 0
        while True:
            mark = self.log.sync_watermark(self.tenant)
            page = self.log.sync_deltas(self.tenant, mark, 1)
            if not page:
                return done
            delta = page[0]
            data = self.log.sync_read(self.tenant, delta.seq)
            assert data is not None
            self._settle_next(delta, data)
            done += 1

    def _settle_next(self, delta: SyncDelta, data: bytes) -> SyncDelta:
        """Merge (or store) the delta just after the watermark and settle it; the caller
        holds the tenant's merge claim."""
        storage = self.side.ctx.storage
        if delta.e2e or delta.state == DELTA_STORED:
            state, reason, action = DELTA_STORED, None, "sync_store"
        else:
            try:
                apply_delta(self.side, data, None)
            except StorageError:
                raise  # the store failed: the delta stays pending and is merged later
            except Exception as exc:  # any other failure is this delta's: quarantine it
                state, reason, action = DELTA_QUARANTINED, failure_reason(exc), "sync_quarantine"
                # the reason may quote the delta: it goes to the (encrypted) store, the
                # server's log gets the kind of failure only
                log_.warning("sync delta %s of a tenant quarantined (%s); its reason is in "
                             "GET /v1/sync/quarantine", delta.seq, type(exc).__name__)
            else:
                state, reason, action = DELTA_MERGED, None, "sync_merge"
        with self.side.ctx.serial, storage.transaction():  # plumbing.write_order
            self.log.sync_settle(self.tenant, delta.seq, state, reason)
            if action != "sync_store":
                self.side.imports.audit.record(action, {"seq": delta.seq, "delta_id": delta.delta_id},
                                  details={"seq": delta.seq, "device": delta.device,
                                           "delta_id": delta.delta_id, "reason": reason})
        return attrs.evolve(delta, state=state, reason=reason)

    # reading -----------------------------------------------------------------------
    def listing(self, after: int, limit: int) -> list[SyncDelta]:
        """What devices pull: the deltas after ``after``, quarantined ones left out. One
        still being merged is listed too (it passed the door's checks; a device that
        cannot merge it passes over it), so a device pulls while the server merges."""
        check_seq(after)
        return self.log.sync_deltas(self.tenant, after, min(limit, MAX_PAGE),
                                    states=[DELTA_MERGED, DELTA_STORED, DELTA_PENDING])

    def pending(self) -> bool:
        """Whether a delta of the tenant waits to be settled."""
        return self.log.sync_last(self.tenant) > self.log.sync_watermark(self.tenant)

    def fetch(self, seq: int) -> bytes | None:
        if isinstance(seq, bool) or not isinstance(seq, int) or not 0 < seq <= MAX_SEQ:
            return None
        return self.log.sync_read(self.tenant, seq)

    def quarantined(self, *, device: str | None = None, after: int = 0,
                    limit: int = MAX_PAGE) -> list[SyncDelta]:
        if device is not None:
            check_sync_device(device)
        check_seq(after)
        return self.log.sync_deltas(self.tenant, after, min(limit, MAX_PAGE),
                                    states=[DELTA_QUARANTINED], device=device)
