"""The audit trail of one Memory: who did what, when, to which entries.

Records never hold content: only ids, counts, operation names and the sha256 of the
inputs. That keeps the log exportable without leaking memories, and lets erasure remove
a tenant's content while its audit chain stays intact and verifiable.

Writes are recorded inside the write's own transaction (the record exists if and only
if the write happened). A read never appends to the log itself (that is a write, and it
would wait for whatever write holds the store): on a store with a read journal its record
is journaled, durable when the read returns, and settled into the log later
(``plumbing.read_settling``); on one without, it is queued and appended in one batch (a
crash may lose the last few: at most ``max_pending`` or ``max_age_s`` of them). A refusal
is queued in memory first, whatever the store (see ``record_refusal``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any

import attrs

from tulving.application.plumbing.batching import BatchQueue
from tulving.application.plumbing.read_settling import JournaledReads
from tulving.domain.audit_chain import verify_chain
from tulving.domain.identity import Identity
from tulving.domain.records import AuditDraft, AuditRecord
from tulving.domain.redaction import redact
from tulving.domain.reports import Report
from tulving.ports.clock import Clock
from tulving.ports.storage import Storage


@attrs.frozen
class AuditCheck(Report):
    """``verify_audit``: this tenant's audit hash chain checked record by record;
    ``problems`` names each record modified, removed or out of order (``ok``: none);
    ``head`` is the last record's hash (compare it with one kept elsewhere)."""

    ok: bool
    tenant_records: int
    problems: tuple[str, ...]
    head: str | None


def input_hash(value: Any) -> str:
    """sha256 of a canonical JSON rendering of an operation's inputs."""
    body = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


class AuditTrail:
    def __init__(
        self,
        storage: Storage,
        clock: Clock,
        identity: Identity,
        *,
        record_reads: bool = True,
        read_only: bool = False,
        max_pending: int = 128,
        max_age_s: float = 2.0,
        journal: JournaledReads | None = None,
    ) -> None:
        self._storage = storage
        self._clock = clock
        self._identity = identity
        self._record_reads = record_reads
        self._read_only = read_only
        self._journal = journal
        sink: Callable[[list[AuditDraft]], object] = (
            self._storage.append_audit if journal is None
            else lambda drafts: journal.record(drafts, ()))
        self._reads: BatchQueue[AuditDraft] = BatchQueue(
            sink, max_pending=max_pending, max_age_s=max_age_s)
        if journal is not None:
            journal.before_settling(self._reads.flush)

    @property
    def tenant(self) -> str:
        return self._identity.tenant

    def draft(
        self,
        action: str,
        inputs: Any,
        *,
        entry_id: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> AuditDraft:
        return AuditDraft(
            tenant=self.tenant,
            at=self._clock.now(),
            actor=self._identity.agent_id,
            action=action,
            entry_id=entry_id,
            input_hash=input_hash(inputs),
            details=dict(details or {}),
        )

    def record(
        self,
        action: str,
        inputs: Any,
        *,
        entry_id: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        """Append one record now (call it inside the operation's transaction)."""
        self.record_many([self.draft(action, inputs, entry_id=entry_id, details=details)])

    def record_many(self, drafts: Sequence[AuditDraft], *,
                    earlier: Sequence[AuditDraft] = ()) -> None:
        """Append now, after any queued read records so the log stays in call order
        (``earlier``: read records taken from the queue before, by ``take_reads``)."""
        if self._journal is not None:
            self._journal.settle_with_write()  # journaled reads first: call order
        batch = [*earlier, *self._reads.take(), *drafts]
        if batch:
            self._storage.append_audit(batch)

    def take_reads(self) -> list[AuditDraft]:
        """The queued read records, removed from the queue (a write appends them before
        its own; if it writes nothing, it hands them to ``record_many(earlier=...)``)."""
        return self._reads.take()

    def requeue_reads(self, drafts: Sequence[AuditDraft]) -> None:
        """Queue again read records ``take_reads`` gave to a write that failed."""
        if drafts:
            self._reads.add(drafts)

    def read_drafts(self, action: str, inputs: Any, ids: Iterable[str]) -> list[AuditDraft]:
        """The record of a read call (get, search, curate) with the ids it returned (none
        when reads are not audited)."""
        if not self._record_reads:
            return []
        return [self.draft(action, inputs, details={"ids": list(ids)})]

    def record_read(self, action: str, inputs: Any, ids: Iterable[str]) -> None:
        """Record a read call now (journaled where the store keeps a read journal, else
        queued): ``Services.note_read`` records its accesses in the same entry."""
        drafts = self.read_drafts(action, inputs, ids)
        if drafts and self._journal is not None:
            self._journal.record(drafts, ())
        elif drafts:
            self._reads.add(drafts)

    def record_refusal(self, entry_id: str) -> None:
        """Queue a record of a lookup refused because ``entry_id`` names an entry of
        another partition. Queued like a read record, whatever ``audit_reads`` says: the
        doors answer the refusal exactly as a missing id, so it must not cost a write on
        the caller's path (its timing would tell the two apart). A read-only open
        records none: it can write nothing, and the queued record made its close fail
        with ``ReadOnlyError`` (the CLI's ``get`` answered that instead of the refusal)."""
        if self._read_only:
            return
        self._reads.add([self.draft("refused", {"entry_id": entry_id},
                                    details={"not_visible": entry_id})])

    def flush(self) -> None:
        """Every read recorded so far into the log (settling the journal: this waits for
        a write in progress)."""
        self._reads.flush()
        if self._journal is not None:
            self._journal.settle()

    # reading the log ----------------------------------------------------------------
    def records(self, entry_id: str | None = None) -> list[AuditRecord]:
        self.flush()
        return self._storage.audit_records(self.tenant, entry_id=entry_id)

    def verify(self) -> AuditCheck:
        records = self.records()
        problems = verify_chain(records)
        return AuditCheck(not problems, len(records), tuple(problems),
                          records[-1].hash if records else None)

    def export(self, target: str | IO[str]) -> int:
        """Write this tenant's records as NDJSON (details redacted); returns the count."""
        records = self.records()
        lines = [
            json.dumps(
                {
                    "seq": r.seq,
                    "at": r.at.isoformat(),
                    "actor": r.actor,
                    "action": r.action,
                    "entry_id": r.entry_id,
                    "input_hash": r.input_hash,
                    "details": json.loads(redact(json.dumps(dict(r.details), default=str))),
                    "prev_hash": r.prev_hash,
                    "hash": r.hash,
                },
                sort_keys=True,
                ensure_ascii=False,
            )
            for r in records
        ]
        text = "".join(line + "\n" for line in lines)
        if isinstance(target, str):
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(text)
        else:
            target.write(text)
        return len(records)
