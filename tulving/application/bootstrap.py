"""The composition root of a ``Memory`` (cosmicpython's ``bootstrap()``): the one place
that opens the chosen adapters and composes the application services over them.

Why one function: ``Memory.startup`` and ``Memory.view`` (another identity over the same
opened store) used to build the object graph twice, the view by copying a dozen of the
facade's attributes by hand, and the two drifted. Now both call :func:`bootstrap`: with
no ``shared`` services it opens the adapters (``plumbing.composition`` resolves names
through the plugin registry), otherwise it reuses the adapters ``shared`` opened under
another identity. Either way it composes the same services, hands them what they need
(their context, which carries the Memory's lock, the audit trail, a write path), never
the facade, and returns them as one :class:`Services`.

A start that fails releases everything it opened, in reverse order: the vector index (a
memory-mapped cache, a file lock) and the store (the single-writer lock of a SQLite
file), so a second attempt, or another process, can open them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import attrs

from tulving.application.agent_memory.jobs import KeyedRememberJobs
from tulving.application.agent_memory.procedures import working_memory
from tulving.application.agent_memory.read_off_turns import KIND as READ_OFF
from tulving.application.agent_memory.read_off_turns import ReadOffTurns
from tulving.application.agent_memory.remembering import Rememberer
from tulving.application.agent_memory.session_writes import SessionWrites
from tulving.application.agent_memory.sessions import SessionManager
from tulving.application.curation.curator import Curator
from tulving.application.governance.audit import AuditTrail
from tulving.application.governance.encryption import require_encrypted
from tulving.application.governance.integrity import Governance
from tulving.application.plumbing.composition import default_names, resolve
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.deferred_vectors import DeferredVectors
from tulving.application.plumbing.enrichment import Enricher
from tulving.application.plumbing.llm_gateway import DEFAULT_MAX_CALLS, LLMGateway
from tulving.application.plumbing.vector_sync import (
    check_model,
    embed_missing,
    note_representation,
    reconcile_index,
    save_index,
)
from tulving.application.plumbing.warnings_once import warn_once
from tulving.application.portability.importer import ImportTarget
from tulving.application.portability.sync import LocalSide
from tulving.application.retrieval.access import AccessTracker
from tulving.application.retrieval.expansion import QueryExpander
from tulving.application.retrieval.options import SearchOptions
from tulving.application.retrieval.search import Searcher
from tulving.application.retrieval.strong import StrongTier
from tulving.application.retrieval.strong_enrichment import backfill, register_strong
from tulving.application.writing.writer import Writer
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ConfigError, StorageError
from tulving.domain.identity import Identity
from tulving.domain.write_policy import WritePolicy
from tulving.plugins.registry import AdapterContext, get_manager
from tulving.ports.storage import ReadOnlyOpen

Progress = Callable[[str, int, int], None]

#: How many of the active session's latest entries curate() puts first.
WORKING_MEMORY_IN_CURATE = 5


@attrs.frozen
class Settings:
    """What ``Memory(...)`` was given, checked and parsed (no I/O: the constructor stays
    cheap): where the store is, the adapter choices (names, instances or ``DEFAULT``)
    with their options, and the settings the services take."""

    location: str
    read_only: bool
    choices: Mapping[str, Any]
    options: Mapping[str, Mapping[str, Any]]
    context_window: int
    llm_expansion: bool
    expansion_weight: float
    progress: Progress | None
    signing_key: bytes | None
    encryption: EncryptionKey | None
    ranker: str = "fused"
    #: the strong tier's encoder (an embedder name or instance; None: no strong tier),
    #: its adapter options and the re-scoring knobs (``SearchOptions.strong_*``)
    strong: Any = None
    strong_options: Mapping[str, Any] = attrs.field(factory=dict)
    strong_knobs: Mapping[str, Any] = attrs.field(factory=dict)


class AccessRecorder(Protocol):
    """Where reads note the entries they returned (``retrieval.access``)."""

    def record(self, entry_ids: Iterable[str]) -> None: ...

    def flush(self) -> None: ...


class NotRecorded:
    """Access statistics of a read-only Memory: left out (a reader writes nothing; see
    ``Memory``'s ``read_only``)."""

    def record(self, entry_ids: Iterable[str]) -> None:
        return None

    def flush(self) -> None:
        return None


@attrs.frozen
class Services:
    """A Memory's composed services over its opened adapters (``ctx``)."""

    ctx: MemoryContext
    llm: LLMGateway
    access: AccessRecorder
    audit: AuditTrail
    governance: Governance
    writer: SessionWrites
    searcher: Searcher
    curator: Curator
    sessions: SessionManager
    rememberer: Rememberer
    imports: ImportTarget
    #: The enrichment kinds and their worker (plumbing.enrichment); a view shares its
    #: root's, and only the root (``owns_adapters``) stops it.
    enricher: Enricher
    #: True when these services opened the adapters (``startup``), False on a view: only
    #: the opener closes them.
    owns_adapters: bool

    @property
    def jobs(self) -> KeyedRememberJobs:
        return self.rememberer.jobs

    def sync_side(self) -> LocalSide:
        """This Memory's side of sync (``portability.sync``)."""
        return LocalSide(self.imports, self.flush_reads)

    def flush_reads(self) -> None:
        """Write the queued access statistics and read records now."""
        self.access.flush()
        self.audit.flush()


def bootstrap(settings: Settings, identity: Identity, policy: Callable[[], WritePolicy],
              serial: threading.RLock, *, shared: Services | None = None) -> Services:
    """The services of a Memory of ``identity``: over adapters opened now (``shared`` is
    None: ``Memory.startup``) or over those ``shared`` opened (``Memory.view``). ``policy``
    is read at each write; ``serial`` is the Memory's lock (a view shares its parent's).
    Whatever this call opened is released if it fails."""
    with contextlib.ExitStack() as opened:
        if shared is None:
            ctx, llm = _open(settings, identity, serial, opened)
        else:
            ctx = attrs.evolve(shared.ctx, identity=identity, current_session=None)
            llm = shared.llm
        services = _compose(settings, ctx, llm, policy, owns_adapters=shared is None,
                            enricher=shared.enricher if shared is not None else None)
        if not settings.read_only:  # a reader ends no session and runs no job: both write
            services.sessions.recover()
            if services.jobs.mine():
                services.jobs.wake()
            if shared is None:
                if ctx.strong is not None:  # entries the strong tier has not read yet
                    backfill(ctx, services.enricher, ctx.strong.model_id)
                resume_enrichment(services.enricher)
        opened.pop_all()  # started: the Memory releases them on close
    return services


def resume_enrichment(enricher: Enricher) -> None:
    """At a writer's start: the tasks a closed or killed process left run now (their
    leases given back where one process writes at a time). A store that cannot say
    (a file at a schema that predates the tasks) starts anyway: nothing is queued there."""
    try:
        enricher.clear_stale_leases()
        pending = not enricher.report().settled
    except StorageError as exc:
        warn_once("enrichment-resume", f"enrichment tasks could not be read at start: {exc}")
        return
    if pending:
        enricher.wake()


def _open(settings: Settings, identity: Identity, serial: threading.RLock,
          opened: contextlib.ExitStack) -> tuple[MemoryContext, LLMGateway]:
    """The adapters, opened and reconciled (model checked, missing vectors embedded, the
    index caught up with storage); each one's release is pushed on ``opened``."""
    opts = settings.options
    key = settings.encryption
    choices = settings.choices
    defaults = default_names(settings.location, encrypted=key is not None)
    adapter_ctx = AdapterContext(location=settings.location, encryption=key,
                                 read_only=settings.read_only)
    storage = resolve("storage", choices["storage"], defaults["storage"], adapter_ctx,
                      opts.get("storage"))
    if settings.read_only and not (isinstance(storage, ReadOnlyOpen) and storage.read_only):
        raise ConfigError(f"the {storage.name} storage cannot be "
                          "opened read-only (SQLite can)")
    clock = resolve("clock", choices["clock"], "system", adapter_ctx, opts.get("clock"))
    require_encrypted(key, storage, None)  # before a plain file is created
    storage.open()
    opened.callback(storage.close)
    adapter_ctx = AdapterContext(location=storage.location, storage=storage,
                                 encryption=key, read_only=settings.read_only)
    embedder = resolve("embedder", choices["embedder"], "local", adapter_ctx,
                       opts.get("embedder"))
    vectors = None
    if embedder is not None:
        vectors = resolve("vectors", choices["vectors"], defaults["vectors"], adapter_ctx,
                          opts.get("vectors"))
    require_encrypted(key, storage, vectors)
    tokenizer = resolve("tokenizer", choices["tokenizer"], "cl100k_base", adapter_ctx,
                        opts.get("tokenizer"))
    llm_opts = dict(opts.get("llm") or {})
    max_calls = llm_opts.pop("max_calls", DEFAULT_MAX_CALLS)
    max_tokens = llm_opts.pop("max_tokens", None)
    gateway = LLMGateway(resolve("llm", choices["llm"], None, adapter_ctx, llm_opts),
                         max_calls=max_calls, max_tokens=max_tokens)
    if settings.llm_expansion and gateway.llm is None:
        raise ConfigError("search.llm_expansion needs an LLM: pass llm=... "
                          "(e.g. llm='openai' with options={'llm': {...}})")
    strong = (resolve("embedder", settings.strong, None, adapter_ctx, settings.strong_options)
              if embedder is not None else None)
    pm, _registry = get_manager()
    ctx = MemoryContext(
        identity=identity, storage=storage, clock=clock, embedder=embedder,
        vectors=vectors, tokenizer=tokenizer, llm=gateway.llm, hooks=pm.hook,
        context_window=settings.context_window, serial=serial, strong=strong,
    )
    if embedder is None:
        warn_once("no-embedder", "no embedder configured: search runs lexically only")
        return ctx, gateway
    check_model(ctx, settings.progress)
    if vectors is not None:
        vectors.open(embedder.dimension)
        opened.callback(vectors.close)
    embed_missing(ctx, settings.progress)
    reconcile_index(ctx, settings.progress)
    note_representation(ctx)
    return ctx, gateway


def _compose(settings: Settings, ctx: MemoryContext, llm: LLMGateway,
             policy: Callable[[], WritePolicy], *, owns_adapters: bool,
             enricher: Enricher | None) -> Services:
    read_only = settings.read_only
    searcher = Searcher(ctx, SearchOptions(expansion_weight=settings.expansion_weight,
                                           ranker=settings.ranker, **settings.strong_knobs),
                        QueryExpander(llm) if settings.llm_expansion else None,
                        StrongTier(ctx.strong, ctx.storage) if ctx.strong is not None else None)
    if enricher is None:
        enricher = Enricher(ctx, read_only=read_only)
        if ctx.embedder is not None:
            enricher.register(DeferredVectors(ctx))
        register_strong(ctx, enricher, searcher.strong)
    access: AccessRecorder = NotRecorded() if read_only else AccessTracker(ctx.storage,
                                                                          ctx.clock)
    audit = AuditTrail(ctx.storage, ctx.clock, ctx.identity,
                       record_reads=policy().audit_reads and not read_only,
                       read_only=read_only)
    governance = Governance(ctx, policy(), audit, settings.signing_key)

    def summarise(fields: dict[str, Any], session_id: str | None) -> MemoryEntry:
        return writes.write([fields], "summarize", session_id=session_id)[0].entry

    def write_batch(batch: list[dict[str, Any]], operation: str,
                    session_id: str | None) -> list[MemoryEntry]:
        return [o.entry for o in writes.write(batch, operation, session_id=session_id)]

    sessions = SessionManager(ctx, llm, summarise)
    writes = SessionWrites(Writer(ctx, governance, audit, enricher), sessions, policy,
                           read_only=read_only, location=settings.location)
    if enricher.handler(READ_OFF) is None:  # a view shares its root's (registered once)
        enricher.register(ReadOffTurns(ctx, llm, writes))
    curator = Curator(ctx, searcher)
    curator.working_memory = lambda: explicit_working_memory(ctx, sessions)
    return Services(
        ctx=ctx, llm=llm, access=access, audit=audit, governance=governance,
        writer=writes, searcher=searcher, curator=curator, sessions=sessions,
        rememberer=Rememberer(ctx, llm, sessions, write_batch, policy, writes, enricher),
        imports=ImportTarget(ctx, audit, governance.seal, policy, settings.progress),
        enricher=enricher, owns_adapters=owns_adapters,
    )


def explicit_working_memory(ctx: MemoryContext, sessions: SessionManager
                            ) -> list[MemoryEntry]:
    """Working memory for curate: only inside a session the agent opened on purpose (an
    implicit session is just "everything written lately", not a task at hand)."""
    record = sessions.current()
    if record is None or record.implicit or record.ended_at is not None:
        return []
    return working_memory(ctx, record.id, WORKING_MEMORY_IN_CURATE)


def stop_workers(services: Services) -> None:
    """Stop the background workers after the work in hand (before the Memory's lock is
    taken to close: a running job or enrichment waits for it). A view stops its own job
    queue; the enrichment worker is its root's."""
    services.jobs.stop()
    if services.owns_adapters:
        services.enricher.stop()


def shut_down(services: Services) -> None:
    """Flush what the services queued; when they opened the adapters, persist the vector
    index cache and close the index and the store (the store even if the rest fails).
    The caller stopped the job and enrichment workers first (``stop_workers``)."""
    ctx = services.ctx
    try:
        services.searcher.close()
        services.flush_reads()
        if services.owns_adapters and ctx.vectors is not None:
            save_index(ctx, closing=True)
            ctx.vectors.close()
    finally:
        if services.owns_adapters:
            ctx.storage.close()
