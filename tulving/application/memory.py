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
from typing import IO, TYPE_CHECKING, Any, Literal, overload

import attrs

from tulving.application.operator import OPERATOR_NAMES, Operator
from tulving.application.plumbing.memory_settings import (
    DEFAULT,
    MemorySettings,
    normalise_location,
)
from tulving.application.plumbing.operation_spans import trace_methods
from tulving.application.plumbing.text_guard import guard_methods, public_methods
from tulving.domain.errors import ConfigError, NotVisibleError, ReadOnlyError, ValidationError
from tulving.domain.identity import Identity
from tulving.domain.input_limits import QUERY, TOKEN_BUDGET, check_search_limits
from tulving.domain.query import EntryFilter
from tulving.domain.query_expansion import parse_search_settings, parse_strong_settings
from tulving.domain.representation import parse_writing
from tulving.domain.types import MemoryType, Scope
from tulving.domain.write_policy import WritePolicy, parse_policy

if TYPE_CHECKING:  # what the signatures name; each service loads when a call needs it
    from tulving.application.agent_memory.jobs import KeyedRememberJobs, RememberJob
    from tulving.application.agent_memory.sessions import Session
    from tulving.application.bootstrap import Services
    from tulving.application.curation.curator import Curator
    from tulving.application.governance.audit import AuditCheck
    from tulving.application.governance.erasure import ErasureReport
    from tulving.application.governance.integrity import HealthReport, IntegrityReport
    from tulving.application.governance.retention import (
        PurgeReport,
        RetentionReport,
        RollbackReport,
    )
    from tulving.application.plumbing.context import MemoryContext
    from tulving.application.plumbing.llm_gateway import LLMGateway
    from tulving.application.portability.exporter import ExportReport
    from tulving.application.portability.importer import ImportReport
    from tulving.application.portability.lines_import import LinesReport
    from tulving.application.portability.sync import SyncRemote, SyncReport
    from tulving.application.portability.sync_service import SyncService
    from tulving.application.retrieval.lookup import EntryPage
    from tulving.application.retrieval.search import Searcher
    from tulving.application.upkeep.census import Readiness, StoreCensus
    from tulving.application.upkeep.eviction import EvictionReport
    from tulving.application.upkeep.maintenance import (
        InspectReport,
        MaintenancePurge,
        MaintenanceReport,
        ReembedReport,
        ReindexReport,
        VacuumReport,
    )
    from tulving.domain.curated import CuratedContext
    from tulving.domain.enrichment import EnrichmentReport, TaskFailure
    from tulving.domain.entry import MemoryEntry
    from tulving.domain.memory_reports import (
        ConsolidationReport,
        Profile,
        StatsReport,
        StoreReport,
    )
    from tulving.domain.migration_reports import MigrationExport, MigrationReport
    from tulving.domain.query import SearchResult
    from tulving.domain.records import AuditRecord, SessionRecord
    from tulving.ports.storage import StorageCapabilities, TokenStore, WriteOutcome

#: ``Memory.import_bundle``'s default cap on a bundle's size (``portability.bundle_format``'s
#: ``DEFAULT_MAX_BYTES``; a test keeps the two equal).
BUNDLE_MAX_BYTES = 8 * 1024**3
#: ``Memory.import_from``'s default cap on a foreign file (``portability.formats.
#: translation``'s ``DEFAULT_MAX_BYTES``; the same test keeps them equal).
FOREIGN_MAX_BYTES = 256 * 1024 * 1024
#: ``_write``'s "the session this write belongs to": the current one (``CURRENT_SESSION``
#: of ``agent_memory.session_writes``, looked up when a write runs).
_CURRENT: Any = object()

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from typing_extensions import deprecated

    from tulving.application.portability.sync_service import SyncService
    from tulving.application.upkeep.census import Readiness, StoreCensus
    from tulving.ports.storage import StorageCapabilities, TokenStore

Progress = Callable[[str, int, int], None]


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

    Every call that writes takes this Memory's lock (shared by its views) before the
    store's transaction (``plumbing.write_order``), so writes of one process never
    interleave. Reports are typed attrs classes with ``as_dict()`` for JSON (see
    ``tulving.domain.reports``).
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
        identity = Identity(agent_id, user_id, workspace_id, model_id)
        location = normalise_location(path)
        choices = {"storage": storage, "vectors": vectors, "embedder": embedder,
                   "tokenizer": tokenizer, "clock": clock, "llm": llm}
        if options is not None and not isinstance(options, Mapping):
            raise ConfigError("options must be a mapping of adapter kind to settings")
        for kind, given in (options or {}).items():
            if not isinstance(given, Mapping):
                raise ConfigError(f"options[{kind!r}] must be a mapping, "
                                  f"got {type(given).__name__}")
        adapter_options = {k: dict(v) for k, v in (options or {}).items()}
        context_window = parse_writing(adapter_options.pop("writing", {}))
        search_options = adapter_options.pop("search", {})
        expansion, weight, ranker = parse_search_settings(search_options)
        strong, strong_options, strong_knobs = parse_strong_settings(search_options)
        from tulving.application.governance.encryption import parse_encryption
        from tulving.application.governance.signing_key import load_signing_key
        from tulving.application.retrieval.options import SearchOptions

        SearchOptions(ranker=ranker)  # an unknown ranker fails here, before anything opens
        unknown = set(adapter_options) - set(choices)
        if unknown:
            raise ConfigError(f"options for unknown adapter kinds: {', '.join(sorted(unknown))}")
        # governance (see tulving.domain.write_policy): checked here, before anything opens
        parsed_policy = parse_policy(policy)
        signing_key = load_signing_key(parsed_policy)
        # encryption at rest (see governance.encryption): the key is read now, so a
        # missing one fails before anything opens
        key = parse_encryption(encryption)
        settings = MemorySettings(location, read_only, choices, adapter_options,
                                  context_window, expansion, weight, progress, signing_key,
                                  key, ranker, strong, strong_options, strong_knobs)
        self._settle(identity, settings, parsed_policy, threading.RLock(), None)

    def _settle(self, identity: Identity, settings: MemorySettings, policy: WritePolicy,
                lock: threading.RLock, parent: Memory | None) -> None:
        """Every field of a Memory, set once here (a view is settled with its parent's
        settings, policy and lock); the services come from ``bootstrap``."""
        self.identity = identity
        """Who this Memory reads and writes as: agent, user, workspace and model ids."""
        self.read_only = settings.read_only
        self.location = settings.location
        """Where the store lives: a file path, a ``postgresql://`` URL or None (default)."""
        self.policy = policy
        """The write policy every write passes (``policy=`` parsed into a ``WritePolicy``;
        read at each write, so it may be replaced)."""
        self._settings = settings
        self._lock = lock
        self._services: Services | None = None
        self._closed = False
        self._parent = parent  # set on views (see ``view``)
        self.operator = Operator(self._up, read_only=settings.read_only)
        """What the doors and operators need besides the agent's calls (token table,
        store census, sync side...): see ``tulving.application.operator``."""

    # lifecycle ------------------------------------------------------------------------
    def startup(self) -> Memory:
        """Open and reconcile everything; idempotent, thread-safe, cheap when done. A
        start that fails releases what it opened (the store, the vector index)."""
        with self._lock:
            if self._closed:
                raise ConfigError("this Memory is closed")
            if self._services is None:
                from tulving.application.bootstrap import bootstrap

                self._services = bootstrap(self._settings, self.identity,
                                           lambda: self.policy, self._lock)
            return self

    def _up(self) -> Services:
        """The services, started on first use."""
        services = self._services
        if services is None:
            self.startup()
            services = self._services
            assert services is not None
        return services

    def view(self, *, agent_id: str, user_id: str | None = None,
             workspace_id: str | None = None) -> Memory:
        """The same opened store, adapters and policy seen as another identity: how one
        process (the HTTP server) serves many tenants and agents over one SQLite file,
        whose single-writer lock allows one opener. Views share this Memory's lock, so
        their writes are serialized; closing a view flushes it and leaves the store open;
        closing this Memory closes the store under every view."""
        shared = self._up()
        identity = Identity(agent_id, user_id, workspace_id, self.identity.model_id)
        view = Memory.__new__(Memory)
        view._settle(identity, self._settings, self.policy, self._lock, self)
        from tulving.application.bootstrap import bootstrap

        with self._lock:
            view._services = bootstrap(self._settings, identity, lambda: view.policy,
                                       self._lock, shared=shared)
        return view

    @property
    def ctx(self) -> MemoryContext:
        """The opened adapters and identity the services work with (opens on first use);
        for the application layer inside this package, not a stable API: the doors use
        the calls below ("for the doors")."""
        return self._up().ctx

    @property
    def state(self) -> Literal["not started", "open", "closed"]:
        """Whether ``startup`` has run (``open``) and ``close`` not yet."""
        if self._services is not None:
            return "open"
        return "closed" if self._closed else "not started"

    def close(self) -> None:
        """Flush access statistics and buffered audit records, persist the vector index
        cache and release the store; idempotent. A view's close leaves the store open."""
        services = self._services
        if services is not None:
            from tulving.application.bootstrap import stop_workers

            stop_workers(services)  # before the lock: a running job waits for it
        with self._lock:
            services, self._services = self._services, None
            self._closed = True
            if services is not None:
                from tulving.application.bootstrap import shut_down

                shut_down(services)

    def __enter__(self) -> Memory:
        return self.startup()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def flush(self) -> None:
        """Write batched access statistics and the vector index cache now."""
        from tulving.application.plumbing.vector_sync import save_index

        services = self._up()
        services.flush_reads()
        if services.ctx.vectors is not None:
            save_index(services.ctx, force=True)

    # services, by the names tests and benchmarks have long used
    @property
    def _searcher(self) -> Searcher:
        return self._up().searcher

    @property
    def _curator(self) -> Curator:
        return self._up().curator

    @property
    def _jobs(self) -> KeyedRememberJobs:
        return self._up().jobs

    @property
    def _llm(self) -> LLMGateway:
        return self._up().llm

    # writes ---------------------------------------------------------------------------
    @overload
    def store(
        self, content: str, *, type: MemoryType | str, key: str | None = ...,
        tags: Iterable[str] | None = ..., importance: float | None = ...,
        pinned: bool | None = ..., metadata: Mapping[str, Any] | None = ...,
        valid_from: datetime | None = ..., dedup: bool = ..., report: Literal[False] = ...,
        **more: Any,
    ) -> MemoryEntry: ...

    @overload
    def store(
        self, content: str, *, type: MemoryType | str, key: str | None = ...,
        tags: Iterable[str] | None = ..., importance: float | None = ...,
        pinned: bool | None = ..., metadata: Mapping[str, Any] | None = ...,
        valid_from: datetime | None = ..., dedup: bool = ..., report: Literal[True],
        **more: Any,
    ) -> StoreReport: ...

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
        report: bool = False,
        **more: Any,
    ) -> MemoryEntry | StoreReport:
        """Store one memory. An active entry with the same key (in the same scope) is
        superseded: archived with reason ``superseded`` and linked both ways, and the new
        version keeps the tags, importance, pinned flag and metadata this call leaves out
        (None); pass ``tags=[]``, ``importance=0.5``, ``pinned=False`` or ``metadata={}``
        to clear one. A new key (or no key) gets the defaults: no tags, importance 0.5,
        not pinned, no metadata. One with the same ``entity``/``attribute`` and another
        ``value`` is superseded too. A preference or fact that restates an existing one
        reinforces it: no row is added, the existing entry is returned with its
        ``metadata["evidence"]`` (count, last seen, sources) counting this statement; any
        other exact restatement is a no-op (``dedup=False`` turns both off; rules in
        ``tulving.application.writing.contradictions``). ``report=True`` returns a
        ``StoreReport``: the entry and what the write did (``outcome``: added,
        reinforced, updated, replaced, unchanged, disputed)."""
        if not isinstance(report, bool):
            raise ValidationError("report must be True or False")
        fields = dict(content=content, type=type, key=key, tags=tags, importance=importance,
                      pinned=pinned, metadata=metadata, valid_from=valid_from, dedup=dedup,
                      **more)
        outcome = self._write([fields], "store")[0]
        if not report:
            return outcome.entry
        from tulving.domain.memory_reports import OUTCOMES, StoreReport

        return StoreReport(outcome.entry, OUTCOMES.get(outcome.decision or "add", "added"),
                           outcome.superseded.id if outcome.superseded else
                           outcome.entry.supersedes if outcome.decision in (
                               "update", "invalidate") else None)

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
    ) -> LinesReport:
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

        services = self._up()
        with self._lock:  # before the store's transactions (plumbing.write_order)
            return store_lines(services.ctx, services.writes, lines, source=source,
                               batch_size=batch_size, progress=progress)

    def _write(
        self, batch: list[dict[str, Any]], operation: str, *,
        session_id: str | None = _CURRENT,
    ) -> list[WriteOutcome]:
        """The one write path (``agent_memory.session_writes``), in the session this
        write belongs to (the current one unless the caller names one)."""
        if session_id is _CURRENT:
            from tulving.application.agent_memory.session_writes import CURRENT_SESSION

            session_id = CURRENT_SESSION
        return self._up().writes.write(batch, operation, session_id=session_id)

    # reads ----------------------------------------------------------------------------
    def _fresh(self) -> MemoryContext:
        """The context, with the vector index caught up with what another process
        committed when this Memory is a reader (a writer's index follows its own writes)."""
        ctx = self.ctx
        if self.read_only:
            from tulving.application.plumbing.vector_sync import catch_up

            catch_up(ctx)
        return ctx

    def _resolve(self, key_or_id: str, *, include_archived: bool = False) -> MemoryEntry:
        from tulving.application.retrieval import lookup

        services = self._up()
        try:
            return lookup.resolve(services.ctx, key_or_id, include_archived=include_archived)
        except NotVisibleError as exc:
            services.audit.record_refusal(exc.entry_id)
            raise

    def get(self, key_or_id: str, *, as_of: datetime | None = None,
            include_archived: bool = False) -> MemoryEntry:
        """The active entry with this id or key, raw (not redacted); with ``as_of``, the
        entry as the store held it at that transaction time; with ``include_archived``,
        also an archived version by its id (an older version from ``history``)."""
        from tulving.application.retrieval import lookup

        if not isinstance(include_archived, bool):
            raise ValidationError("include_archived must be True or False")
        services = self._up()
        if as_of is not None:
            try:
                entry = lookup.get_as_of(services.ctx, key_or_id, as_of)
            except NotVisibleError as exc:
                services.audit.record_refusal(exc.entry_id)
                raise
        else:
            entry = self._resolve(key_or_id, include_archived=include_archived)
        services.note_read("get", {"key_or_id": key_or_id, "as_of": as_of}, [entry.id],
                           [entry.id] if as_of is None else [])
        return entry

    def list_keys(self, prefix: str = "") -> list[str]:
        """The keys of the active entries this identity sees, starting with ``prefix``."""
        from tulving.application.retrieval import lookup

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
    ) -> EntryPage:
        """Every visible entry, with or without a key, oldest first, ``limit`` at a time;
        pass the page's ``next_cursor`` back for the next one (None: no more). With
        ``scope`` a page may come back short before the last one (see ``next_cursor``)."""
        from tulving.application.retrieval import lookup
        from tulving.application.retrieval.search import build_filter

        if not isinstance(include_archived, bool):
            raise ValidationError("include_archived must be True or False")
        flt = attrs.evolve(build_filter(self.ctx, types, tags, since, until),
                           include_archived=include_archived)
        chosen = Scope.parse(scope) if scope is not None else None
        page = lookup.list_entries(self.ctx, flt, limit, cursor, chosen)
        self._up().note_read("list_entries", {"limit": limit, "cursor": cursor},
                             [e.id for e in page.entries], [])
        return page

    def history(self, key: str) -> list[MemoryEntry]:
        """Every version of ``key``, newest first, following the supersede chain."""
        from tulving.application.retrieval import lookup

        return lookup.history(self.ctx, key)

    def forget(self, key_or_id: str, *, hard: bool = False) -> MemoryEntry:
        """Archive (reason ``forgotten``); with ``hard=True`` delete it for good."""
        services = self._up()
        with self._lock:  # the lock before the store's transaction (plumbing.write_order)
            entry = self._resolve(key_or_id, include_archived=hard)
            services.governance.check_may_change(entry, "forget")
            return services.writes.writer.forget(entry, key_or_id, hard=hard)

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
        distinct: bool = True,
    ) -> list[SearchResult]:
        """Hybrid (default), semantic, lexical or key search over visible active entries;
        with ``as_of``, over the entries as the store held them at that transaction time.
        Identical contents are one hit and a memory that is only the query again is left
        out; ``distinct=False`` returns every matching entry (for stores that address
        their items by key, where two items may hold the same text)."""
        from tulving.application.retrieval.search import build_filter

        check_search_limits(query, top_k, min_score)
        services = self._up()
        flt = build_filter(self._fresh(), types, tags, since, until, as_of, recall=True)
        results = services.searcher.search(query, top_k, mode, flt, min_score,
                                           distinct=distinct)
        ids = [r.entry.id for r in results]
        services.note_read("search", {"query": query, "top_k": top_k, "mode": mode,
                                      "as_of": as_of}, ids, ids if as_of is None else [])
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
        from tulving.application.curation.after_curate import apply_after_curate
        from tulving.application.retrieval.search import build_filter
        from tulving.plugins.hooks import CurateContext

        QUERY.check(query)
        TOKEN_BUDGET.check(token_budget)
        services = self._up()
        flt = build_filter(self._fresh(), types, tags, since, until, recall=True)
        result = services.curator.curate(query, token_budget, mode, flt, weights,
                                         explain=explain)
        result = apply_after_curate(
            services.ctx.hooks, result,
            CurateContext(self.identity.agent_id, self.identity.tenant, result.mode,
                          result.query, result.token_budget),
            services.curator.tokenizer.count)
        ids = [c.entry.id for c in result.entries]
        services.note_read("curate", {"query": query, "token_budget": token_budget,
                                      "mode": mode}, ids, ids)
        return result

    def count_tokens(self, text: str) -> int:
        """What ``text`` costs with the tokenizer ``curate()`` counts budgets with, so a
        caller (the Kairos plugin's budget validator) can check a budget independently."""
        if not isinstance(text, str):
            raise ValidationError("text must be a string")
        curator = self._up().curator
        return int(curator.tokenizer.count(text)) if text else 0

    # agent memory: sessions, remember, consolidation, procedures -----------------------
    # (logic in application/agent_memory/)
    def session(self, goal: str | None = None) -> Session:
        """``with memory.session(goal) as s:`` an explicit session, ended (and summarised)
        on exit. An implicit session opened by earlier writes yields to it."""
        from tulving.application.agent_memory.sessions import Session

        record = self.start_session(goal)
        return Session(record, lambda: self._end_session(only=record.id))

    def _end_session(self, reason: str = "ended",
                     only: str | None = None) -> SessionRecord | None:
        services = self._up()
        sessions = services.sessions
        if not self.read_only:  # the summary reads what was read off the session's turns
            from tulving.application.agent_memory.read_off_turns import KIND as READ_OFF

            services.enricher.wait(kinds=[READ_OFF])
        with self._lock:
            return sessions.end(reason, only=only)

    def start_session(self, goal: str | None = None) -> SessionRecord:
        """Start an explicit session (``ValidationError`` if one is already active)."""
        sessions = self._up().sessions
        with self._lock:
            return sessions.start(goal)

    def end_session(self) -> SessionRecord | None:
        """End the current session: write its summary, archive what it replaces; None
        when none was open. The current session is the store's (see
        ``agent_memory.sessions``): one started by another process of this agent
        (another server replica) is the one ended."""
        return self._end_session("ended")

    def shutdown_session(self) -> SessionRecord | None:
        """For integrations (MCP server shutdown): end the session with reason ``shutdown``."""
        return self._end_session("shutdown")

    @property
    def session_id(self) -> str | None:
        return self.ctx.session_id

    @overload
    def remember(
        self, text: str, *, source_type: str = ..., idempotency_key: str | None = ...,
        wait: Literal[True] | None = ..., valid_from: datetime | None = ...,
        subject: str | None = ...,
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
        wait: bool | None = None,
        valid_from: datetime | None = None,
        subject: str | None = None,
    ) -> list[MemoryEntry] | RememberJob:
        """Keep raw text (a message or a "Speaker: text" transcript) as memories: every
        turn verbatim (an EPISODE), committed and findable by full text when this returns
        (the turns are returned). What is read off them (typed preferences, facts,
        decisions, plans, with ``source_entry_ids`` naming their turns; a turn that is
        itself a decision, plan or procedure takes that type) and their vectors follow as
        durable background work (``stats().enrichment``; ``wait_enriched()`` waits).
        ``wait=True`` waits for that work and returns the turns and what was read off
        them. An ``idempotency_key`` runs the call through the durable job queue: the
        same key twice is a no-op (the first call's entries); ``wait=False`` (deprecated)
        returns a ``RememberJob`` (``status``, ``entries()``, ``wait()``)."""
        return self._up().rememberer.remember(
            text, source_type=source_type, idempotency_key=idempotency_key, wait=wait,
            valid_from=valid_from, subject=subject,
        )

    def run_jobs(self) -> int:
        """Run this agent's queued ``remember`` jobs now; returns how many ran."""
        return self._up().jobs.run_pending()

    def pending_jobs(self) -> int:
        """How many of this agent's ``remember(..., wait=False)`` jobs have not run yet."""
        return len(self._up().jobs.mine())

    def consolidate(
        self, *, dry_run: bool = True, types: Sequence[MemoryType | str] | None = None,
        tags: Sequence[str] | None = None,
    ) -> ConsolidationReport:
        """Merge clusters of similar memories and lift recurring episodes into facts;
        ``dry_run`` (default) only returns the plan."""
        from tulving.application.agent_memory.consolidation import consolidate

        if not isinstance(dry_run, bool):
            raise ValidationError("dry_run must be True or False")
        if not dry_run and self.read_only:  # even when the plan is empty: nothing applied
            raise ReadOnlyError("consolidate(dry_run=False) writes: this Memory is "
                                "read-only (a dry run shows the plan)")
        parsed = [MemoryType.parse(t) for t in types] if types is not None else None
        services = self._up()
        with self._lock:
            return consolidate(
                services.ctx, services.llm,
                lambda fields: services.writes.write([fields], "consolidate")[0].entry,
                services.ctx.clock.now(), dry_run=dry_run, types=parsed, tags=tags,
                subject=self.identity.user_id or "user",
            )

    def profile(self, subject: str = "user") -> Profile:
        """What is known about ``subject`` (an entity): facts, preferences, and a text."""
        from tulving.application.agent_memory.profile import build_profile

        return build_profile(self.ctx, subject)

    def record_outcome(self, key_or_id: str, success: bool) -> MemoryEntry:
        """Count one success or failure on a PROCEDURE entry."""
        from tulving.application.agent_memory.procedures import with_outcome
        from tulving.application.plumbing.write_order import writing

        services = self._up()
        with self._lock:
            entry = services.governance.seal(
                with_outcome(self._resolve(key_or_id), success, services.ctx))
            with writing(services.ctx):
                services.ctx.storage.replace(entry)
                services.audit.record("record_outcome", {"key_or_id": key_or_id, "success": success},
                                   entry_id=entry.id, details={"success": success})
            return entry

    def procedures(self, query: str, top_k: int = 5) -> list[SearchResult]:
        """Relevant procedures, ranked by relevance and effectiveness (success rate)."""
        from tulving.application.agent_memory.procedures import rank_procedures

        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValidationError("top_k must be a positive integer")
        hits = self.search(query, top_k=max(10, 3 * top_k), types=[MemoryType.PROCEDURE])
        return rank_procedures(hits, top_k)

    def working_memory(self, limit: int = 20) -> list[MemoryEntry]:
        """The active session's most recent entries, oldest first (at most ``limit``)."""
        from tulving.application.agent_memory.procedures import working_memory

        return working_memory(self.ctx, self.ctx.session_id, limit)

    def evict(self, threshold: float = 0.05, *, dry_run: bool = False) -> EvictionReport:
        """Archive (reason ``evicted``) entries whose decayed importance fell below
        ``threshold``; DECISION and pinned entries are exempt. Idempotent."""
        from tulving.application.upkeep.eviction import evict

        services = self._up()
        services.access.flush()
        with self._lock:
            return evict(services.ctx, services.audit, threshold, dry_run=dry_run)

    def stats(self) -> StatsReport:
        """Counts by type and tag, the storage engine's figures, the adapters in use, the
        LLM's calls and fallbacks, pending jobs, the current session and the background
        work not written yet (``enrichment``)."""
        from tulving.application.upkeep.statistics import store_stats

        services = self._up()
        ctx = self._fresh()
        return store_stats(ctx, services.llm.stats(), len(services.jobs.mine()),
                           services.enricher.report())

    def wait_enriched(self, timeout: float | None = None, *,
                      kinds: Iterable[str] | None = None) -> EnrichmentReport:
        """Wait until what derives from the writes so far is written (the vectors a write
        deferred, extraction, summaries: the enrichment tasks of ``kinds``, default all),
        running them in this thread too; returns what is left when ``timeout`` seconds
        pass first (``.settled`` is True when nothing is). Reads never wait on their own:
        call this when a search must see the vectors of what was just written. A
        read-only Memory waits for the writer's worker (in another process) to run them."""
        if timeout is not None and (not isinstance(timeout, (int, float))
                                    or isinstance(timeout, bool) or timeout < 0):
            raise ValidationError("timeout must be a number of seconds >= 0, or None")
        return self._up().enricher.wait(kinds, timeout)

    def enrichment_failures(self, limit: int = 100) -> list[TaskFailure]:
        """Enrichment tasks parked as failed after their last attempt, with the error."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValidationError("limit must be a positive integer")
        return self._up().enricher.failed(limit)

    def retry_enrichment(self, kind: str | None = None) -> int:
        """Queue failed enrichment tasks (of ``kind``, or all) again; how many."""
        services = self._up()
        writes = services.writes
        writes.require_writable("retry_enrichment")
        return services.enricher.retry_failed(kind)

    # upkeep (logic in application/upkeep/) ---------------------------------------------
    @overload
    def maintenance(self, action: Literal["inspect"], *, dry_run: bool = ...,
                    archived_before: datetime | None = ..., force: bool = ...
                    ) -> InspectReport: ...

    @overload
    def maintenance(self, action: Literal["purge"], *, dry_run: bool = ...,
                    archived_before: datetime | None = ..., force: bool = ...
                    ) -> MaintenancePurge: ...

    @overload
    def maintenance(self, action: Literal["vacuum"], *, dry_run: bool = ...,
                    archived_before: datetime | None = ..., force: bool = ...
                    ) -> VacuumReport: ...

    @overload
    def maintenance(self, action: Literal["reindex"], *, dry_run: bool = ...,
                    archived_before: datetime | None = ..., force: bool = ...
                    ) -> ReindexReport: ...

    @overload
    def maintenance(self, action: Literal["reembed"], *, dry_run: bool = ...,
                    archived_before: datetime | None = ..., force: bool = ...
                    ) -> ReembedReport: ...

    @overload
    def maintenance(self, action: str, *, dry_run: bool = ...,
                    archived_before: datetime | None = ..., force: bool = ...
                    ) -> MaintenanceReport: ...

    def maintenance(
        self, action: str, *, dry_run: bool = True, archived_before: datetime | None = None,
        force: bool = False,
    ) -> MaintenanceReport:
        """``inspect`` | ``purge`` (archived entries; ``dry_run`` by default; the same
        purge as ``purge()``, ``force`` included) | ``vacuum`` | ``reindex`` (rebuild
        the vector index from stored vectors) | ``reembed`` (rebuild the stored vectors
        by the current representation rule and context window). Each action has its
        report (``upkeep.maintenance``)."""
        from tulving.application.upkeep import maintenance

        services = self._up()
        with self._lock:
            return maintenance.run(services.ctx, action, audit=services.audit,
                                   dry_run=dry_run, archived_before=archived_before,
                                   force=force, progress=self._settings.progress)

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
        from tulving.application.governance.encryption import parse_encryption
        from tulving.application.portability.exporter import export
        from tulving.application.retrieval.search import build_filter

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

        services = self._up()
        with self._lock:
            services.access.flush()
            report = export(services.ctx, target, flt, scope=chosen,
                            include_embeddings=include_embeddings, redacted=redact,
                            filters=filters, library_version=__version__,
                            progress=self._settings.progress, encryption=bundle_key)
            if not self.read_only:  # a reader records no audit (see __init__)
                services.audit.record("export", {"filters": filters, "redact": redact,
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
        max_bytes: int = BUNDLE_MAX_BYTES,
        encryption: Any = None,
        new_ids: str = "keep",
    ) -> ImportReport:
        """Merge a bundle into this store in one all-or-nothing call (see
        ``tulving.application.portability.importer``); the report lists what was added,
        updated, skipped and in conflict, and how many entries were re-embedded. An
        encrypted bundle needs its key in ``encryption``; a plain one must come without.
        ``new_ids="derive"`` stores the entries this tenant does not hold yet under ids of
        its own (derived from the bundle's), so no bundle reaches or probes another
        tenant's ids (what the server does for its tenants); ``"keep"`` keeps the
        bundle's ids and refuses one another tenant holds."""
        from tulving.application.governance.encryption import parse_encryption

        bundle_key = parse_encryption(encryption)
        imports = self._up().imports
        importer = imports.importer(reembedding=reembedding, on_conflict=on_conflict,
                                    dry_run=dry_run, remap_identity=remap_identity,
                                    max_bytes=max_bytes, encryption=bundle_key,
                                    new_ids=new_ids)
        return imports.run(importer, source)

    def import_from(
        self,
        source: str | os.PathLike[str] | bytes | IO[bytes],
        *,
        format: str,
        dry_run: bool = False,
        remap_identity: bool = False,
        on_conflict: str = "newest",
        max_bytes: int = FOREIGN_MAX_BYTES,
    ) -> MigrationReport:
        """Merge another memory system's file into this store, all or nothing, as a
        bundle is merged: ``format`` is ``"mem0"`` (get_all's JSON, with history),
        ``"zep"`` (a Graphiti graph's episodes, facts and entities), ``"letta"`` (an agent
        file's memory blocks, archival passages) or ``"otel"`` (OpenTelemetry memory
        records). A second import of the same file changes nothing; the report says what
        was mapped to what, and what was left out and why (see
        ``tulving.application.portability.migration``)."""
        from tulving.application.portability.migration import import_from

        return import_from(self._up().imports, format, source, dry_run=dry_run,
                           remap_identity=remap_identity, on_conflict=on_conflict,
                           max_bytes=max_bytes)

    def export_to(
        self,
        target: str | os.PathLike[str] | IO[bytes],
        *,
        format: str,
        tags: Sequence[str] | None = None,
        types: Sequence[MemoryType | str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        include_archived: bool = True,
        redact: bool = False,
    ) -> MigrationExport:
        """Write what this identity sees (filtered) for another system: ``"otel"``
        (OpenTelemetry memory records; every field kept in each record's metadata) or
        ``"letta"`` (an agent file whose memory blocks are the pinned memories). Either
        imports back through ``import_from`` with nothing lost that the format holds."""
        from tulving.application.portability.migration import export_to
        from tulving.application.retrieval.search import build_filter

        for name, flag in (("include_archived", include_archived), ("redact", redact)):
            if not isinstance(flag, bool):
                raise ValidationError(f"{name} must be True or False")
        self.startup()
        flt = attrs.evolve(build_filter(self.ctx, types, tags, since, until),
                           include_archived=include_archived)
        services = self._up()
        with self._lock:
            services.access.flush()
            report = export_to(services.ctx, format, target, flt, redacted=redact)
            if not self.read_only:
                services.audit.record("export", {"format": format, "redact": redact},
                                      details={"entries": report.records})
        return report

    def sync(self, remote: SyncRemote, *, encryption: Any = None) -> SyncReport:
        """Exchange deltas with a Tulving server (``remote``: a ``TulvingClient``): pull
        what other devices pushed since this store's watermark and merge it, then push
        what changed here. ``encryption`` (``"env:NAME"``, ``"file:PATH"``) encrypts
        the deltas end to end: the server stores them without being able to read them,
        and every device of the tenant must use the same key. Interrupted at any point,
        a second call converges (see ``portability.sync``)."""
        from tulving.application.governance.encryption import parse_encryption
        from tulving.application.plumbing.write_order import writing
        from tulving.application.portability.sync import sync
        from tulving.version import __version__

        key = parse_encryption(encryption)
        services = self._up()
        with self._lock:
            services.access.flush()
            report = sync(services.sync_side(), remote, key, __version__)
            with writing(services.ctx):
                services.audit.record("sync", {"remote": remote.sync_id},
                                      details=report.as_dict())
        return report

    def clear(self, *, scope: str, confirm: bool = False, hard: bool = False) -> int:
        """Forget every active entry this agent wrote in ``scope`` (seed 001: delete by
        scope): archived (reason ``forgotten``) unless ``hard``; one audit record. Needs
        ``confirm=True``. Returns how many entries went."""
        if confirm is not True:
            raise ValidationError("clear() forgets a whole scope: pass confirm=True")
        if not isinstance(hard, bool):
            raise ValidationError("hard must be True or False")
        chosen = Scope.parse(scope)
        services = self._up()
        me = self.identity
        flt = EntryFilter(partitions=services.ctx.visible_partitions())
        with self._lock:
            services.access.flush()
            doomed = [e for e in services.ctx.storage.query(flt)
                      if e.scope is chosen and e.agent_id == me.agent_id]
            return services.writes.writer.forget_many(doomed, {"scope": chosen.value},
                                                      hard=hard)

    # governance (logic in application/governance/) -----------------------------------
    def review(self, key_or_id: str, *, approve: bool) -> MemoryEntry:
        """Approve (into curated context) or reject an entry held for review."""
        governance = self._up().governance
        with self._lock:  # the lock before the store's transaction (plumbing.write_order)
            return governance.review(self._resolve(key_or_id), approve)

    def pending_review(self) -> list[MemoryEntry]:
        """Entries held for review (low-trust content that looked like a prompt
        injection), kept out of ``curate()`` until ``review(..., approve=True)``."""
        return self._up().governance.pending_review()

    def correct(self, key_or_id: str, new_content: str, **fields: Any) -> MemoryEntry:
        """Replace what an entry says: the original is archived (``corrected``), linked
        both ways, and never surfaces again except through history and as-of reads."""
        services = self._up()
        with self._lock:  # the lock before the store's transaction (plumbing.write_order)
            original = self._resolve(key_or_id)
            services.governance.check_may_change(original, "correct")
            from tulving.application.governance import corrections

            fixed, _ = corrections.correct(services.ctx, original, new_content, fields,
                                           self._write)
        return fixed

    def rollback_to(self, point: str | datetime) -> RollbackReport:
        """Undo this agent's writes after an entry (by id) or a moment (aware datetime)."""
        services = self._up()
        with self._lock:  # the lock before the store's transaction (plumbing.write_order)
            anchor: str | None = None
            if isinstance(point, datetime):
                from tulving.domain.entry_factory import check_time

                moment = check_time("point", point)
            else:
                entry = self._resolve(point, include_archived=True)
                anchor, moment = entry.id, entry.created_at
            assert moment is not None
            from tulving.application.governance import retention

            return retention.rollback_to(services.ctx, services.audit, moment, anchor)

    def apply_retention(self, policy: Mapping[str, Any]) -> RetentionReport:
        """Archive by per-scope TTL and max entries: ``{"agent": {"ttl_days": 30}}``;
        the report maps each scope to what was archived in it."""
        from tulving.application.governance import retention

        services = self._up()
        with self._lock:
            return retention.apply_retention(services.ctx, services.audit, policy)

    def purge(
        self, older_than: datetime | None = None, *, force: bool = False, dry_run: bool = False
    ) -> PurgeReport:
        """Hard-delete archived entries; what audit, history chains or summaries' sources
        need stays unless ``force=True``; ``dry_run`` only counts."""
        from tulving.application.governance import retention

        services = self._up()
        with self._lock:
            return retention.purge(services.ctx, services.audit, older_than, force=force,
                                   dry_run=dry_run)

    def erase(self, *, user_id: str | None = None, workspace_id: str | None = None,
              agent_id: str | None = None) -> ErasureReport:
        """Delete every entry of a data subject for good (see ``application.governance.erasure``)."""
        from tulving.application.governance import erasure

        services = self._up()
        services.flush_reads()
        with self._lock:
            return erasure.erase(services.ctx, services.audit, user_id=user_id,
                                 workspace_id=workspace_id, agent_id=agent_id)

    def verify(self) -> IntegrityReport:
        """Tamper check of every visible entry: content hash and HMAC signature."""
        return self._up().governance.verify()

    def verify_audit(self) -> AuditCheck:
        """Check this tenant's audit hash chain: a modified, removed or reordered record
        is reported in ``problems``."""
        return self._up().audit.verify()

    def export_audit(self, target: str | os.PathLike[str] | IO[str]) -> int:
        """Write this tenant's audit log as NDJSON to a path or text file; returns count."""
        audit = self._up().audit
        return audit.export(os.fspath(target) if isinstance(target, os.PathLike) else target)

    def audit_log(self, entry: str | None = None) -> list[AuditRecord]:
        """This tenant's audit records, oldest first; with ``entry`` (an id or key, archived
        versions included), only the records about that entry."""
        audit = self._up().audit
        if entry is None:
            return audit.records()
        return audit.records(self._resolve(entry, include_archived=True).id)

    def health(self) -> HealthReport:
        """Counts by trust band, entries pending review, unresolved conflicts and rolled
        back entries."""
        return self._up().governance.health()

    if TYPE_CHECKING:  # the deprecated aliases set below, as type checkers see them
        @deprecated("use memory.operator.touch")
        def touch(self, entry_ids: Sequence[str]) -> None: ...
        @deprecated("use memory.operator.now")
        def now(self) -> datetime: ...
        @property
        @deprecated("use memory.operator.capabilities")
        def capabilities(self) -> StorageCapabilities: ...
        @deprecated("use memory.operator.read_scope")
        def read_scope(self) -> AbstractContextManager[None]: ...
        @deprecated("use memory.operator.token_store")
        def token_store(self) -> TokenStore: ...
        @deprecated("use memory.operator.keeps_sync_log")
        def keeps_sync_log(self) -> bool: ...
        @deprecated("use memory.operator.store_census")
        def store_census(self, tenants: Iterable[str] = ()) -> StoreCensus: ...
        @deprecated("use memory.operator.pool_stats")
        def pool_stats(self) -> Mapping[str, int] | None: ...
        @deprecated("use memory.operator.audited_tenants")
        def audited_tenants(self) -> set[str]: ...
        @deprecated("use memory.operator.warm_up")
        def warm_up(self) -> Readiness: ...
        @deprecated("use memory.operator.sync_service")
        def sync_service(self) -> SyncService: ...
        @deprecated("use memory.operator.sync_filter")
        def sync_filter(self) -> EntryFilter: ...
        @deprecated("use memory.operator.replay_erasure")
        def replay_erasure(self, kind: str, subject_sha256: str,
                           before: datetime) -> ErasureReport: ...
        @deprecated("use memory.operator.audit_refusal")
        def audit_refusal(self, inputs: Mapping[str, str],
                          details: Mapping[str, str]) -> None: ...

    def __repr__(self) -> str:
        return (f"Memory({self.location!r}, agent_id={self.identity.agent_id!r}, "
                f"{self.state})")



def _deprecated_alias(name: str) -> Any:
    """``Memory.<name>``, moved to ``memory.operator`` in 0.2: the old name forwards
    there with a DeprecationWarning for one release."""
    import warnings

    target = getattr(Operator, name)

    def warn() -> None:
        warnings.warn(f"Memory.{name} is deprecated: use memory.operator.{name} "
                      "(the door and operator surface; removed in 0.3)",
                      DeprecationWarning, stacklevel=3)

    if isinstance(target, property):
        def read(self: Memory) -> Any:
            warn()
            return getattr(self.operator, name)

        return property(read, doc=f"Deprecated: ``memory.operator.{name}``.")

    def forward(self: Memory, *args: Any, **kwargs: Any) -> Any:
        warn()
        return getattr(self.operator, name)(*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"Deprecated: ``memory.operator.{name}``."
    return forward


for _name in OPERATOR_NAMES:
    setattr(Memory, _name, _deprecated_alias(_name))
del _name


#: Public methods whose arguments are not checked for invalid Unicode: a path or file
#: (``os.fsdecode`` carries an undecodable file name's bytes as lone surrogates, a name
#: that is legitimate), a sync client, and a line import (it names each bad line in its
#: own error, by line number).
UNGUARDED = frozenset({"export", "export_to", "import_bundle", "import_from", "export_audit",
                       "sync", "store_lines"})

# Every other public method refuses a string that is not valid Unicode (a lone surrogate)
# with a ValidationError naming the argument, before it runs: the list is
# derived, so a method added to Memory is guarded unless it is named above.
guard_methods(Memory, [name for name in public_methods(Memory)
                       if name not in UNGUARDED and name not in OPERATOR_NAMES])
# Every memory operation in an OpenTelemetry span (when the `otel` extra is installed)
# and timed for the server's metrics (the table: plumbing.operation_spans).
trace_methods(Memory)
