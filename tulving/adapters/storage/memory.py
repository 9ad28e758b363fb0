"""In-memory storage with the same observable behaviour as SQLite (nothing persists).

It passes the same contract suite as the SQL adapters, so unit tests that use it are
testing the real semantics. Transactions snapshot the dicts (entries are immutable
values, so shallow copies suffice) and restore them on error.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import attrs
import numpy as np

from tulving.adapters.storage import half_vectors
from tulving.adapters.storage.memory_sync_log import SyncLogMixin, SyncState
from tulving.adapters.storage.tenant_locks import TenantLocks
from tulving.domain.audit_chain import GENESIS, record_hash
from tulving.domain.enrichment import TaskBacklog, TaskFailure, TaskTable
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ConfigError, StorageError
from tulving.domain.identity import tenant_key
from tulving.domain.lexical import searchable_text, words
from tulving.domain.query import EntryFilter, ScoredId, entry_matches
from tulving.domain.records import (
    AuditDraft,
    AuditRecord,
    JobRecord,
    SessionRecord,
    TokenRecord,
)
from tulving.domain.types import ArchiveReason
from tulving.ports.embedder import Vectors
from tulving.ports.storage import Archival, StorageCapabilities, Supersession, WriteOutcome


def _stem(word: str) -> str:
    """A light suffix stripper so "deploys"/"deployed" meet "deploy" as in FTS5 porter."""
    for suffix in ("ingly", "edly", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _terms(text: str) -> list[str]:
    return [_stem(w) for w in words(text)]


class InMemoryStorage(SyncLogMixin):
    name = "memory"

    def __init__(self) -> None:
        self.location = ":memory:"
        self.capabilities = StorageCapabilities(persistent=False)
        self._lock = threading.RLock()
        self._entries: dict[str, MemoryEntry] = {}
        self._vectors: dict[str, Vectors] = {}
        # the strong tier's vectors: (entry, model) -> (content hash, float16 bytes)
        self._strong: dict[tuple[str, str], tuple[str, bytes]] = {}
        self._terms: dict[str, Counter[str]] = {}
        self._meta: dict[str, str] = {}
        self._sessions: dict[str, SessionRecord] = {}
        self._audit: list[AuditRecord] = []
        self._jobs: dict[str, JobRecord] = {}
        #: The vector change log (``VectorChangeLog``): (position, entry id), the last
        #: position handed out, and the position trimmed up to.
        self._log: list[tuple[int, str]] = []
        self._log_at = 0
        self._log_trimmed = 0
        self._sync = SyncState()  # the sync log (memory_sync_log)
        self._merge_locks = TenantLocks()
        self._tokens: dict[str, TokenRecord] = {}
        self._tasks = TaskTable()  # enrichment tasks (``EnrichmentTasks``)
        self._depth = 0
        self._open = False

    def open(self) -> None:
        self._open = True
        self._meta.setdefault("schema_version", "1")

    def close(self) -> None:
        self._open = False

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock:
            snapshot = None
            if self._depth == 0:
                snapshot = (dict(self._entries), dict(self._vectors), dict(self._terms),
                            dict(self._meta), dict(self._sessions), list(self._audit),
                            dict(self._jobs), self._sync.copy(), dict(self._tokens),
                            list(self._log), self._log_at, self._tasks.copy(),
                            dict(self._strong))
            self._depth += 1
            try:
                yield
            except BaseException:
                if snapshot is not None:
                    (self._entries, self._vectors, self._terms, self._meta, self._sessions,
                     self._audit, self._jobs, self._sync, self._tokens, self._log,
                     self._log_at, self._tasks, self._strong) = snapshot
                raise
            finally:
                self._depth -= 1

    # enrichment tasks (``EnrichmentTasks``: the rules are ``domain.enrichment``'s) -----
    def add_tasks(self, kind: str, targets: Sequence[str], at: datetime) -> int:
        with self.transaction():
            return self._tasks.add(kind, targets, at)

    def claim_tasks(self, kind: str, owner: str, now: datetime, until: datetime,
                    limit: int) -> list[str]:
        with self.transaction():
            return self._tasks.claim(kind, owner, now, until, limit)

    def finish_tasks(self, kind: str, targets: Sequence[str], owner: str) -> list[str]:
        with self.transaction():
            return self._tasks.finish(kind, targets, owner)

    def release_tasks(self, kind: str, targets: Sequence[str], owner: str, at: datetime,
                      *, error: str | None = None, give_up_after: int = 3) -> None:
        with self.transaction():
            self._tasks.release(kind, targets, owner, at, error, give_up_after)

    def clear_leases(self) -> int:
        with self.transaction():
            return self._tasks.clear_leases()

    def task_backlog(self, now: datetime) -> Mapping[str, TaskBacklog]:
        with self._lock:
            return self._tasks.backlog(now)

    def failed_tasks(self, limit: int = 100) -> list[TaskFailure]:
        with self._lock:
            return self._tasks.failures(limit)

    def retry_failed_tasks(self, kind: str | None = None) -> int:
        with self.transaction():
            return self._tasks.retry(kind)

    # entries -----------------------------------------------------------------------
    def _logged(self, entry_id: str) -> None:
        self._log_at += 1
        self._log.append((self._log_at, entry_id))

    def _put(self, entry: MemoryEntry) -> None:
        before = self._entries.get(entry.id)
        if before is not None and (before.archived_at is None) != (entry.archived_at is None):
            self._logged(entry.id)
        self._entries[entry.id] = entry
        self._terms[entry.id] = Counter(_terms(searchable_text(
            entry.content, entry.key, entry.tags, entry.entity, entry.attribute, entry.value)))

    def _write_one(self, entry: MemoryEntry, embedding: Vectors | None) -> WriteOutcome:
        if entry.id in self._entries:
            raise StorageError(f"write rejected by the store: duplicate id {entry.id}")
        old = None
        if entry.key is not None:
            old = self._active(entry.partition, entry.key)
            if old is not None:
                at = entry.created_at
                old = attrs.evolve(
                    old, archived_at=at, archive_reason=ArchiveReason.SUPERSEDED,
                    superseded_by=entry.id, expired_at=old.expired_at or at, updated_at=at,
                )
                self._put(old)
                entry = attrs.evolve(entry, supersedes=old.id)
        self._put(entry)
        if embedding is not None:
            self._vectors[entry.id] = np.asarray(embedding, dtype=np.float32).reshape(-1).copy()
            self._logged(entry.id)
        return WriteOutcome(entry=entry, superseded=old)

    def _active(self, partition: str, key: str) -> MemoryEntry | None:
        for e in self._entries.values():
            if e.partition == partition and e.key == key and e.archived_at is None:
                return e
        return None

    def write(self, entry: MemoryEntry, embedding: Vectors | None = None) -> WriteOutcome:
        return self.write_many([(entry, embedding)])[0]

    def write_many(
        self, items: Sequence[tuple[MemoryEntry, Vectors | None]]
    ) -> list[WriteOutcome]:
        with self.transaction():
            return [self._write_one(e, v) for e, v in items]

    def replace(self, entry: MemoryEntry) -> None:
        with self.transaction():
            if entry.id not in self._entries:
                raise StorageError(f"no entry {entry.id} to replace")
            if entry.archived_at is None and entry.key is not None:
                holder = self._active(entry.partition, entry.key)
                if holder is not None and holder.id != entry.id:
                    raise StorageError(f"another active entry holds key {entry.key!r}")
            self._put(entry)

    def get(self, entry_id: str) -> MemoryEntry | None:
        return self._entries.get(entry_id)

    def get_many(self, entry_ids: Sequence[str]) -> list[MemoryEntry]:
        with self._lock:
            return [self._entries[i] for i in entry_ids if i in self._entries]

    def active_by_key(self, partitions: Sequence[str], key: str) -> MemoryEntry | None:
        with self._lock:
            for partition in partitions:
                found = self._active(partition, key)
                if found is not None:
                    return found
            return None

    def _matching(self, flt: EntryFilter) -> list[MemoryEntry]:
        with self._lock:
            return [e for e in self._entries.values() if entry_matches(e, flt)]

    def query(
        self,
        flt: EntryFilter,
        *,
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[MemoryEntry]:
        found = sorted(self._matching(flt), key=lambda e: e.id, reverse=newest_first)
        end = None if limit is None else offset + limit
        return found[offset:end]

    def count(self, flt: EntryFilter) -> int:
        return len(self._matching(flt))

    def ids_matching(self, flt: EntryFilter) -> set[str]:
        return {e.id for e in self._matching(flt)}

    def archive(self, archivals: Sequence[Archival]) -> int:
        changed = 0
        with self.transaction():
            for a in archivals:
                e = self._entries.get(a.entry_id)
                if e is None or e.archived_at is not None:
                    continue
                self._put(attrs.evolve(
                    e, archived_at=a.at, archive_reason=a.reason,
                    superseded_by=a.superseded_by or e.superseded_by,
                    expired_at=e.expired_at or a.at, updated_at=a.at,
                ))
                changed += 1
        return changed

    def unarchive(self, entry_ids: Sequence[str], at: datetime) -> int:
        changed = 0
        with self.transaction():
            for entry_id in entry_ids:
                e = self._entries.get(entry_id)
                if e is None or e.archived_at is None:
                    continue
                if e.key is not None and self._active(e.partition, e.key) is not None:
                    raise StorageError(
                        f"cannot restore: another active entry holds key {e.key!r}"
                    )
                self._put(attrs.evolve(e, archived_at=None, archive_reason=None,
                                       expired_at=None, updated_at=at))
                changed += 1
        return changed

    def delete(self, entry_ids: Sequence[str]) -> int:
        deleted = 0
        with self.transaction():
            for entry_id in entry_ids:
                if self._entries.pop(entry_id, None) is not None:
                    deleted += 1
                if self._vectors.pop(entry_id, None) is not None:
                    self._logged(entry_id)
                self._terms.pop(entry_id, None)
                for pair in [p for p in self._strong if p[0] == entry_id]:
                    del self._strong[pair]
        return deleted

    def touch(self, entry_ids: Sequence[str], at: datetime) -> None:
        with self.transaction():
            for entry_id in entry_ids:
                e = self._entries.get(entry_id)
                if e is not None:
                    self._entries[entry_id] = attrs.evolve(
                        e, access_count=e.access_count + 1, last_accessed_at=at
                    )

    def lexical_search(self, match: Sequence[str], flt: EntryFilter, limit: int) -> list[ScoredId]:
        """Okapi BM25 (k1=1.2, b=0.75) over stemmed words, like FTS5's bm25()."""
        query = {_stem(t) for m in match for t in words(m)}
        if not query or limit <= 0:
            return []
        with self._lock:
            docs = {i: self._terms[i] for i in self.ids_matching(flt)}
            total = len(self._terms) or 1
            avg = sum(sum(c.values()) for c in self._terms.values()) / total
            df = {t: sum(1 for c in self._terms.values() if t in c) for t in query}
        scored: list[ScoredId] = []
        for entry_id, counts in docs.items():
            length = sum(counts.values())
            score = 0.0
            for term in query:
                tf = counts.get(term, 0)
                if not tf:
                    continue
                idf = math.log((total - df[term] + 0.5) / (df[term] + 0.5) + 1.0)
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / (avg or 1)))
            if score > 0:
                scored.append(ScoredId(entry_id, score))
        scored.sort(key=lambda s: (-s.score, s.id))
        return scored[:limit]

    def adjacent(self, entry_ids: Sequence[str], flt: EntryFilter) -> dict[str, tuple[str, ...]]:
        with self._lock:
            wanted = {i: self._entries[i].valid_from for i in entry_ids if i in self._entries}
            times = set(wanted.values())
            groups: dict[datetime, list[str]] = {}
            for e in self._matching(flt):
                if e.valid_from in times:
                    groups.setdefault(e.valid_from, []).append(e.id)
        out: dict[str, tuple[str, ...]] = {}
        for entry_id, at in wanted.items():
            group = sorted(groups.get(at, ()))
            at_index = bisect.bisect_left(group, entry_id)
            before = group[at_index - 1] if at_index > 0 else None
            later = bisect.bisect_right(group, entry_id)
            after = group[later] if later < len(group) else None
            out[entry_id] = tuple(i for i in (before, after) if i is not None)
        return out

    def tag_counts(self, flt: EntryFilter) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for e in self._matching(flt):
            counts.update(e.tags)
        return dict(sorted(counts.items()))

    # vectors ------------------------------------------------------------------------
    def vectors_for(self, entry_ids: Sequence[str]) -> dict[str, Vectors]:
        with self._lock:
            return {i: self._vectors[i].copy() for i in entry_ids if i in self._vectors}

    def iter_vectors(self, flt: EntryFilter, batch: int = 1000) -> Iterator[tuple[str, Vectors]]:
        ids = sorted(self.ids_matching(flt))
        for entry_id in ids:
            vec = self._vectors.get(entry_id)
            if vec is not None:
                yield entry_id, vec.copy()

    def put_vectors(self, items: Sequence[tuple[str, Vectors]]) -> None:
        with self.transaction():
            for entry_id, vec in items:
                if entry_id in self._entries:
                    self._vectors[entry_id] = np.asarray(vec, dtype=np.float32).reshape(-1).copy()
                    self._logged(entry_id)

    def missing_vectors(self, flt: EntryFilter, limit: int) -> list[MemoryEntry]:
        found = [e for e in self._matching(flt) if e.id not in self._vectors]
        return sorted(found, key=lambda e: e.id)[:limit]

    def clear_vectors(self) -> None:
        with self.transaction():
            for entry_id in sorted(self._vectors):
                self._logged(entry_id)
            self._vectors.clear()

    # the strong tier's vectors (see ports.storage.StrongVectors) ------------------------
    def strong_vectors_for(self, model: str, entry_ids: Sequence[str]) -> dict[str, Vectors]:
        out: dict[str, Vectors] = {}
        with self._lock:
            for entry_id in entry_ids:
                stored, entry = self._strong.get((entry_id, model)), self._entries.get(entry_id)
                if stored is not None and entry is not None and stored[0] == entry.content_hash:
                    out[entry_id] = half_vectors.from_bytes(stored[1])
        return out

    def put_strong_vectors(self, model: str, items: Sequence[tuple[str, Vectors]]) -> int:
        rows = [(i, half_vectors.to_bytes(v)) for i, v in items]
        written = 0
        with self.transaction():
            for entry_id, blob in rows:
                entry = self._entries.get(entry_id)
                if entry is not None:
                    self._strong[(entry_id, model)] = (entry.content_hash, blob)
                    written += 1
        return written

    def lacking_strong_vectors(self, model: str, limit: int) -> list[str]:
        with self._lock:
            lacking = [e.id for e in self._entries.values() if e.archived_at is None
                       and self._strong.get((e.id, model), ("",))[0] != e.content_hash]
        return sorted(lacking)[: int(limit)]

    def count_strong_vectors(self, model: str) -> int:
        with self._lock:
            return sum(1 for _, m in self._strong if m == model)

    def clear_strong_vectors(self, model: str) -> None:
        with self.transaction():
            for pair in [p for p in self._strong if p[1] == model]:
                del self._strong[pair]

    # the vector change log (see ports.storage.VectorChangeLog) ---------------------------
    def vector_log_position(self) -> int:
        return self._log_at

    def vector_changes(self, after: int, limit: int | None = None
                       ) -> tuple[list[str], int] | None:
        with self._lock:
            if int(after) < self._log_trimmed:
                return None
            rows = [(seq, i) for seq, i in self._log if seq > after]
            if limit is not None:
                rows = rows[: int(limit)]
            if not rows:
                return [], int(after)
            return list(dict.fromkeys(i for _, i in rows)), rows[-1][0]

    def trim_vector_log(self, upto: int) -> None:
        with self.transaction():
            if int(upto) > self._log_trimmed:
                self._log = [(seq, i) for seq, i in self._log if seq > upto]
                self._log_trimmed = int(upto)

    # meta, sessions, audit, jobs -------------------------------------------------------
    def get_meta(self, name: str) -> str | None:
        return self._meta.get(name)

    def set_meta(self, name: str, value: str) -> None:
        with self.transaction():
            self._meta[name] = value

    def put_session(self, session: SessionRecord) -> None:
        with self.transaction():
            if session.ended_at is None and any(
                    s.id != session.id and s.ended_at is None and s.agent_id == session.agent_id
                    and s.tenant == session.tenant and s.implicit == session.implicit
                    for s in self._sessions.values()):
                raise StorageError(f"session {session.id} rejected by the store: another "
                                   "open session of its kind exists for this agent")
            self._sessions[session.id] = session

    def get_session(self, session_id: str) -> SessionRecord | None:
        return self._sessions.get(session_id)

    def open_sessions(self, agent_id: str, tenant: str) -> list[SessionRecord]:
        with self._lock:
            found = [s for s in self._sessions.values()
                     if s.agent_id == agent_id and s.tenant == tenant and s.ended_at is None]
        return sorted(found, key=lambda s: s.started_at)

    def append_audit(self, drafts: Sequence[AuditDraft]) -> list[AuditRecord]:
        out: list[AuditRecord] = []
        with self.transaction():
            for d in drafts:
                prev = next((r.hash for r in reversed(self._audit) if r.tenant == d.tenant),
                            GENESIS)
                seq = (self._audit[-1].seq if self._audit else 0) + 1
                details = dict(d.details)
                d = attrs.evolve(d, at=d.at.astimezone(UTC))  # the hash must survive a read-back
                digest = record_hash(prev, seq, d.tenant, d.at, d.actor, d.action,
                                     d.entry_id, d.input_hash, details)
                rec = AuditRecord(seq, d.tenant, d.at, d.actor, d.action, d.entry_id,
                                  d.input_hash, details, prev, digest)
                self._audit.append(rec)
                out.append(rec)
        return out

    def audit_records(
        self, tenant: str | None = None, *, entry_id: str | None = None
    ) -> list[AuditRecord]:
        with self._lock:
            return [r for r in self._audit if (tenant is None or r.tenant == tenant)
                    and (entry_id is None or r.entry_id == entry_id)]

    def enqueue(self, job: JobRecord) -> JobRecord:
        with self.transaction():
            if job.idempotency_key is not None:
                for existing in self._jobs.values():
                    if existing.idempotency_key == job.idempotency_key:
                        return existing
            self._jobs[job.id] = job
        return job

    def pending_jobs(self, kind: str | None = None) -> list[JobRecord]:
        with self._lock:
            found = [j for j in self._jobs.values()
                     if j.status == "pending" and (kind is None or j.kind == kind)]
        return sorted(found, key=lambda j: (j.created_at, j.id))

    def finish_job(self, job_id: str, *, error: str | None = None) -> None:
        with self.transaction():
            job = self._jobs.get(job_id)
            if job is not None:
                self._jobs[job_id] = attrs.evolve(
                    job, status="failed" if error else "done", error=error,
                    attempts=job.attempts + 1,
                )

    # shared state (one process holds this store: its lock is the whole story) ----------
    def lock_tenant_writes(self, tenant: str) -> None:
        """Transactions hold the store's lock already: writers are serial."""

    def link_conflicts(self, pairs: Sequence[tuple[str, str]], at: datetime) -> int:
        changed: set[str] = set()
        with self.transaction():
            for a, b in pairs:
                if a not in self._entries or b not in self._entries or a == b:
                    continue
                for one, other in ((a, b), (b, a)):
                    e = self._entries[one]
                    if other not in e.conflict_ids:
                        self._entries[one] = attrs.evolve(
                            e, conflict_ids=(*e.conflict_ids, other), updated_at=at)
                        changed.add(one)
        return len(changed)

    def supersede_entries(self, items: Sequence[Supersession]) -> list[str]:
        done: list[str] = []
        with self.transaction():
            for s in sorted(items, key=lambda s: s.entry_id):
                e = self._entries.get(s.entry_id)
                if e is None or e.archived_at is not None:
                    continue
                self._put(attrs.evolve(
                    e, archived_at=s.at, archive_reason=ArchiveReason.SUPERSEDED,
                    superseded_by=s.superseded_by, valid_until=s.valid_until,
                    expired_at=e.expired_at or s.at, updated_at=s.at, signature=s.signature,
                ))
                done.append(s.entry_id)
        return done

    def open_session(self, session: SessionRecord) -> SessionRecord:
        with self.transaction():
            for s in self._sessions.values():
                if (s.agent_id == session.agent_id and s.tenant == session.tenant
                        and s.ended_at is None and s.implicit == session.implicit):
                    return s
            self._sessions[session.id] = session
        return session

    def end_session(self, session_id: str, at: datetime, reason: str) -> SessionRecord | None:
        with self.transaction():
            s = self._sessions.get(session_id)
            if s is None or s.ended_at is not None:
                return None
            ended = attrs.evolve(s, ended_at=at, end_reason=reason)
            self._sessions[session_id] = ended
        return ended

    def set_session_summary(self, session_id: str, summary_id: str | None) -> None:
        with self.transaction():
            s = self._sessions.get(session_id)
            if s is not None:
                self._sessions[session_id] = attrs.evolve(s, summary_id=summary_id)

    def note_session_activity(self, session_id: str, at: datetime) -> None:
        with self.transaction():
            s = self._sessions.get(session_id)
            if s is not None and s.ended_at is None and s.last_activity_at < at:
                self._sessions[session_id] = attrs.evolve(s, last_activity_at=at)

    def claim_job(self, job_id: str, owner: str, until: datetime, now: datetime) -> bool:
        with self.transaction():
            job = self._jobs.get(job_id)
            if job is None or job.status != "pending" or (
                    job.claimed_by not in (None, owner)
                    and job.claimed_until is not None and job.claimed_until >= now):
                return False
            self._jobs[job_id] = attrs.evolve(job, claimed_by=owner, claimed_until=until)
        return True

    def take_job(self, job_id: str) -> JobRecord | None:
        with self.transaction():
            job = self._jobs.get(job_id)
        return job if job is not None and job.status == "pending" else None

    def get_job(self, job_id: str) -> JobRecord | None:
        return self._jobs.get(job_id)

    def add_token(self, token: TokenRecord) -> bool:
        with self.transaction():
            if token.id in self._tokens or any(
                    t.name == token.name and t.revoked_at is None for t in self._tokens.values()):
                return False
            self._tokens[token.id] = attrs.evolve(token, revoked_at=None)
        return True

    def get_token(self, token_id: str) -> TokenRecord | None:
        token = self._tokens.get(token_id)
        return token if token is not None and token.revoked_at is None else None

    def live_tokens(self) -> list[TokenRecord]:
        with self._lock:
            live = [t for t in self._tokens.values() if t.revoked_at is None]
        return sorted(live, key=lambda t: (t.created_at, t.id))

    def revoke_token(self, id_or_name: str, at: datetime) -> TokenRecord | None:
        with self.transaction():
            live = [t for t in self._tokens.values() if t.revoked_at is None]
            found = next((t for t in live if t.id == id_or_name),
                         next((t for t in live if t.name == id_or_name), None))
            if found is None:
                return None
            gone = attrs.evolve(found, revoked_at=at)
            self._tokens[found.id] = gone
        return gone

    def active_entries_by_tenant(self) -> Mapping[str, int]:
        """``EntryCensus``: active entries per tenant."""
        counts: dict[str, int] = {}
        with self._lock:
            for e in self._entries.values():
                if e.archived_at is None:
                    tenant = tenant_key(e.user_id, e.workspace_id)
                    counts[tenant] = counts.get(tenant, 0) + 1
        return counts

    def stats(self) -> Mapping[str, Any]:
        return {"engine": "memory", "path": ":memory:", "bytes": 0,
                "rows": len(self._entries), "vectors": len(self._vectors),
                "audit_records": len(self._audit)}

    def maintenance(self, action: str) -> Mapping[str, Any]:
        if action in ("vacuum", "checkpoint"):
            return {"action": action}
        if action == "integrity":
            return {"action": "integrity", "ok": True, "messages": ["ok"]}
        raise ConfigError(f"unknown maintenance action {action!r}: vacuum, checkpoint, integrity")


def create(context: Any = None) -> InMemoryStorage:
    return InMemoryStorage()
