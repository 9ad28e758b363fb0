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
from typing import IO, Any, Literal, overload

import attrs

from tulving.application.agent_memory.jobs import RememberJob
from tulving.application.curation.after_curate import apply_after_curate
from tulving.application.curation.curator import Curator
from tulving.application.governance import corrections, erasure, retention
from tulving.application.governance.audit import AuditTrail
from tulving.application.governance.encryption import parse_encryption, require_encrypted
from tulving.application.governance.integrity import Governance, load_signing_key
from tulving.application.plumbing.composition import (
    DEFAULT,
    default_names,
    normalise_location,
    resolve,
)
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.llm_gateway import DEFAULT_MAX_CALLS, LLMGateway
from tulving.application.plumbing.operation_spans import trace_methods
from tulving.application.plumbing.text_guard import guard_methods
from tulving.application.plumbing.vector_sync import (
    catch_up,
    check_model,
    embed_missing,
    note_representation,
    reconcile_index,
    save_index,
)
from tulving.application.plumbing.warnings_once import warn_once
from tulving.application.plumbing.write_order import writing
from tulving.application.portability.bundle_format import DEFAULT_MAX_BYTES
from tulving.application.portability.exporter import ExportReport
from tulving.application.portability.importer import Importer, ImportReport
from tulving.application.retrieval import lookup
from tulving.application.retrieval.access import AccessTracker
from tulving.application.retrieval.expansion import QueryExpander
from tulving.application.retrieval.options import SearchOptions
from tulving.application.retrieval.search import Searcher, build_filter
from tulving.application.upkeep.eviction import EvictionReport, evict
from tulving.application.upkeep.statistics import store_stats
from tulving.application.writing.writer import Writer
from tulving.domain.curated import CuratedContext
from tulving.domain.entry import MemoryEntry
from tulving.domain.entry_factory import check_time
from tulving.domain.errors import ConfigError, NotVisibleError, ReadOnlyError, ValidationError
from tulving.domain.identity import Identity
from tulving.domain.query import EntryFilter, SearchResult
from tulving.domain.query_expansion import parse_search_settings
from tulving.domain.representation import parse_writing
from tulving.domain.types import MemoryType, Scope
from tulving.domain.write_policy import WritePolicy, parse_policy
from tulving.plugins.hooks import CurateContext
from tulving.plugins.registry import AdapterContext, get_manager
from tulving.ports.storage import ReadOnlyOpen, WriteOutcome

Progress = Callable[[str, int, int], None]


#: How many of the active session's latest entries curate() puts first.
WORKING_MEMORY_IN_CURATE = 5


class _NotRecorded:
    """Access statistics and read audit of a read-only Memory: left out (see
    ``Memory.__init__``'s ``read_only``)."""

    def record(self, entry_ids: Iterable[str]) -> None:
        return None

    def flush(self) -> None:
        return None


class Memory:
    """Persistent, typed, searchable memory for one agent identity.

    ``Memory(path, agent_id=...)`` with no adapter arguments is the embedded default:
    SQLite at ``path`` + a usearch index beside it + the local MiniLM model, offline.
    Pass adapter names (``storage="memory"``, ``embedder="hashing"``) or instances;
    ``embedder=None`` disables semantic search (lexical only, said once).
    ``encryption="env:NAME"`` (or ``"file:PATH"``, ``True``) encrypts the store and its
    vector cache at rest with the key found there (see ``governance.encryption``).

    ``read_only=True`` opens a SQLite store beside the process that writes it (an MCP or
    HTTP server holding its lock): no lock is taken and nothing is written, neither
    the database nor the index cache. It sees everything the writer has committed, the
    vectors its cache file does not hold yet included (they are read from storage's
    vector change log). What a reader cannot record is left out, by rule: access
    statistics (``last_accessed_at``, ``access_count``) and the audit records of reads
    and exports (audit them through the writer's own door when every read must be).
    A store that needs a schema migration, or another embedding model than the one its
    vectors were built with, is refused with a clear error (``ReadOnlyError``,
    ``ModelMismatchError``); every write raises ``ReadOnlyError``.
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
        encryption: Any = None,
        read_only: bool = False,
    ) -> None:
        if not isinstance(read_only, bool):
            raise ConfigError("read_only must be True or False")
        self.read_only = read_only
        self.identity = Identity(agent_id, user_id, workspace_id, model_id)
        """Who this Memory reads and writes as: agent, user, workspace and model ids."""
        self.location = normalise_location(path)
        """Where the store lives: a file path, a ``postgresql://`` URL or None (default)."""
        self._choices = {"storage": storage, "vectors": vectors, "embedder": embedder,
                         "tokenizer": tokenizer, "clock": clock, "llm": llm}
        if options is not None and not isinstance(options, Mapping):
            raise ConfigError("options must be a mapping of adapter kind to settings")
        for kind, settings in (options or {}).items():
            if not isinstance(settings, Mapping):
                raise ConfigError(f"options[{kind!r}] must be a mapping, "
                                  f"got {type(settings).__name__}")
        self._options = {k: dict(v) for k, v in (options or {}).items()}
        self._context_window = parse_writing(self._options.pop("writing", {}))
        self._search_settings = parse_search_settings(self._options.pop("search", {}))
        SearchOptions(ranker=self._search_settings[2])  # an unknown ranker fails here
        unknown = set(self._options) - set(self._choices)
        if unknown:
            raise ConfigError(f"options for unknown adapter kinds: {', '.join(sorted(unknown))}")
        self._progress = progress
        # governance (see tulving.domain.write_policy): checked here, before anything opens
        self.policy = parse_policy(policy)
        """The write policy every write passes (``policy=`` parsed into a ``WritePolicy``)."""
        self._signing_key = load_signing_key(self.policy)
        # encryption at rest (see governance.encryption): the key is read now, so a
        # missing one fails before anything opens
        self._encryption = parse_encryption(encryption)
        self._lock = threading.RLock()
        self._ctx: MemoryContext | None = None
        self._closed = False
        self._parent: Memory | None = None  # set on views (see ``view``)

    # lifecycle ------------------------------------------------------------------------
    def startup(self) -> Memory:
        """Open and reconcile everything; idempotent, thread-safe, cheap when done."""
        with self._lock:
            if self._closed:
                raise ConfigError("this Memory is closed")
            if self._ctx is not None:
                return self
            opts = self._options
            key = self._encryption
            defaults = default_names(self.location, encrypted=key is not None)
            adapter_ctx = AdapterContext(location=self.location, encryption=key,
                                         read_only=self.read_only)
            storage = resolve("storage", self._choices["storage"], defaults["storage"],
                              adapter_ctx, opts.get("storage"))
            if self.read_only and not (isinstance(storage, ReadOnlyOpen) and storage.read_only):
                raise ConfigError(f"the {storage.name} storage cannot be "
                                  "opened read-only (SQLite can)")
            clock = resolve("clock", self._choices["clock"], "system", adapter_ctx,
                            opts.get("clock"))
            require_encrypted(key, storage, None)  # before a plain file is created
            storage.open()
            try:
                adapter_ctx = AdapterContext(location=storage.location, storage=storage,
                                             encryption=key, read_only=self.read_only)
                embedder = resolve("embedder", self._choices["embedder"], "local",
                                   adapter_ctx, opts.get("embedder"))
                vectors = None
                if embedder is not None:
                    vectors = resolve("vectors", self._choices["vectors"],
                                      defaults["vectors"], adapter_ctx, opts.get("vectors"))
                require_encrypted(key, storage, vectors)
                tokenizer = resolve("tokenizer", self._choices["tokenizer"], "cl100k_base",
                                    adapter_ctx, opts.get("tokenizer"))
                llm_opts = dict(opts.get("llm") or {})
                max_calls = llm_opts.pop("max_calls", DEFAULT_MAX_CALLS)
                max_tokens = llm_opts.pop("max_tokens", None)
                llm = resolve("llm", self._choices["llm"], None, adapter_ctx, llm_opts)
                self._llm = LLMGateway(llm, max_calls=max_calls, max_tokens=max_tokens)
                llm = self._llm.llm
                if self._search_settings[0] and llm is None:
                    raise ConfigError("search.llm_expansion needs an LLM: pass llm=... "
                                      "(e.g. llm='openai' with options={'llm': {...}})")
                pm, _registry = get_manager()
                ctx = MemoryContext(
                    identity=self.identity, storage=storage, clock=clock, embedder=embedder,
                    vectors=vectors, tokenizer=tokenizer, llm=llm, hooks=pm.hook,
                    context_window=self._context_window,
                )
                if embedder is None:
                    warn_once("no-embedder", "no embedder configured: search runs lexically only")
                else:
                    check_model(ctx, self._progress)
                    if vectors is not None:
                        vectors.open(embedder.dimension)
                    embed_missing(ctx, self._progress)
                    reconcile_index(ctx, self._progress)
                    note_representation(ctx)
            except BaseException:
                storage.close()
                raise
            self._wire(ctx)
            return self

    def _wire(self, ctx: MemoryContext) -> None:
        """The application services over opened adapters (shared by views)."""
        self._ctx = ctx
        self._access: Any = (_NotRecorded() if self.read_only
                             else AccessTracker(ctx.storage, ctx.clock))
        expand, weight, ranker = self._search_settings
        self._searcher = Searcher(ctx, SearchOptions(expansion_weight=weight, ranker=ranker),
                                  QueryExpander(self._llm) if expand else None)
        self._audit = AuditTrail(ctx.storage, ctx.clock, self.identity,
                                 record_reads=self.policy.audit_reads and not self.read_only,
                                 read_only=self.read_only)
        self._governance = Governance(ctx, self.policy, self._audit, self._signing_key)
        self._writer = Writer(ctx, self._governance, self._audit, self._lock)
        self._curator = Curator(ctx, self._searcher)
        self._curator.working_memory = self._explicit_working_memory
        self._start_agent_memory()

    def view(self, *, agent_id: str, user_id: str | None = None,
             workspace_id: str | None = None) -> Memory:
        """The same opened store, adapters and policy seen as another identity: how one
        process (the HTTP server) serves many tenants and agents over one SQLite file,
        whose single-writer lock allows one opener. Views share this Memory's lock, so
        their writes are serialized; closing a view flushes it and leaves the store open;
        closing this Memory closes the store under every view."""
        parent = self.startup()
        view = Memory.__new__(Memory)
        view.read_only = self.read_only
        view.location = self.location
        view.identity = Identity(agent_id, user_id, workspace_id, self.identity.model_id)
        view.policy = self.policy
        view._signing_key = self._signing_key
        view._choices, view._options, view._progress = (
            self._choices, self._options, self._progress)
        view._search_settings = self._search_settings
        view._lock = self._lock
        view._closed = False
        view._llm = self._llm
        view._parent = parent
        with self._lock:
            view._wire(attrs.evolve(parent.ctx, identity=view.identity, current_session=None))
        return view

    @property
    def ctx(self) -> MemoryContext:
        """The opened adapters and identity the services work with (opens on first use);
        for integrations inside this package, not a stable API."""
        if self._ctx is None:
            self.startup()
        assert self._ctx is not None
        return self._ctx

    def close(self) -> None:
        """Flush access statistics and buffered audit records, persist the vector index
        cache and release the store; idempotent. A view's close leaves the store open."""
        jobs = getattr(self, "_jobs", None)
        if jobs is not None:
            jobs.stop()
        if self._parent is not None:  # a view: the store stays open
            with self._lock:
                if self._ctx is not None:
                    self._searcher.close()
                    self._access.flush()
                    self._audit.flush()
                    self._ctx = None
                self._closed = True
            return
        with self._lock:
            if self._ctx is not None:
                ctx, self._ctx = self._ctx, None
                try:
                    self._searcher.close()
                    self._access.flush()
                    self._audit.flush()
                    if ctx.vectors is not None:
                        save_index(ctx, closing=True)
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
            save_index(ctx, force=True)

    # writes ---------------------------------------------------------------------------
    def store(
        self,
        content: str,
        *,
        type: MemoryType | str,
        key: str | None = None,
        tags: Iterable[str] | None = None,
        importance: float | None = None,
        pinned: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
        valid_from: datetime | None = None,
        dedup: bool = True,
        **more: Any,
    ) -> MemoryEntry:
        """Store one memory. An active entry with the same key (in the same scope) is
        superseded: archived with reason ``superseded`` and linked both ways, and the new
        version keeps the tags, importance, pinned flag and metadata this call leaves out
        (None); pass ``tags=[]``, ``importance=0.5``, ``pinned=False`` or ``metadata={}``
        to clear one. A new key (or no key) gets the defaults: no tags, importance 0.5,
        not pinned, no metadata. One with the same ``entity``/``attribute`` and another
        ``value`` is superseded too; an exact or near-exact restatement is a no-op
        (``dedup=False`` turns that off; rules in
        ``tulving.application.writing.contradictions``)."""
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

    def store_lines(
        self,
        lines: Sequence[tuple[int, Mapping[str, Any]]],
        *,
        source: str,
        batch_size: int = 256,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> dict[str, Any]:
        """A bulk import (``tulving store --jsonl``): ``lines`` are (line number,
        ``store`` mapping) pairs of one file whose content digest is ``source``.

        Every line is checked first (fields and write policy, as a write would); if any
        is refused, a ValidationError lists every refused line and nothing is written.
        Then batches of ``batch_size`` are written, each in one transaction that also
        records in the store how many lines of ``source`` this identity has written. So
        a run cut short (a crash, kill -9) and started again resumes after its last
        committed batch, and a file already imported whole writes nothing again: each
        line is written exactly once."""
        from tulving.application.portability.lines_import import store_lines

        self.startup()
        with self._lock:  # before the store's transactions (plumbing.write_order)
            return store_lines(self, lines, source=source, batch_size=batch_size,
                               progress=progress)

    def _write(
        self, batch: list[dict[str, Any]], operation: str, *, session_id: Any = DEFAULT
    ) -> list[WriteOutcome]:
        """The one write path (``tulving.application.writing.writer``), in the session
        this write belongs to (the active one unless the caller names one)."""
        self.startup()
        self._require_writable(operation)
        if session_id is DEFAULT:
            session_id = self._sessions.for_write()
        outcomes = self._writer.write(batch, operation, session_id, self.policy)
        self._sessions.touch(session_id)
        return outcomes

    def _require_writable(self, operation: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"{operation}: this Memory is open read-only "
                                f"({self.location}); open it without read_only to write")

    # reads ----------------------------------------------------------------------------
    def _fresh(self) -> MemoryContext:
        """The context, with the vector index caught up with what another process
        committed when this Memory is a reader (a writer's index follows its own writes)."""
        ctx = self.ctx
        if self.read_only:
            catch_up(ctx)
        return ctx

    def _resolve(self, key_or_id: str, *, include_archived: bool = False) -> MemoryEntry:
        try:
            return lookup.resolve(self.ctx, key_or_id, include_archived=include_archived)
        except NotVisibleError as exc:
            self._audit.record_refusal(exc.entry_id)
            raise

    def get(self, key_or_id: str, *, as_of: datetime | None = None,
            include_archived: bool = False) -> MemoryEntry:
        """The active entry with this id or key, raw (not redacted); with ``as_of``, the
        entry as the store held it at that transaction time; with ``include_archived``,
        also an archived version by its id (an older version from ``history``)."""
        if not isinstance(include_archived, bool):
            raise ValidationError("include_archived must be True or False")
        if as_of is not None:
            try:
                entry = lookup.get_as_of(self.ctx, key_or_id, as_of)
            except NotVisibleError as exc:
                self._audit.record_refusal(exc.entry_id)
                raise
        else:
            entry = self._resolve(key_or_id, include_archived=include_archived)
            self._access.record([entry.id])
        self._audit.record_read("get", {"key_or_id": key_or_id, "as_of": as_of}, [entry.id])
        return entry

    def list_keys(self, prefix: str = "") -> list[str]:
        """The keys of the active entries this identity sees, starting with ``prefix``."""
        return lookup.list_keys(self.ctx, prefix)

    def list_entries(
        self,
        limit: int = 100,
        cursor: str | None = None,
        *,
        types: Sequence[MemoryType | str] | None = None,
        tags: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        include_archived: bool = False,
        scope: Scope | str | None = None,
    ) -> lookup.EntryPage:
        """Every visible entry, with or without a key, oldest first, ``limit`` at a time;
        pass the page's ``next_cursor`` back for the next one (None: no more). With
        ``scope`` a page may come back short before the last one (see ``next_cursor``)."""
        if not isinstance(include_archived, bool):
            raise ValidationError("include_archived must be True or False")
        flt = attrs.evolve(build_filter(self.ctx, types, tags, since, until),
                           include_archived=include_archived)
        chosen = Scope.parse(scope) if scope is not None else None
        page = lookup.list_entries(self.ctx, flt, limit, cursor, chosen)
        self._audit.record_read("list_entries", {"limit": limit, "cursor": cursor},
                                [e.id for e in page.entries])
        return page

    def history(self, key: str) -> list[MemoryEntry]:
        """Every version of ``key``, newest first, following the supersede chain."""
        return lookup.history(self.ctx, key)

    def forget(self, key_or_id: str, *, hard: bool = False) -> MemoryEntry:
        """Archive (reason ``forgotten``); with ``hard=True`` delete it for good."""
        entry = self._resolve(key_or_id, include_archived=hard)
        self._governance.check_may_change(entry, "forget")
        return self._writer.forget(entry, key_or_id, hard=hard)

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
        flt = build_filter(self._fresh(), types, tags, since, until, as_of)
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
        mode: str | None = None,
        types: Sequence[MemoryType | str] | None = None,
        tags: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        weights: Any = None,
        explain: bool = False,
    ) -> CuratedContext:
        """The memories that matter for ``query`` as a prompt block of at most
        ``token_budget`` tokens (counted by the configured tokenizer, headers included).
        Without a query (or with ``mode="orient"``) it is the cold-start briefing: what is
        known about the user, pinned memories, decisions in force, active plans,
        procedures that worked, the last sessions' summaries, recent turns with what is
        left, keys (``CuratedEntry.section`` names each). Secrets are redacted.
        ``explain=True`` also reports every ranked candidate (``.candidates``): its score
        broken down, shown in full, truncated, as an index line or left out, and its cost."""
        flt = build_filter(self._fresh(), types, tags, since, until)
        result = self._curator.curate(query, token_budget, mode, flt, weights,
                                      explain=explain)
        result = apply_after_curate(
            self.ctx.hooks, result,
            CurateContext(self.identity.agent_id, self.identity.tenant, result.mode,
                          result.query, result.token_budget),
            self._curator.tokenizer.count)
        self._access.record([c.entry.id for c in result.entries])
        self._audit.record_read("curate", {"query": query, "token_budget": token_budget,
                                           "mode": mode}, [c.entry.id for c in result.entries])
        return result

    def count_tokens(self, text: str) -> int:
        """What ``text`` costs with the tokenizer ``curate()`` counts budgets with, so a
        caller (the Kairos plugin's budget validator) can check a budget independently."""
        if not isinstance(text, str):
            raise ValidationError("text must be a string")
        self.startup()
        return int(self._curator.tokenizer.count(text)) if text else 0

    # agent memory: sessions, remember, consolidation, procedures -----------------------
    # (logic in application/agent_memory/)
    def _start_agent_memory(self) -> None:
        from tulving.application.agent_memory.remembering import Rememberer
        from tulving.application.agent_memory.sessions import SessionManager

        self._sessions = SessionManager(
            self.ctx, self._llm,
            lambda fields, sid: self._write([fields], "summarize", session_id=sid)[0].entry,
        )
        self._rememberer = Rememberer(
            self.ctx, self._llm, self._sessions,
            lambda batch, op, sid: [o.entry for o in self._write(batch, op, session_id=sid)],
            self._lock, lambda: self.policy,
        )
        self._jobs = self._rememberer.jobs
        if self.read_only:  # a reader ends no session and runs no job: both write
            return
        self._sessions.recover()
        if self._jobs.mine():
            self._jobs.wake()

    def session(self, goal: str | None = None) -> Any:
        """``with memory.session(goal) as s:`` an explicit session, ended (and summarised)
        on exit. An implicit session opened by earlier writes yields to it."""
        from tulving.application.agent_memory.sessions import Session

        record = self.start_session(goal)
        return Session(record, lambda: self._end_session(only=record.id))

    def _end_session(self, reason: str = "ended", only: str | None = None) -> Any:
        with self._lock:
            return self.ctx and self._sessions.end(reason, only=only)

    def start_session(self, goal: str | None = None) -> Any:
        """Start an explicit session (``ValidationError`` if one is already active)."""
        with self._lock:
            return self.ctx and self._sessions.start(goal)

    def end_session(self) -> Any:
        """End the current session: write its summary, archive what it replaces. The
        current session is the store's (see ``agent_memory.sessions``): one started by
        another process of this agent (another server replica) is the one ended."""
        return self._end_session("ended")

    def shutdown_session(self) -> Any:
        """For integrations (MCP server shutdown): end the session with reason ``shutdown``."""
        return self._end_session("shutdown")

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
        ``RememberJob`` at once (``status``, ``entries()``, ``wait()``); the same
        ``idempotency_key`` twice is a no-op (returns the first call's entries, or its
        job)."""
        self.startup()
        return self._rememberer.remember(
            text, source_type=source_type, idempotency_key=idempotency_key, wait=wait,
            valid_from=valid_from, subject=subject,
        )

    def run_jobs(self) -> int:
        """Run this agent's queued ``remember`` jobs now; returns how many ran."""
        self.startup()
        return self._jobs.run_pending()

    def pending_jobs(self) -> int:
        """How many of this agent's ``remember(..., wait=False)`` jobs have not run yet."""
        self.startup()
        return len(self._jobs.mine())

    def consolidate(
        self, *, dry_run: bool = True, types: Sequence[MemoryType | str] | None = None,
        tags: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Merge clusters of similar memories and lift recurring episodes into facts;
        ``dry_run`` (default) only returns the plan."""
        from tulving.application.agent_memory.consolidation import consolidate

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
        from tulving.application.agent_memory.profile import build_profile

        return build_profile(self.ctx, subject)

    def record_outcome(self, key_or_id: str, success: bool) -> MemoryEntry:
        """Count one success or failure on a PROCEDURE entry."""
        from tulving.application.agent_memory.procedures import with_outcome

        with self._lock:
            entry = self._governance.seal(
                with_outcome(self._resolve(key_or_id), success, self.ctx))
            with writing(self.ctx):
                self.ctx.storage.replace(entry)
                self._audit.record("record_outcome", {"key_or_id": key_or_id, "success": success},
                                   entry_id=entry.id, details={"success": success})
            return entry

    def procedures(self, query: str, top_k: int = 5) -> list[SearchResult]:
        """Relevant procedures, ranked by relevance and effectiveness (success rate)."""
        from tulving.application.agent_memory.procedures import rank_procedures

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
        from tulving.application.agent_memory.procedures import working_memory

        return working_memory(self.ctx, self.ctx.session_id, limit)

    def evict(self, threshold: float = 0.05, *, dry_run: bool = False) -> EvictionReport:
        """Archive (reason ``evicted``) entries whose decayed importance fell below
        ``threshold``; DECISION and pinned entries are exempt. Idempotent."""
        ctx = self.ctx
        self._access.flush()
        return evict(ctx, self._audit, threshold, dry_run=dry_run)

    def stats(self) -> dict[str, Any]:
        """Counts by type and tag, the storage engine's figures, the adapters in use, the
        LLM's calls and fallbacks, pending jobs and the current session."""
        ctx = self._fresh()
        return store_stats(ctx, self._llm.stats(), len(self._jobs.mine()))

    # upkeep (logic in application/upkeep/) ---------------------------------------------
    def maintenance(
        self, action: str, *, dry_run: bool = True, archived_before: datetime | None = None,
        force: bool = False,
    ) -> dict[str, Any]:
        """``inspect`` | ``purge`` (archived entries; ``dry_run`` by default; the same
        purge as ``purge()``, ``force`` included) | ``vacuum`` | ``reindex`` (rebuild
        the vector index from stored vectors) | ``reembed`` (rebuild the stored vectors
        by the current representation rule and context window)."""
        from tulving.application.upkeep import maintenance

        self.startup()
        with self._lock:
            return maintenance.run(self.ctx, action, audit=self._audit, dry_run=dry_run,
                                   archived_before=archived_before, force=force,
                                   progress=self._progress)

    # portability (logic in application/portability/) ---------------------------------
    def export(
        self,
        target: str | os.PathLike[str] | IO[bytes],
        *,
        tags: Sequence[str] | None = None,
        types: Sequence[MemoryType | str] | None = None,
        scope: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        include_archived: bool = True,
        include_embeddings: bool = True,
        redact: bool = False,
        encryption: Any = None,
    ) -> ExportReport:
        """Write what this identity sees (filtered) as a bundle: a file path (written
        whole or not at all) or a binary file object. Archived entries are included by
        default so history chains and corrections survive the trip. ``encryption``
        (``"env:NAME"``, ``"file:PATH"``, as for the store) encrypts the whole bundle,
        manifest included (see ``portability.bundle_crypto``)."""
        from tulving.application.portability.exporter import export

        for name, flag in (("include_archived", include_archived),
                           ("include_embeddings", include_embeddings), ("redact", redact)):
            if not isinstance(flag, bool):
                raise ValidationError(f"{name} must be True or False")
        bundle_key = parse_encryption(encryption)
        self.startup()
        flt = attrs.evolve(build_filter(self.ctx, types, tags, since, until),
                           include_archived=include_archived)
        chosen = Scope.parse(scope) if scope is not None else None
        filters = {"tags": list(flt.tags or ()), "types": [t.value for t in flt.types or ()],
                   "scope": chosen.value if chosen else None,
                   "since": since.isoformat() if since else None,
                   "until": until.isoformat() if until else None,
                   "include_archived": include_archived}
        from tulving.version import __version__

        with self._lock:
            self._access.flush()
            report = export(self.ctx, target, flt, scope=chosen,
                            include_embeddings=include_embeddings, redacted=redact,
                            filters=filters, library_version=__version__,
                            progress=self._progress, encryption=bundle_key)
            if not self.read_only:  # a reader records no audit (see __init__)
                self._audit.record("export", {"filters": filters, "redact": redact,
                                              "encrypted": bundle_key is not None},
                                   details={"entries": report.entries,
                                            "vectors": report.vectors})
        return report

    def import_bundle(
        self,
        source: str | os.PathLike[str] | IO[bytes],
        *,
        reembedding: str = "auto",
        on_conflict: str = "newest",
        dry_run: bool = False,
        remap_identity: bool = False,
        max_bytes: int = DEFAULT_MAX_BYTES,
        encryption: Any = None,
    ) -> ImportReport:
        """Merge a bundle into this store in one all-or-nothing call (see
        ``tulving.application.portability.importer``); the report lists what was added,
        updated, skipped and in conflict, and how many entries were re-embedded. An
        encrypted bundle needs its key in ``encryption``; a plain one must come without."""
        bundle_key = parse_encryption(encryption)
        importer = self._importer(reembedding=reembedding, on_conflict=on_conflict,
                                  dry_run=dry_run, remap_identity=remap_identity,
                                  max_bytes=max_bytes, encryption=bundle_key)
        with self._lock:
            return importer.run(source)

    def _importer(self, **options: Any) -> Importer:
        """An ``Importer`` over this Memory (``import_bundle``; sync merges deltas with it
        under this Memory's lock)."""
        self.startup()
        return Importer(self.ctx, self._audit, self._governance.seal, self.policy,
                        progress=self._progress, **options)

    def sync(self, remote: Any, *, encryption: Any = None) -> Any:
        """Exchange deltas with a Tulving server (``remote``: a ``TulvingClient``): pull
        what other devices pushed since this store's watermark and merge it, then push
        what changed here. ``encryption`` (``"env:NAME"``, ``"file:PATH"``) encrypts
        the deltas end to end: the server stores them without being able to read them,
        and every device of the tenant must use the same key. Interrupted at any point,
        a second call converges (see ``portability.sync``)."""
        from tulving.application.portability.sync import sync
        from tulving.version import __version__

        key = parse_encryption(encryption)
        self.startup()
        with self._lock:
            self._access.flush()
            report = sync(self, remote, key, __version__)
            with writing(self.ctx):
                self._audit.record("sync", {"remote": remote.sync_id},
                                   details={k: v for k, v in report.as_dict().items()})
        return report

    def sync_service(self) -> Any:
        """The server's side of sync for this Memory's tenant (``tulving serve``'s
        ``/v1/sync``; see ``portability.sync_service``): ConfigError when the store keeps
        no sync log."""
        from tulving.application.portability.sync_service import SyncService

        if self._ctx is None:  # not startup() every call: it waits for this Memory's
            self.startup()     # lock, which a merge holds for its whole import
        return SyncService(self, self._lock, self._audit)

    def sync_filter(self) -> Any:
        """Everything this identity sees, archived versions included (what sync sends)."""
        return attrs.evolve(build_filter(self.ctx, None, None, None, None),
                            include_archived=True)

    def clear(self, *, scope: str, confirm: bool = False, hard: bool = False) -> int:
        """Forget every active entry this agent wrote in ``scope`` (seed 001: delete by
        scope): archived (reason ``forgotten``) unless ``hard``; one audit record. Needs
        ``confirm=True``. Returns how many entries went."""
        if confirm is not True:
            raise ValidationError("clear() forgets a whole scope: pass confirm=True")
        if not isinstance(hard, bool):
            raise ValidationError("hard must be True or False")
        chosen = Scope.parse(scope)
        self.startup()
        me = self.identity
        flt = EntryFilter(partitions=self.ctx.visible_partitions())
        with self._lock:
            self._access.flush()
            doomed = [e for e in self.ctx.storage.query(flt)
                      if e.scope is chosen and e.agent_id == me.agent_id]
            return self._writer.forget_many(doomed, {"scope": chosen.value}, hard=hard)

    # governance (logic in application/governance/) -----------------------------------
    def review(self, key_or_id: str, *, approve: bool) -> MemoryEntry:
        """Approve (into curated context) or reject an entry held for review."""
        entry = self._resolve(key_or_id)
        return self._governance.review(entry, approve)

    def pending_review(self) -> list[MemoryEntry]:
        """Entries held for review (low-trust content that looked like a prompt
        injection), kept out of ``curate()`` until ``review(..., approve=True)``."""
        self.startup()
        return self._governance.pending_review()

    def correct(self, key_or_id: str, new_content: str, **fields: Any) -> MemoryEntry:
        """Replace what an entry says: the original is archived (``corrected``), linked
        both ways, and never surfaces again except through history and as-of reads."""
        with self._lock:  # the lock before the store's transaction (plumbing.write_order)
            original = self._resolve(key_or_id)
            self._governance.check_may_change(original, "correct")
            fixed, _ = corrections.correct(self.ctx, original, new_content, fields,
                                           self._write)
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

    def purge(
        self, older_than: datetime | None = None, *, force: bool = False, dry_run: bool = False
    ) -> dict[str, Any]:
        """Hard-delete archived entries; what audit, history chains or summaries' sources
        need stays unless ``force=True``; ``dry_run`` only counts."""
        return retention.purge(self.ctx, self._audit, older_than, force=force, dry_run=dry_run)

    def erase(self, *, user_id: str | None = None, workspace_id: str | None = None,
              agent_id: str | None = None) -> dict[str, Any]:
        """Delete every entry of a data subject for good (see ``application.governance.erasure``)."""
        self.startup()
        self._access.flush()
        self._audit.flush()
        return erasure.erase(self.ctx, self._audit, user_id=user_id,
                             workspace_id=workspace_id, agent_id=agent_id)

    def replay_erasure(self, kind: str, subject_sha256: str, before: datetime) -> dict[str, Any]:
        """Apply an erasure another device made (sync): see ``erasure.replay``."""
        self.startup()
        self._access.flush()
        self._audit.flush()
        with self._lock:
            return erasure.replay(self.ctx, self._audit, kind, subject_sha256, before)

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

    def audit_log(self, entry: str | None = None) -> list[Any]:
        """This tenant's audit records, oldest first; with ``entry`` (an id or key, archived
        versions included), only the records about that entry."""
        self.startup()
        if entry is None:
            return self._audit.records()
        return self._audit.records(self._resolve(entry, include_archived=True).id)

    def health(self) -> dict[str, Any]:
        """Counts by trust band, entries pending review, unresolved conflicts and rolled
        back entries."""
        self.startup()
        return self._governance.health()

    def __repr__(self) -> str:
        state = "open" if self._ctx else ("closed" if self._closed else "not started")
        return f"Memory({self.location!r}, agent_id={self.identity.agent_id!r}, {state})"



# Every method that takes text refuses a string that is not valid Unicode (a lone
# surrogate) with a ValidationError naming the argument, before it runs (issue 34).
guard_methods(Memory, (
    "view", "store", "store_many", "get", "list_keys", "list_entries", "history", "forget",
    "search", "curate", "count_tokens", "session", "start_session", "remember", "consolidate",
    "profile", "record_outcome", "procedures", "clear", "review", "correct", "rollback_to",
    "apply_retention", "erase", "audit_log"))
# Every memory operation in an OpenTelemetry span (when the `otel` extra is installed)
# and timed for the server's metrics (issue 43; the table: plumbing.operation_spans).
trace_methods(Memory)
