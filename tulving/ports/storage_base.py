"""``StorageBase``: the storage port with defaults, for a third party's adapter.

The port (:class:`~tulving.ports.storage.Storage`) asks for about fifty methods; most of
them follow from a few (fsspec's ``AbstractFileSystem`` leaves about ten of its methods
to implement and derives the rest). A subclass of ``StorageBase`` writes the **core**
below and inherits every other method of the port, derived from the core; an engine
that can do one better overrides it (the built-in stores override most). Core methods
raise ``NotImplementedError`` naming themselves until a subclass writes them.

The core (22): ``open``, ``close``, ``transaction``; entries: ``insert``, ``replace``,
``get_many``, ``query``, ``delete``; vectors: ``vectors_for``, ``put_vectors``,
``clear_vectors``; ``get_meta``, ``set_meta``; sessions: ``put_session``,
``get_session``, ``open_sessions``; audit: ``add_audit``, ``audit_records``; jobs:
``put_job``, ``jobs``; tokens: ``put_token``, ``tokens``.

Derived: ``write``/``write_many`` (supersede by key, atomic), ``get``,
``active_by_key``, ``count``, ``ids_matching``, ``archive``, ``unarchive``, ``touch``,
``lexical_search`` (Okapi BM25 over the filter's entries), ``adjacent``, ``tag_counts``,
``iter_vectors``, ``missing_vectors``, ``append_audit`` (the hash chain), the job queue
and its claims, the session claims, the tokens' rules, ``lock_tenant_writes``,
``link_conflicts``, ``supersede_entries``, ``stats`` and ``maintenance``.

**One writer.** The derived claims (a session opened once, a job taken once, a token
name live once) are each one ``transaction()`` of reads and writes, which is atomic
only if the store's transactions are serial (one lock, one process writing): a store
that several processes write (``capabilities.multi_process_writers``) must override
them with claims its engine makes in one statement, as the PostgreSQL adapter does.
Most derived reads scan what ``query`` returns: correct at any size, fast at small ones.

The optional capabilities (``BriefReader``, ``ReadOnlyOpen``, ``VectorChangeLog``,
``EnrichmentTasks``, ``StrongVectors``, ...) stay opt-in: a subclass declares one by implementing its
protocol. The contract suite (``contract_tests.storage.StorageContract``) runs the same
on a subclass that writes only the core (``docs/adapters/index.md`` has one) and on the
built-in stores.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, NoReturn

import attrs

from tulving.domain.audit_chain import GENESIS, record_hash
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ConfigError, StorageError
from tulving.domain.lexical import searchable_text, words
from tulving.domain.query import EntryFilter, ScoredId
from tulving.domain.records import (
    AuditDraft,
    AuditRecord,
    JobRecord,
    SessionRecord,
    TokenRecord,
)
from tulving.domain.types import ArchiveReason
from tulving.ports.embedder import Vectors
from tulving.ports.storage import (
    Archival,
    Storage,
    StorageCapabilities,
    Supersession,
    WriteOutcome,
)

#: Every entry, archived ones included, of every partition: what the derived reads scan.
_EVERYTHING = EntryFilter(partitions=None, include_archived=True)


def _core(method: str) -> NoReturn:
    raise NotImplementedError(
        f"{method} is part of the core a StorageBase subclass writes "
        "(tulving.ports.storage_base; docs/adapters/index.md)")


def _stem(word: str) -> str:
    """A light suffix stripper, so "deploys"/"deployed" meet "deploy" as FTS5's porter
    stemmer has them meet."""
    for suffix in ("ingly", "edly", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def entry_terms(entry: MemoryEntry) -> Counter[str]:
    """The stemmed words full-text search matches ``entry`` by (content, key, tags and a
    fact's parts), with their counts."""
    return Counter(_stem(w) for w in words(searchable_text(
        entry.content, entry.key, entry.tags, entry.entity, entry.attribute, entry.value)))


def bm25(match: Sequence[str], docs: Mapping[str, Counter[str]],
         corpus: Sequence[Counter[str]], limit: int) -> list[ScoredId]:
    """Okapi BM25 (k1=1.2, b=0.75, FTS5's bm25()) of ``docs`` for the ``match`` words,
    with document frequencies from ``corpus``; best first, ties by id."""
    query = {_stem(t) for m in match for t in words(m)}
    if not query or limit <= 0:
        return []
    total = len(corpus) or 1
    average = sum(sum(c.values()) for c in corpus) / total or 1
    df = {t: sum(1 for c in corpus if t in c) for t in query}
    scored: list[ScoredId] = []
    for entry_id, counts in docs.items():
        length = sum(counts.values())
        score = 0.0
        for term in query:
            tf = counts.get(term, 0)
            if tf:
                idf = math.log((total - df[term] + 0.5) / (df[term] + 0.5) + 1.0)
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))
        if score > 0:
            scored.append(ScoredId(entry_id, score))
    scored.sort(key=lambda s: (-s.score, s.id))
    return scored[:limit]


class StorageBase:
    """The storage port with every method but the core derived (see the module doc)."""

    name: str = "storage"
    #: What the adapter can do (the flags of ``StorageCapabilities``); override it.
    capabilities: StorageCapabilities = StorageCapabilities()
    location: str = ""

    # -- the core: lifecycle --------------------------------------------------------------
    def open(self) -> None:
        """Connect and run pending migrations; idempotent; ``schema_version`` in meta."""
        _core("open")

    def close(self) -> None:
        """Release connections and files; the store is persisted as it stands."""
        _core("close")

    def transaction(self) -> AbstractContextManager[None]:
        """A transaction that rolls back on an exception; nested calls join the outer."""
        _core("transaction")

    # -- the core: entries ----------------------------------------------------------------
    def insert(self, items: Sequence[tuple[MemoryEntry, Vectors | None]]) -> None:
        """Add new entries (and a vector where one is given) as they are, in the current
        transaction; an id already stored is a StorageError. (``write_many`` decides the
        supersedes and calls this.)"""
        _core("insert")

    def replace(self, entry: MemoryEntry) -> None:
        """Persist new field values of an existing entry (same id); a StorageError for an
        unknown id or an active key another active entry of its partition holds."""
        _core("replace")

    def get_many(self, entry_ids: Sequence[str]) -> list[MemoryEntry]:
        """Entries for the ids that exist, in the order of ``entry_ids``."""
        _core("get_many")

    def query(self, flt: EntryFilter, *, limit: int | None = None, offset: int = 0,
              newest_first: bool = True) -> list[MemoryEntry]:
        """Entries matching ``flt`` (``domain.query.entry_matches``) in id order."""
        _core("query")

    def delete(self, entry_ids: Sequence[str]) -> int:
        """Hard delete entries with their vectors; how many there were."""
        _core("delete")

    # -- the core: vectors, meta ----------------------------------------------------------
    def vectors_for(self, entry_ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vector of each id that has one."""
        _core("vectors_for")

    def put_vectors(self, items: Sequence[tuple[str, Vectors]]) -> None:
        """Set the vectors of existing entries (ids of no entry are left out)."""
        _core("put_vectors")

    def clear_vectors(self) -> None:
        """Drop every stored vector."""
        _core("clear_vectors")

    def get_meta(self, name: str) -> str | None:
        _core("get_meta")

    def set_meta(self, name: str, value: str) -> None:
        _core("set_meta")

    # -- the core: sessions, audit, jobs, tokens ------------------------------------------
    def put_session(self, session: SessionRecord) -> None:
        """Insert or replace a session by id."""
        _core("put_session")

    def get_session(self, session_id: str) -> SessionRecord | None:
        _core("get_session")

    def open_sessions(self, agent_id: str, tenant: str) -> list[SessionRecord]:
        """This agent's sessions in this tenant that have not ended, oldest first."""
        _core("open_sessions")

    def add_audit(self, records: Sequence[AuditRecord]) -> None:
        """Keep audit records as they are (``append_audit`` numbers and chains them)."""
        _core("add_audit")

    def audit_records(self, tenant: str | None = None, *,
                      entry_id: str | None = None) -> list[AuditRecord]:
        """Records in append (``seq``) order, of one tenant or all, of one entry or all."""
        _core("audit_records")

    def put_job(self, job: JobRecord) -> None:
        """Insert or replace a job by id."""
        _core("put_job")

    def jobs(self) -> list[JobRecord]:
        """Every job, whatever its status."""
        _core("jobs")

    def put_token(self, token: TokenRecord) -> None:
        """Insert or replace a token by id (revoked ones included)."""
        _core("put_token")

    def tokens(self) -> list[TokenRecord]:
        """Every token, revoked ones included."""
        _core("tokens")

    # -- derived: entries -----------------------------------------------------------------
    def write(self, entry: MemoryEntry, embedding: Vectors | None = None) -> WriteOutcome:
        return self.write_many([(entry, embedding)])[0]

    def write_many(self, items: Sequence[tuple[MemoryEntry, Vectors | None]]
                   ) -> list[WriteOutcome]:
        """In one transaction: each entry with a key supersedes the active entry holding
        that key in its partition (archived, ``superseded``, linked both ways)."""
        outcomes = []
        with self.transaction():
            for entry, vector in items:
                old = None
                if entry.key is not None:
                    old = self.active_by_key([entry.partition], entry.key)
                if old is not None:
                    at = entry.created_at
                    old = attrs.evolve(old, archived_at=at,
                                       archive_reason=ArchiveReason.SUPERSEDED,
                                       superseded_by=entry.id,
                                       expired_at=old.expired_at or at, updated_at=at)
                    self.replace(old)
                    entry = attrs.evolve(entry, supersedes=old.id)
                self.insert([(entry, vector)])
                outcomes.append(WriteOutcome(entry=entry, superseded=old))
        return outcomes

    def get(self, entry_id: str) -> MemoryEntry | None:
        found = self.get_many([entry_id])
        return found[0] if found else None

    def active_by_key(self, partitions: Sequence[str], key: str) -> MemoryEntry | None:
        for partition in partitions:
            found = [e for e in self.query(EntryFilter(partitions=(partition,),
                                                       key_prefix=key))
                     if e.key == key]
            if found:
                return found[0]
        return None

    def count(self, flt: EntryFilter) -> int:
        return len(self.ids_matching(flt))

    def ids_matching(self, flt: EntryFilter) -> set[str]:
        return {e.id for e in self.query(flt)}

    def archive(self, archivals: Sequence[Archival]) -> int:
        changed = 0
        with self.transaction():
            for a in archivals:
                e = self.get(a.entry_id)
                if e is None or e.archived_at is not None:
                    continue
                self.replace(attrs.evolve(
                    e, archived_at=a.at, archive_reason=a.reason,
                    superseded_by=a.superseded_by or e.superseded_by,
                    expired_at=e.expired_at or a.at, updated_at=a.at))
                changed += 1
        return changed

    def unarchive(self, entry_ids: Sequence[str], at: datetime) -> int:
        changed = 0
        with self.transaction():
            for e in self.get_many(entry_ids):
                if e.archived_at is None:
                    continue
                if e.key is not None and self.active_by_key([e.partition], e.key):
                    raise StorageError(
                        f"cannot restore: another active entry holds key {e.key!r}")
                self.replace(attrs.evolve(e, archived_at=None, archive_reason=None,
                                          expired_at=None, updated_at=at))
                changed += 1
        return changed

    def touch(self, entry_ids: Sequence[str], at: datetime) -> None:
        reads = Counter(entry_ids)  # an id named twice was read twice
        with self.transaction():
            for e in self.get_many(list(reads)):
                self.replace(attrs.evolve(e, access_count=e.access_count + reads[e.id],
                                          last_accessed_at=at))

    def lexical_search(self, match: Sequence[str], flt: EntryFilter,
                       limit: int) -> list[ScoredId]:
        """BM25 over every stored entry's words (document frequencies from the whole
        store, as an FTS index has them), scored for the entries ``flt`` allows."""
        corpus = {e.id: entry_terms(e) for e in self.query(_EVERYTHING)}
        allowed = self.ids_matching(flt)
        docs = {i: terms for i, terms in corpus.items() if i in allowed}
        return bm25(match, docs, list(corpus.values()), limit)

    def adjacent(self, entry_ids: Sequence[str],
                 flt: EntryFilter) -> dict[str, tuple[str, ...]]:
        wanted = {e.id: e.valid_from for e in self.get_many(entry_ids)}
        times = set(wanted.values())
        groups: dict[datetime, list[str]] = {}
        for e in self.query(flt, newest_first=False):
            if e.valid_from in times:
                groups.setdefault(e.valid_from, []).append(e.id)
        out: dict[str, tuple[str, ...]] = {}
        for entry_id, at in wanted.items():
            group = sorted(groups.get(at, ()))
            before = [i for i in group if i < entry_id]
            after = [i for i in group if i > entry_id]
            out[entry_id] = tuple([*before[-1:], *after[:1]])
        return out

    def tag_counts(self, flt: EntryFilter) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for e in self.query(flt):
            counts.update(e.tags)
        return dict(sorted(counts.items()))

    # -- derived: vectors -----------------------------------------------------------------
    def iter_vectors(self, flt: EntryFilter,
                     batch: int = 1000) -> Iterator[tuple[str, Vectors]]:
        ids = sorted(self.ids_matching(flt))
        for start in range(0, len(ids), batch):
            chunk = ids[start:start + batch]
            found = self.vectors_for(chunk)
            for entry_id in chunk:
                if entry_id in found:
                    yield entry_id, found[entry_id]

    def missing_vectors(self, flt: EntryFilter, limit: int) -> list[MemoryEntry]:
        missing = []
        for e in self.query(flt, newest_first=False):
            if not self.vectors_for([e.id]):
                missing.append(e)
                if len(missing) >= limit:
                    break
        return missing

    # -- derived: audit -------------------------------------------------------------------
    def append_audit(self, drafts: Sequence[AuditDraft]) -> list[AuditRecord]:
        """Number each draft after the store's last record and chain it to its tenant's
        last (``domain.audit_chain``), in one transaction."""
        out: list[AuditRecord] = []
        with self.transaction():
            every = self.audit_records()
            seq = every[-1].seq if every else 0
            last = {r.tenant: r.hash for r in every}
            for d in drafts:
                seq += 1
                at = d.at.astimezone(UTC)  # the hash must survive a read-back
                prev = last.get(d.tenant, GENESIS)
                details = dict(d.details)
                digest = record_hash(prev, seq, d.tenant, at, d.actor, d.action, d.entry_id,
                                     d.input_hash, details)
                out.append(AuditRecord(seq, d.tenant, at, d.actor, d.action, d.entry_id,
                                       d.input_hash, details, prev, digest))
                last[d.tenant] = digest
            self.add_audit(out)
        return out

    # -- derived: jobs --------------------------------------------------------------------
    def get_job(self, job_id: str) -> JobRecord | None:
        return next((j for j in self.jobs() if j.id == job_id), None)

    def enqueue(self, job: JobRecord) -> JobRecord:
        with self.transaction():
            if job.idempotency_key is not None:
                for existing in self.jobs():
                    if existing.idempotency_key == job.idempotency_key:
                        return existing
            self.put_job(job)
        return job

    def pending_jobs(self, kind: str | None = None) -> list[JobRecord]:
        found = [j for j in self.jobs()
                 if j.status == "pending" and (kind is None or j.kind == kind)]
        return sorted(found, key=lambda j: (j.created_at, j.id))

    def finish_job(self, job_id: str, *, error: str | None = None) -> None:
        with self.transaction():
            job = self.get_job(job_id)
            if job is not None:
                self.put_job(attrs.evolve(job, status="failed" if error else "done",
                                          error=error, attempts=job.attempts + 1))

    def claim_job(self, job_id: str, owner: str, until: datetime, now: datetime) -> bool:
        with self.transaction():
            job = self.get_job(job_id)
            if job is None or job.status != "pending" or (
                    job.claimed_by not in (None, owner)
                    and job.claimed_until is not None and job.claimed_until >= now):
                return False
            self.put_job(attrs.evolve(job, claimed_by=owner, claimed_until=until))
        return True

    def take_job(self, job_id: str) -> JobRecord | None:
        job = self.get_job(job_id)
        return job if job is not None and job.status == "pending" else None

    # -- derived: the write order (one writer: its transactions are the whole story) -----
    def lock_tenant_writes(self, tenant: str) -> None:
        """Serial transactions hold the store already: nothing more to lock."""

    def link_conflicts(self, pairs: Sequence[tuple[str, str]], at: datetime) -> int:
        changed: set[str] = set()
        with self.transaction():
            for a, b in pairs:
                if a == b:
                    continue
                found = {e.id: e for e in self.get_many([a, b])}
                if len(found) < 2:
                    continue
                for one, other in ((a, b), (b, a)):
                    e = found[one]
                    if other not in e.conflict_ids:
                        self.replace(attrs.evolve(e, conflict_ids=(*e.conflict_ids, other),
                                                  updated_at=at))
                        changed.add(one)
        return len(changed)

    def supersede_entries(self, items: Sequence[Supersession]) -> list[str]:
        done: list[str] = []
        with self.transaction():
            for s in sorted(items, key=lambda s: s.entry_id):
                e = self.get(s.entry_id)
                if e is None or e.archived_at is not None:
                    continue
                self.replace(attrs.evolve(
                    e, archived_at=s.at, archive_reason=ArchiveReason.SUPERSEDED,
                    superseded_by=s.superseded_by, valid_until=s.valid_until,
                    expired_at=e.expired_at or s.at, updated_at=s.at, signature=s.signature))
                done.append(s.entry_id)
        return done

    # -- derived: session claims ----------------------------------------------------------
    def open_session(self, session: SessionRecord) -> SessionRecord:
        with self.transaction():
            for s in self.open_sessions(session.agent_id, session.tenant):
                if s.implicit == session.implicit:
                    return s
            self.put_session(session)
        return session

    def end_session(self, session_id: str, at: datetime, reason: str) -> SessionRecord | None:
        with self.transaction():
            s = self.get_session(session_id)
            if s is None or s.ended_at is not None:
                return None
            ended = attrs.evolve(s, ended_at=at, end_reason=reason)
            self.put_session(ended)
        return ended

    def set_session_summary(self, session_id: str, summary_id: str | None) -> None:
        with self.transaction():
            s = self.get_session(session_id)
            if s is not None:
                self.put_session(attrs.evolve(s, summary_id=summary_id))

    def note_session_activity(self, session_id: str, at: datetime) -> None:
        with self.transaction():
            s = self.get_session(session_id)
            if s is not None and s.ended_at is None and s.last_activity_at < at:
                self.put_session(attrs.evolve(s, last_activity_at=at))

    # -- derived: tokens ------------------------------------------------------------------
    def add_token(self, token: TokenRecord) -> bool:
        with self.transaction():
            every = self.tokens()
            if any(t.id == token.id or (t.name == token.name and t.revoked_at is None)
                   for t in every):
                return False
            self.put_token(attrs.evolve(token, revoked_at=None))
        return True

    def get_token(self, token_id: str) -> TokenRecord | None:
        return next((t for t in self.tokens() if t.id == token_id and t.revoked_at is None),
                    None)

    def live_tokens(self) -> list[TokenRecord]:
        return sorted((t for t in self.tokens() if t.revoked_at is None),
                      key=lambda t: (t.created_at, t.id))

    def revoke_token(self, id_or_name: str, at: datetime) -> TokenRecord | None:
        with self.transaction():
            live = self.live_tokens()
            found = next((t for t in live if t.id == id_or_name),
                         next((t for t in live if t.name == id_or_name), None))
            if found is None:
                return None
            gone = attrs.evolve(found, revoked_at=at)
            self.put_token(gone)
        return gone

    # -- derived: engine figures ----------------------------------------------------------
    def stats(self) -> Mapping[str, Any]:
        return {"engine": self.name, "path": self.location,
                "rows": self.count(_EVERYTHING), "audit_records": len(self.audit_records())}

    def maintenance(self, action: str) -> Mapping[str, Any]:
        """Nothing to reclaim or check beyond what the engine does itself."""
        if action in ("vacuum", "checkpoint"):
            return {"action": action}
        if action == "integrity":
            return {"action": "integrity", "ok": True, "messages": ["ok"]}
        raise ConfigError(f"unknown maintenance action {action!r}: vacuum, checkpoint, "
                          "integrity")


def _is_the_port(store: StorageBase) -> Storage:
    """Type-checked only: a ``StorageBase`` is the whole port (mypy fails here if not)."""
    return store
