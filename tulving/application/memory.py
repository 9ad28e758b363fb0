"""The ``Memory`` facade: the one object an agent developer uses.

The constructor is cheap (it stores configuration); ``startup()`` opens storage, checks
the embedding model, embeds what is missing and reconciles the vector index. It runs on
first use or explicitly, once, under a lock. Each public method is a thin call into a
service module, so the behaviour lives in small testable units.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, overload

import attrs

from tulving.application import corrections, erasure, retention
from tulving.application.access import AccessTracker
from tulving.application.audit import AuditTrail
from tulving.application.composition import DEFAULT, default_names, normalise_location, resolve
from tulving.application.context import MemoryContext
from tulving.application.contradictions import plan_writes
from tulving.application.curation import Curator
from tulving.application.entry_factory import build_entry, check_time
from tulving.application.governance import Governance, load_signing_key
from tulving.application.jobs import RememberJob
from tulving.application.lifecycle import EvictionReport, evict
from tulving.application.llm_calls import DEFAULT_MAX_CALLS, LLMGateway
from tulving.application.search import Searcher, build_filter
from tulving.application.vector_sync import check_model, embed_missing, reconcile_index
from tulving.application.warnings_once import warn_once
from tulving.application.write_hooks import apply_before_write
from tulving.domain.curated import CuratedContext
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ConfigError, NotFoundError, ScopeError, ValidationError
from tulving.domain.identity import Identity
from tulving.domain.ids import looks_like_id
from tulving.domain.query import EntryFilter, SearchResult
from tulving.domain.types import ArchiveReason, MemoryType
from tulving.domain.write_policy import WritePolicy, parse_policy
from tulving.plugins.hooks import WriteContext
from tulving.plugins.registry import AdapterContext, get_manager
from tulving.ports.storage import Archival, WriteOutcome

Progress = Callable[[str, int, int], None]


#: How many of the active session's latest entries curate() puts first.
WORKING_MEMORY_IN_CURATE = 5


class Memory:
    """Persistent, typed, searchable memory for one agent identity.

    ``Memory(path, agent_id=...)`` with no adapter arguments is the embedded default:
    SQLite at ``path`` + an hnswlib index beside it + the local MiniLM model, offline.
    Pass adapter names (``storage="memory"``, ``embedder="hashing"``) or instances;
    ``embedder=None`` disables semantic search (lexical only, said once).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        agent_id: str,
        user_id: str | None = None,
        workspace_id: str | None = None,
        model_id: str | None = None,
        storage: Any = DEFAULT,
        vectors: Any = DEFAULT,
        embedder: Any = DEFAULT,
        tokenizer: Any = DEFAULT,
        clock: Any = DEFAULT,
        llm: Any = DEFAULT,
        options: Mapping[str, Mapping[str, Any]] | None = None,
        progress: Progress | None = None,
        policy: Mapping[str, Any] | WritePolicy | None = None,
    ) -> None:
        self.identity = Identity(agent_id, user_id, workspace_id, model_id)
        self.location = normalise_location(path)
        self._choices = {"storage": storage, "vectors": vectors, "embedder": embedder,
                         "tokenizer": tokenizer, "clock": clock, "llm": llm}
        self._options = {k: dict(v) for k, v in (options or {}).items()}
        unknown = set(self._options) - set(self._choices)
        if unknown:
            raise ConfigError(f"options for unknown adapter kinds: {', '.join(sorted(unknown))}")
        self._progress = progress
        # governance (see tulving.domain.write_policy): checked here, before anything opens
        self.policy = parse_policy(policy)
        self._signing_key = load_signing_key(self.policy)
        self._lock = threading.RLock()
        self._ctx: MemoryContext | None = None
        self._closed = False

    # lifecycle ------------------------------------------------------------------------
    def startup(self) -> Memory:
        """Open and reconcile everything; idempotent, thread-safe, cheap when done."""
        with self._lock:
            if self._closed:
                raise ConfigError("this Memory is closed")
            if self._ctx is not None:
                return self
            defaults = default_names(self.location)
            opts = self._options
            adapter_ctx = AdapterContext(location=self.location)
            storage = resolve("storage", self._choices["storage"], defaults["storage"],
                              adapter_ctx, opts.get("storage"))
            clock = resolve("clock", self._choices["clock"], "system", adapter_ctx,
                            opts.get("clock"))
            storage.open()
            try:
                adapter_ctx = AdapterContext(location=storage.location, storage=storage)
                embedder = resolve("embedder", self._choices["embedder"], "local",
                                   adapter_ctx, opts.get("embedder"))
                vectors = None
                if embedder is not None:
                    vectors = resolve("vectors", self._choices["vectors"],
                                      defaults["vectors"], adapter_ctx, opts.get("vectors"))
                tokenizer = resolve("tokenizer", self._choices["tokenizer"], "cl100k_base",
                                    adapter_ctx, opts.get("tokenizer"))
                llm_opts = dict(opts.get("llm") or {})
                max_calls = llm_opts.pop("max_calls", DEFAULT_MAX_CALLS)
                max_tokens = llm_opts.pop("max_tokens", None)
                llm = resolve("llm", self._choices["llm"], None, adapter_ctx, llm_opts)
                self._llm = LLMGateway(llm, max_calls=max_calls, max_tokens=max_tokens)
                llm = self._llm.llm
                pm, _registry = get_manager()
                ctx = MemoryContext(
                    identity=self.identity, storage=storage, clock=clock, embedder=embedder,
                    vectors=vectors, tokenizer=tokenizer, llm=llm, hooks=pm.hook,
                )
                if embedder is None:
                    warn_once("no-embedder", "no embedder configured: search runs lexically only")
                else:
                    check_model(ctx, self._progress)
                    if vectors is not None:
                        vectors.open(embedder.dimension)
                    embed_missing(ctx, self._progress)
                    reconcile_index(ctx, self._progress)
            except BaseException:
                storage.close()
                raise
            self._ctx = ctx
            self._access = AccessTracker(storage, clock)
            self._searcher = Searcher(ctx)
            self._audit = AuditTrail(storage, clock, self.identity,
                                     record_reads=self.policy.audit_reads)
            self._governance = Governance(ctx, self.policy, self._audit, self._signing_key)
            self._curator = Curator(ctx, self._searcher)
            self._curator.working_memory = self._explicit_working_memory
            self._start_agent_memory()
            return self

    @property
    def ctx(self) -> MemoryContext:
        if self._ctx is None:
            self.startup()
        assert self._ctx is not None
        return self._ctx

    def close(self) -> None:
        jobs = getattr(self, "_jobs", None)
        if jobs is not None:
            jobs.stop()
        with self._lock:
            if self._ctx is not None:
                ctx, self._ctx = self._ctx, None
                try:
                    self._searcher.close()
                    self._access.flush()
                    self._audit.flush()
                    if ctx.vectors is not None:
                        ctx.vectors.persist()
                        ctx.vectors.close()
                finally:
                    ctx.storage.close()
            self._closed = True

    def __enter__(self) -> Memory:
        return self.startup()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def flush(self) -> None:
        """Write batched access statistics and the vector index cache now."""
        ctx = self.ctx
        self._access.flush()
        self._audit.flush()
        if ctx.vectors is not None:
            ctx.vectors.persist()

    # writes ---------------------------------------------------------------------------
    def store(
        self,
        content: str,
        *,
        type: MemoryType | str,
        key: str | None = None,
        tags: Iterable[str] = (),
        importance: float = 0.5,
        pinned: bool = False,
        metadata: Mapping[str, Any] | None = None,
        valid_from: datetime | None = None,
        dedup: bool = True,
        **more: Any,
    ) -> MemoryEntry:
        """Store one memory. An active entry with the same key (in the same scope) is
        superseded: archived with reason ``superseded`` and linked both ways. So is one
        with the same ``entity``/``attribute`` and another ``value``; an exact or
        near-exact restatement is a no-op (``dedup=False`` turns that off; rules in
        ``tulving.application.contradictions``)."""
        fields = dict(content=content, type=type, key=key, tags=tags, importance=importance,
                      pinned=pinned, metadata=metadata, valid_from=valid_from, dedup=dedup,
                      **more)
        return self._write([fields], "store")[0].entry

    def store_many(self, items: Iterable[Mapping[str, Any]]) -> list[MemoryEntry]:
        """Store a batch in one transaction (all or none); entries come back in order."""
        batch = list(items)
        for i, item in enumerate(batch):
            if not isinstance(item, Mapping):
                raise ValidationError(f"store_many item {i} is not a mapping")
        return [o.entry for o in self._write([dict(i) for i in batch], "store_many")]

    def _write(
        self, batch: list[dict[str, Any]], operation: str, *, session_id: Any = DEFAULT
    ) -> list[WriteOutcome]:
        ctx = self.ctx
        now = ctx.clock.now()
        dedup = [_pop_dedup(fields) for fields in batch]
        if session_id is DEFAULT:
            session_id = self._sessions.for_write()
        hook_ctx = WriteContext(ctx.identity.agent_id, ctx.identity.tenant, operation,
                                self.policy)
        entries = [
            self._governance.seal(apply_before_write(
                ctx.hooks,
                build_entry(ctx.identity, now, fields, session_id=session_id,
                            model_id=ctx.identity.model_id),
                hook_ctx,
            ))
            for fields in batch
        ]
        vectors: list[Any] = [None] * len(entries)
        if ctx.embedder is not None and entries:
            matrix = ctx.embedder.embed([e.content for e in entries])
            vectors = [matrix[i] for i in range(len(entries))]
        plan = plan_writes(ctx, entries, vectors, dedup, now)
        with ctx.storage.transaction():  # the audit record exists iff the write happened
            for changed in plan.updates.values():  # superseded or flagged existing entries
                ctx.storage.replace(self._governance.seal(changed))
            written = ctx.storage.write_many(plan.inserts)
            outcomes = plan.outcomes(written)
            self._audit.record_many([
                self._audit.draft(operation, fields, entry_id=o.entry.id, details={
                    "superseded": o.superseded.id if o.superseded else None,
                    "review": o.entry.review_status.value,
                    "decision": decision,
                })
                for fields, o, decision in zip(batch, outcomes, plan.decisions, strict=True)
            ])
        self._index_outcomes(written, [v for _, v in plan.inserts])
        if plan.unindex and ctx.vectors is not None:
            ctx.vectors.remove(plan.unindex)
        self._sessions.touch(session_id)
        return outcomes

    def _index_outcomes(self, outcomes: Sequence[WriteOutcome], vectors: Sequence[Any]) -> None:
        index = self.ctx.vectors
        if index is None:
            return
        gone = [o.superseded.id for o in outcomes if o.superseded is not None]
        new = [(o.entry.id, v) for o, v in zip(outcomes, vectors, strict=True) if v is not None]
        if new:
            import numpy as np

            index.add([i for i, _ in new], np.stack([v for _, v in new]))
        if gone:
            index.remove(gone)

    # reads ----------------------------------------------------------------------------
    def _resolve(self, key_or_id: str, *, include_archived: bool = False) -> MemoryEntry:
        """The visible entry with this id or key; ScopeError if it belongs elsewhere."""
        if not isinstance(key_or_id, str) or not key_or_id:
            raise ValidationError("expected an entry id or key (non-empty string)")
        ctx = self.ctx
        visible = ctx.visible_partitions()
        if looks_like_id(key_or_id):
            entry = ctx.storage.get(key_or_id)
            if entry is not None:
                if entry.partition not in visible:
                    raise ScopeError(f"entry {key_or_id} is not visible to this identity")
                if entry.archived_at is None or include_archived:
                    return entry
                notice = corrections.correction_notice(entry)
                if notice is not None:
                    raise NotFoundError(notice)
                raise NotFoundError(
                    f"entry {key_or_id} is archived ({entry.archive_reason.value if entry.archive_reason else '?'})"
                )
        found = ctx.storage.active_by_key(visible, key_or_id)
        if found is None:
            raise NotFoundError(f"no active memory with id or key {key_or_id!r}")
        return found

    def get(self, key_or_id: str, *, as_of: datetime | None = None) -> MemoryEntry:
        """The active entry with this id or key, raw (not redacted); with ``as_of``, the
        entry as the store held it at that transaction time."""
        if as_of is not None:
            entry = corrections.get_as_of(self.ctx, key_or_id, as_of)
        else:
            entry = self._resolve(key_or_id)
            self._access.record([entry.id])
        self._audit.record_read("get", {"key_or_id": key_or_id, "as_of": as_of}, [entry.id])
        return entry

    def list_keys(self, prefix: str = "") -> list[str]:
        if not isinstance(prefix, str):
            raise ValidationError("prefix must be a string")
        entries = self.ctx.storage.query(
            EntryFilter(partitions=self.ctx.visible_partitions(), key_prefix=prefix)
        )
        return sorted({e.key for e in entries if e.key})

    def history(self, key: str) -> list[MemoryEntry]:
        """Every version of ``key``, newest first, following the supersede chain."""
        ctx = self.ctx
        visible = ctx.visible_partitions()
        versions = ctx.storage.query(
            EntryFilter(partitions=visible, key_prefix=key, include_archived=True)
        )
        versions = [e for e in versions if e.key == key]
        if not versions:
            raise NotFoundError(f"no memory ever had key {key!r}")
        return sorted(versions, key=lambda e: e.created_at, reverse=True)

    def forget(self, key_or_id: str, *, hard: bool = False) -> MemoryEntry:
        """Archive (reason ``forgotten``); with ``hard=True`` delete it for good."""
        entry = self._resolve(key_or_id, include_archived=hard)
        ctx = self.ctx
        with ctx.storage.transaction():
            if hard:
                ctx.storage.delete([entry.id])
            else:
                ctx.storage.archive(
                    [Archival(entry.id, ArchiveReason.FORGOTTEN, ctx.clock.now())])
            self._audit.record("forget", {"key_or_id": key_or_id, "hard": hard},
                               entry_id=entry.id, details={"hard": hard})
        if ctx.vectors is not None:
            ctx.vectors.remove([entry.id])
        return entry

    def search(
        self,
        query: str,
        top_k: int = 10,
        *,
        mode: str = "hybrid",
        types: Sequence[MemoryType | str] | None = None,
        tags: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        min_score: float | None = None,
        as_of: datetime | None = None,
    ) -> list[SearchResult]:
        """Hybrid (default), semantic, lexical or key search over visible active entries;
        with ``as_of``, over the entries as the store held them at that transaction time."""
        flt = build_filter(self.ctx, types, tags, since, until, as_of)
        results = self._searcher.search(query, top_k, mode, flt, min_score)
        ids = [r.entry.id for r in results]
        if as_of is None:
            self._access.record(ids)
        self._audit.record_read(
            "search", {"query": query, "top_k": top_k, "mode": mode, "as_of": as_of}, ids)
        return results

    def curate(
        self,
        query: str | None = None,
        *,
        token_budget: int,
        mode: str = "query",
        types: Sequence[MemoryType | str] | None = None,
        tags: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        weights: Any = None,
    ) -> CuratedContext:
        """The memories that matter for ``query`` as a prompt block of at most
        ``token_budget`` tokens (counted by the configured tokenizer, headers included).
        ``mode="orient"`` needs no query: a cold-start briefing. Secrets are redacted."""
        flt = build_filter(self.ctx, types, tags, since, until)
        result = self._curator.curate(query, token_budget, mode, flt, weights)
        self._access.record([c.entry.id for c in result.entries])
        self._audit.record_read("curate", {"query": query, "token_budget": token_budget,
                                           "mode": mode}, [c.entry.id for c in result.entries])
        return result

    # agent memory: sessions, remember, consolidation, procedures -----------------------
    # (logic in sessions.py, summaries.py, extraction.py, jobs.py, consolidation.py,
    # profile.py, procedures.py)
    def _start_agent_memory(self) -> None:
        from tulving.application.jobs import JobQueue
        from tulving.application.sessions import SessionManager

        self._sessions = SessionManager(
            self.ctx, self._llm,
            lambda fields, sid: self._write([fields], "summarize", session_id=sid)[0].entry,
        )
        self._jobs = JobQueue(self.ctx, self._prepare_job, self._write_job)
        self._sessions.recover()
        if self._jobs.mine():
            self._jobs.wake()

    def session(self, goal: str | None = None) -> Any:
        """``with memory.session(goal) as s:`` an explicit session, ended (and summarised)
        on exit. An implicit session opened by earlier writes yields to it."""
        from tulving.application.sessions import Session

        record = self.start_session(goal)
        return Session(record, lambda: self._sessions.end(only=record.id))

    def start_session(self, goal: str | None = None) -> Any:
        """Start an explicit session (``ValidationError`` if one is already active)."""
        with self._lock:
            return self.ctx and self._sessions.start(goal)

    def end_session(self) -> Any:
        """End the current session: write its summary, archive what it replaces."""
        with self._lock:
            return self.ctx and self._sessions.end("ended")

    def shutdown_session(self) -> Any:
        """For integrations (MCP server shutdown): end the session with reason ``shutdown``."""
        with self._lock:
            return self.ctx and self._sessions.end("shutdown")

    @property
    def session_id(self) -> str | None:
        return self.ctx.session_id

    @overload
    def remember(
        self, text: str, *, source_type: str = ..., idempotency_key: str | None = ...,
        wait: Literal[True] = ..., valid_from: datetime | None = ..., subject: str | None = ...,
    ) -> list[MemoryEntry]: ...

    @overload
    def remember(
        self, text: str, *, source_type: str = ..., idempotency_key: str | None = ...,
        wait: Literal[False], valid_from: datetime | None = ..., subject: str | None = ...,
    ) -> RememberJob: ...

    def remember(
        self,
        text: str,
        *,
        source_type: str = "conversation",
        idempotency_key: str | None = None,
        wait: bool = True,
        valid_from: datetime | None = None,
        subject: str | None = None,
    ) -> list[MemoryEntry] | RememberJob:
        """Turn raw text (a message or a "Speaker: text" transcript) into typed memories;
        every turn is also kept verbatim (an EPISODE, or typed DECISION/PLAN/PROCEDURE when
        the no-LLM rules find it is one), and what is extracted from a turn names it in
        ``source_entry_ids``. ``wait=False`` persists the job and returns a
        :class:`RememberJob` at once (``status``, ``entries()``, ``wait()``); the same
        ``idempotency_key`` twice is a no-op (returns the first call's entries, or its
        job)."""
        from tulving.application.extraction import check_text
        from tulving.application.jobs import scoped_key
        from tulving.domain.types import SourceType

        self.startup()
        check_text(text)
        scoped_key(self.ctx, idempotency_key)
        source = SourceType.parse(source_type)
        when = check_time("valid_from", valid_from)
        if not isinstance(wait, bool):
            raise ValidationError("wait must be True or False")
        if subject is not None and (not isinstance(subject, str) or not subject.strip()):
            raise ValidationError("subject must be a non-empty string")
        payload = {"text": text, "source_type": source.value,
                   "valid_from": when.isoformat() if when else None,
                   "subject": subject, "session_id": self._sessions.for_write()}
        if wait and idempotency_key is None:
            from tulving.domain.records import JobRecord

            job = JobRecord(id="inline", kind="remember", payload=payload,
                            created_at=self.ctx.clock.now())
            return self._write_job(job, self._prepare_job(job))
        job, new = self._jobs.submit(payload, idempotency_key)
        if not wait:
            self._jobs.wake()
            return RememberJob(self._jobs, job)
        done = self._jobs.result(job)
        if done is not None or (not new and job.status != "pending"):
            return done or []
        return self._jobs.run(job)

    def _prepare_job(self, job: Any) -> list[dict[str, Any]]:
        from tulving.application.extraction import extract_fields
        from tulving.domain.types import SourceType

        p = job.payload
        when = datetime.fromisoformat(p["valid_from"]) if p.get("valid_from") else None
        return extract_fields(self._llm, p["text"], source_type=SourceType.parse(p["source_type"]),
                              valid_from=when,
                              subject=p.get("subject") or self.identity.user_id or "user")

    def _write_job(self, job: Any, fields: list[dict[str, Any]]) -> list[MemoryEntry]:
        from tulving.application.extraction import link_sources

        session_id = job.payload.get("session_id")

        def write(batch: list[dict[str, Any]]) -> list[MemoryEntry]:
            return [o.entry for o in self._write(batch, "remember", session_id=session_id)]

        with self._lock, self.ctx.storage.transaction():
            entries = link_sources(fields, write)
        return list({e.id: e for e in entries}.values())

    def run_jobs(self) -> int:
        """Run this agent's queued ``remember`` jobs now; returns how many ran."""
        self.startup()
        return self._jobs.run_pending()

    def pending_jobs(self) -> int:
        self.startup()
        return len(self._jobs.mine())

    def consolidate(
        self, *, dry_run: bool = True, types: Sequence[MemoryType | str] | None = None,
        tags: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Merge clusters of similar memories and lift recurring episodes into facts;
        ``dry_run`` (default) only returns the plan."""
        from tulving.application.consolidation import consolidate

        if not isinstance(dry_run, bool):
            raise ValidationError("dry_run must be True or False")
        parsed = [MemoryType.parse(t) for t in types] if types is not None else None
        with self._lock:
            return consolidate(
                self.ctx, self._llm,
                lambda fields: self._write([fields], "consolidate")[0].entry,
                self.ctx.clock.now(), dry_run=dry_run, types=parsed, tags=tags,
                subject=self.identity.user_id or "user",
            )

    def profile(self, subject: str = "user") -> dict[str, Any]:
        """What is known about ``subject`` (an entity): facts, preferences, and a text."""
        from tulving.application.profile import build_profile

        return build_profile(self.ctx, subject)

    def record_outcome(self, key_or_id: str, success: bool) -> MemoryEntry:
        """Count one success or failure on a PROCEDURE entry."""
        from tulving.application.procedures import with_outcome

        with self._lock:
            entry = with_outcome(self._resolve(key_or_id), success, self.ctx)
            self.ctx.storage.replace(entry)
            return entry

    def procedures(self, query: str, top_k: int = 5) -> list[SearchResult]:
        """Relevant procedures, ranked by relevance and effectiveness (success rate)."""
        from tulving.application.procedures import rank_procedures

        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValidationError("top_k must be a positive integer")
        hits = self.search(query, top_k=max(10, 3 * top_k), types=[MemoryType.PROCEDURE])
        return rank_procedures(hits, top_k)

    def _explicit_working_memory(self) -> list[MemoryEntry]:
        """Working memory for curate: only inside a session the agent opened on purpose
        (an implicit session is just "everything written lately", not a task at hand)."""
        ctx = self.ctx
        if ctx.session_id is None:
            return []
        record = ctx.storage.get_session(ctx.session_id)
        if record is None or record.implicit or record.ended_at is not None:
            return []
        return self.working_memory(WORKING_MEMORY_IN_CURATE)

    def working_memory(self, limit: int = 20) -> list[MemoryEntry]:
        """The active session's most recent entries, oldest first (at most ``limit``)."""
        from tulving.application.procedures import working_memory

        return working_memory(self.ctx, self.ctx.session_id, limit)

    def evict(self, threshold: float = 0.05, *, dry_run: bool = False) -> EvictionReport:
        """Archive (reason ``evicted``) entries whose decayed importance fell below
        ``threshold``; DECISION and pinned entries are exempt. Idempotent."""
        ctx = self.ctx
        self._access.flush()
        return evict(ctx, threshold, dry_run=dry_run)

    def stats(self) -> dict[str, Any]:
        ctx = self.ctx
        visible = ctx.visible_partitions()
        by_type = {
            t.value: ctx.storage.count(EntryFilter(partitions=visible, types=(t,)))
            for t in MemoryType
        }
        archived = ctx.storage.count(
            EntryFilter(partitions=visible, archive_reasons=tuple(ArchiveReason))
        )
        return {
            "agent_id": ctx.identity.agent_id,
            "user_id": ctx.identity.user_id,
            "workspace_id": ctx.identity.workspace_id,
            "active": sum(by_type.values()),
            "archived": archived,
            "by_type": by_type,
            "tags": ctx.storage.tag_counts(EntryFilter(partitions=visible)),
            "storage": dict(ctx.storage.stats()),
            "embedder": ctx.embedder.model_id if ctx.embedder else None,
            "vectors": ({"adapter": ctx.vectors.name, "count": ctx.vectors.count()}
                        if ctx.vectors else None),
            "tokenizer": ctx.tokenizer.name if ctx.tokenizer else None,
            "llm": {**self._llm.stats(), "jobs_pending": len(self._jobs.mine())},
            "session_id": ctx.session_id,
        }

    # upkeep and access (logic in maintenance.py / tokens.py) ----------------------------
    def maintenance(
        self, action: str, *, dry_run: bool = True, archived_before: datetime | None = None
    ) -> dict[str, Any]:
        """``inspect`` | ``purge`` (archived entries; ``dry_run`` by default) | ``vacuum`` |
        ``reindex`` (rebuild the vector index from stored vectors)."""
        from tulving.application import maintenance

        with self._lock:
            return maintenance.run(self.ctx, action, dry_run=dry_run,
                                   archived_before=archived_before, progress=self._progress)

    def tokens(self) -> Any:
        """The bearer-token registry of this store (``TokenRegistry``), for HTTP serving."""
        from tulving.application.tokens import (
            FileBackend,
            MetaBackend,
            TokenRegistry,
            token_file_for,
        )

        path = token_file_for(self.location)
        if path is not None:
            return TokenRegistry(FileBackend(path))
        storage = self.ctx.storage
        return TokenRegistry(MetaBackend(storage.get_meta, storage.set_meta))

    # governance (logic in audit, governance, corrections, retention, erasure) ----------
    def review(self, key_or_id: str, *, approve: bool) -> MemoryEntry:
        """Approve (into curated context) or reject an entry held for review."""
        entry = self._resolve(key_or_id)
        return self._governance.review(entry, approve)

    def pending_review(self) -> list[MemoryEntry]:
        self.startup()
        return self._governance.pending_review()

    def correct(self, key_or_id: str, new_content: str, **fields: Any) -> MemoryEntry:
        """Replace what an entry says: the original is archived (``corrected``), linked
        both ways, and never surfaces again except through history and as-of reads."""
        original = self._resolve(key_or_id)
        fixed, _ = corrections.correct(self.ctx, original, new_content, fields, self._write)
        return fixed

    def rollback_to(self, point: str | datetime) -> dict[str, Any]:
        """Undo this agent's writes after an entry (by id) or a moment (aware datetime)."""
        anchor: str | None = None
        if isinstance(point, datetime):
            moment = check_time("point", point)
        else:
            entry = self._resolve(point, include_archived=True)
            anchor, moment = entry.id, entry.created_at
        assert moment is not None
        return retention.rollback_to(self.ctx, self._audit, moment, anchor)

    def apply_retention(self, policy: Mapping[str, Any]) -> dict[str, dict[str, int]]:
        """Archive by per-scope TTL and max entries: ``{"agent": {"ttl_days": 30}}``."""
        return retention.apply_retention(self.ctx, self._audit, policy)

    def purge(self, older_than: datetime | None = None, *, force: bool = False) -> dict[str, int]:
        """Hard-delete archived entries; what audit or history chains need stays unless
        ``force=True``."""
        return retention.purge(self.ctx, self._audit, older_than, force=force)

    def erase(self, *, user_id: str | None = None, workspace_id: str | None = None,
              agent_id: str | None = None) -> dict[str, Any]:
        """Delete every entry of a data subject for good (see ``application.erasure``)."""
        self.startup()
        self._access.flush()
        self._audit.flush()
        return erasure.erase(self.ctx, self._audit, user_id=user_id,
                             workspace_id=workspace_id, agent_id=agent_id)

    def verify(self) -> dict[str, Any]:
        """Tamper check of every visible entry: content hash and HMAC signature."""
        self.startup()
        return self._governance.verify()

    def verify_audit(self) -> dict[str, Any]:
        """Check this tenant's audit hash chain: a modified, removed or reordered record
        is reported in ``problems``."""
        self.startup()
        return self._audit.verify()

    def export_audit(self, target: str | os.PathLike[str] | Any) -> int:
        """Write this tenant's audit log as NDJSON to a path or text file; returns count."""
        self.startup()
        return self._audit.export(os.fspath(target) if isinstance(target, os.PathLike) else target)

    def audit_log(self) -> list[Any]:
        self.startup()
        return self._audit.records()

    def health(self) -> dict[str, Any]:
        self.startup()
        return self._governance.health()

    def __repr__(self) -> str:
        state = "open" if self._ctx else ("closed" if self._closed else "not started")
        return f"Memory({self.location!r}, agent_id={self.identity.agent_id!r}, {state})"


def _pop_dedup(fields: dict[str, Any]) -> bool:
    value = fields.pop("dedup", True)
    if not isinstance(value, bool):
        raise ValidationError("dedup must be True or False")
    return value


def evolve(entry: MemoryEntry, **changes: Any) -> MemoryEntry:
    return attrs.evolve(entry, **changes)
