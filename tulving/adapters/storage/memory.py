"""In-memory storage with the same observable behaviour as SQLite (nothing persists).

It passes the same contract suite as the SQL adapters, so unit tests that use it are
testing the real semantics. Transactions snapshot the dicts (entries are immutable
values, so shallow copies suffice) and restore them on error. It is a
:class:`~tulving.ports.storage_base.StorageBase`: it writes the core over its dicts and
inherits the rest (supersede by key, archival, the claims of one writer, the tokens'
and the audit chain's rules); full-text search keeps its own index of terms.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import numpy as np

from tulving.adapters.storage import half_vectors
from tulving.adapters.storage.memory_sync_log import InMemorySyncLog, SyncState
from tulving.adapters.storage.tenant_locks import TenantLocks
from tulving.domain.enrichment import TaskBacklog, TaskFailure, TaskTable
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import StorageError
from tulving.domain.identity import tenant_key
from tulving.domain.query import EntryFilter, ScoredId, entry_matches
from tulving.domain.records import (
    AuditRecord,
    JobRecord,
    SessionRecord,
    TokenRecord,
)
from tulving.ports.embedder import Vectors
from tulving.ports.storage import StorageCapabilities
from tulving.ports.storage_base import StorageBase, bm25, entry_terms


class InMemoryStorage(InMemorySyncLog, StorageBase):
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
        self._terms[entry.id] = entry_terms(entry)

    def insert(self, items: Sequence[tuple[MemoryEntry, Vectors | None]]) -> None:
        with self.transaction():
            for entry, embedding in items:
                if entry.id in self._entries:
                    raise StorageError(f"write rejected by the store: duplicate id {entry.id}")
                self._put(entry)
                if embedding is not None:
                    self._vectors[entry.id] = np.asarray(
                        embedding, dtype=np.float32).reshape(-1).copy()
                    self._logged(entry.id)

    def _active(self, partition: str, key: str) -> MemoryEntry | None:
        for e in self._entries.values():
            if e.partition == partition and e.key == key and e.archived_at is None:
                return e
        return None

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

    def lexical_search(self, match: Sequence[str], flt: EntryFilter, limit: int) -> list[ScoredId]:
        """Okapi BM25 like FTS5's bm25(), over the terms each entry was indexed with."""
        with self._lock:
            docs = {i: self._terms[i] for i in self.ids_matching(flt)}
            corpus = list(self._terms.values())
        return bm25(match, docs, corpus, limit)

    # vectors ------------------------------------------------------------------------
    def vectors_for(self, entry_ids: Sequence[str]) -> dict[str, Vectors]:
        with self._lock:
            return {i: self._vectors[i].copy() for i in entry_ids if i in self._vectors}

    def put_vectors(self, items: Sequence[tuple[str, Vectors]]) -> None:
        with self.transaction():
            for entry_id, vec in items:
                if entry_id in self._entries:
                    self._vectors[entry_id] = np.asarray(vec, dtype=np.float32).reshape(-1).copy()
                    self._logged(entry_id)

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

    def add_audit(self, records: Sequence[AuditRecord]) -> None:
        with self.transaction():
            self._audit.extend(records)

    def audit_records(
        self, tenant: str | None = None, *, entry_id: str | None = None
    ) -> list[AuditRecord]:
        with self._lock:
            return [r for r in self._audit if (tenant is None or r.tenant == tenant)
                    and (entry_id is None or r.entry_id == entry_id)]

    def put_job(self, job: JobRecord) -> None:
        with self.transaction():
            self._jobs[job.id] = job

    def jobs(self) -> list[JobRecord]:
        with self._lock:
            return list(self._jobs.values())

    # tokens (their rules are StorageBase's) -------------------------------------------
    def put_token(self, token: TokenRecord) -> None:
        with self.transaction():
            self._tokens[token.id] = token

    def tokens(self) -> list[TokenRecord]:
        with self._lock:
            return list(self._tokens.values())

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



def create(context: Any = None) -> InMemoryStorage:
    return InMemoryStorage()
