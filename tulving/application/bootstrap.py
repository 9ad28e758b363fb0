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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import attrs

from tulving.application.agent_memory.procedures import working_memory
from tulving.application.agent_memory.read_off_turns import KIND as READ_OFF
from tulving.application.agent_memory.sessions import SessionManager
from tulving.application.governance.audit import AuditTrail
from tulving.application.governance.encryption import (
    convert_store,
    parse_encryption,
    require_encrypted,
)
from tulving.application.plumbing.composition import default_names, resolve
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.deferred_vectors import DeferredVectors
from tulving.application.plumbing.enrichment import Enricher
from tulving.application.plumbing.llm_gateway import DEFAULT_MAX_CALLS, LLMGateway
from tulving.application.plumbing.memory_settings import (
    DEFAULT,
    MemorySettings,
    normalise_location,
)
from tulving.application.plumbing.read_settling import JournaledReads
from tulving.application.plumbing.rule_set_source import install_rule_sets
from tulving.application.plumbing.vector_sync import (
    check_model,
    embed_missing,
    note_representation,
    reconcile_index,
    save_index,
)
from tulving.application.plumbing.warnings_once import warn_once
from tulving.application.retrieval.access import AccessTracker
from tulving.application.retrieval.expansion import QueryExpander
from tulving.application.retrieval.options import SearchOptions
from tulving.application.retrieval.search import Searcher
from tulving.application.retrieval.strong import StrongTier
from tulving.application.retrieval.strong_enrichment import backfill, register_strong
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ConfigError, LockError, StorageError
from tulving.domain.identity import Identity
from tulving.domain.write_policy import WritePolicy
from tulving.plugins.chain import PluginHooks
from tulving.plugins.registry import AdapterContext, get_manager
from tulving.ports.storage import ReadJournal, ReadOnlyOpen, Storage, UnlockedOpen

if TYPE_CHECKING:  # composed on first use (Services)
    from tulving.application.agent_memory.jobs import KeyedRememberJobs
    from tulving.application.agent_memory.remembering import Rememberer
    from tulving.application.agent_memory.session_writes import SessionWrites
    from tulving.application.curation.curator import Curator
    from tulving.application.governance.integrity import Governance
    from tulving.application.portability.importer import ImportTarget
    from tulving.application.portability.sync import LocalSide

#: How many of the active session's latest entries curate() puts first.
WORKING_MEMORY_IN_CURATE = 5


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


_T = TypeVar("_T")


class Services:
    """A Memory's composed services over its opened adapters (``ctx``).

    What every read uses (access statistics, search, the audit trail, sessions) is
    composed with the Memory; the rest (the write path and its governance, curation,
    remembering, imports) on first use, each once, so a process that only searches
    never loads the modules of the others (cosmicpython's rule: nothing heavy before it
    is needed).
    """

    def __init__(self, settings: MemorySettings, ctx: MemoryContext, llm: LLMGateway,
                 policy: Callable[[], WritePolicy], enricher: Enricher, *,
                 owns_adapters: bool, reads: JournaledReads | None = None) -> None:
        read_only = settings.read_only
        self.ctx = ctx
        self.llm = llm
        #: The enrichment kinds and their worker (plumbing.enrichment); a view shares its
        #: root's, and only the root (``owns_adapters``) stops it.
        self.enricher = enricher
        #: True when these services opened the adapters (``startup``), False on a view:
        #: only the opener closes them.
        self.owns_adapters = owns_adapters
        #: Where reads record themselves (None: a store without a read journal, or a
        #: read-only Memory); a view shares its root's.
        self.reads = reads
        self._settings = settings
        self._policy = policy
        self._lock = threading.RLock()  # a service's build may ask for another
        self.access: AccessRecorder = (NotRecorded() if read_only
                                       else AccessTracker(ctx.storage, ctx.clock, journal=reads))
        self.searcher = Searcher(
            ctx, SearchOptions(expansion_weight=settings.expansion_weight,
                               ranker=settings.ranker, **settings.strong_knobs),
            QueryExpander(llm) if settings.llm_expansion else None,
            StrongTier(ctx.strong, ctx.storage) if ctx.strong is not None else None)
        self.audit = AuditTrail(ctx.storage, ctx.clock, ctx.identity,
                                record_reads=policy().audit_reads and not read_only,
                                read_only=read_only, journal=reads)
        self.sessions = SessionManager(ctx, llm, self._summarise)

    def composed(self, name: str) -> bool:
        """Whether the service held as ``name`` (``_writes``, ...) was composed yet."""
        return name in self.__dict__

    def _once(self, name: str, build: Callable[[], _T]) -> _T:
        """The service ``name``, composed by ``build`` the first time it is asked for."""
        found = self.__dict__.get(name)
        if found is None:
            with self._lock:
                found = self.__dict__.get(name)
                if found is None:
                    found = self.__dict__[name] = build()
        return found

    @property
    def governance(self) -> Governance:
        from tulving.application.governance.integrity import Governance

        return self._once("_governance", lambda: Governance(
            self.ctx, self._policy(), self.audit, self._settings.signing_key))

    @property
    def writes(self) -> SessionWrites:
        """The write path, in the session each write belongs to (``SessionWrites``)."""
        from tulving.application.agent_memory.session_writes import SessionWrites
        from tulving.application.writing.writer import Writer

        return self._once("_writes", lambda: SessionWrites(
            Writer(self.ctx, self.governance, self.audit, self.enricher), self.sessions,
            self._policy,
            read_only=self._settings.read_only, location=self._settings.location))

    @property
    def curator(self) -> Curator:
        return self._once("_curator", self._curator)

    @property
    def rememberer(self) -> Rememberer:
        from tulving.application.agent_memory.remembering import Rememberer

        return self._once("_rememberer", lambda: Rememberer(
            self.ctx, self.llm, self.sessions, self._write_batch, self._policy, self.writes,
            self.enricher))

    @property
    def imports(self) -> ImportTarget:
        from tulving.application.portability.importer import ImportTarget

        return self._once("_imports", lambda: ImportTarget(
            self.ctx, self.audit, self.governance.seal, self._policy,
            self._settings.progress))

    @property
    def jobs(self) -> KeyedRememberJobs:
        return self.rememberer.jobs

    def _curator(self) -> Curator:
        from tulving.application.curation.curator import Curator

        curator = Curator(self.ctx, self.searcher)
        curator.working_memory = lambda: explicit_working_memory(self.ctx, self.sessions)
        return curator

    def _summarise(self, fields: dict[str, Any], session_id: str | None) -> MemoryEntry:
        return self.writes.write([fields], "summarize", session_id=session_id)[0].entry

    def _write_batch(self, batch: list[dict[str, Any]], operation: str,
                     session_id: str | None) -> list[MemoryEntry]:
        return [o.entry for o in self.writes.write(batch, operation, session_id=session_id)]

    def sync_side(self) -> LocalSide:
        """This Memory's side of sync (``portability.sync``)."""
        from tulving.application.portability.sync import LocalSide

        return LocalSide(self.imports, self.flush_reads)

    def note_read(self, action: str, inputs: Any, ids: Sequence[str],
                  accessed: Sequence[str]) -> None:
        """What a read records about itself: its audit record (with the ids it
        returned) and one access of each entry in ``accessed``. On a store with a read
        journal that is one journaled entry, durable on return, that no write delays;
        else the two batched queues."""
        if self.reads is not None:
            self.reads.record(self.audit.read_drafts(action, inputs, ids), accessed)
            return
        self.access.record(accessed)
        self.audit.record_read(action, inputs, ids)

    def flush_reads(self) -> None:
        """Write the queued access statistics and read records now."""
        self.access.flush()
        self.audit.flush()


def bootstrap(settings: MemorySettings, identity: Identity, policy: Callable[[], WritePolicy],
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
        enricher = shared.enricher if shared is not None else _enricher(ctx, settings)
        if shared is not None:
            reads = shared.reads
        elif not settings.read_only and isinstance(ctx.storage, ReadJournal):
            reads = JournaledReads(ctx, ctx.storage)
        else:
            reads = None
        services = Services(settings, ctx, llm, policy, enricher,
                            owns_adapters=shared is None, reads=reads)
        settling = reads if shared is None else None
        if settling is not None:
            settling.settle()  # what a killed process journaled and never settled
        if shared is None:
            _register_rooms(services)
        if not settings.read_only:  # a reader ends no session and runs no job: both write
            services.sessions.recover()
            if services.jobs.mine():
                services.jobs.wake()
            if shared is None:
                if ctx.strong is not None:  # entries the strong tier has not read yet
                    backfill(ctx, services.enricher, ctx.strong.model_id)
                resume_enrichment(services.enricher)
        if settling is not None:
            settling.start()
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


def _open(settings: MemorySettings, identity: Identity, serial: threading.RLock,
          opened: contextlib.ExitStack) -> tuple[MemoryContext, LLMGateway]:
    """The adapters, opened and reconciled (model checked, missing vectors embedded, the
    index caught up with storage); each one's release is pushed on ``opened``."""
    install_rule_sets()  # what redaction masks with: a process-wide loader, installed once
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
        vectors=vectors, tokenizer=tokenizer, llm=gateway.llm, hooks=PluginHooks.of(pm),
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


def _enricher(ctx: MemoryContext, settings: MemorySettings) -> Enricher:
    """The root Memory's enrichment kinds and worker: the fast vectors a write may defer
    (the rooms above register theirs); a view shares its root's."""
    enricher = Enricher(ctx, read_only=settings.read_only)
    if ctx.embedder is not None:
        enricher.register(DeferredVectors(ctx))
    return enricher


def _register_rooms(services: Services) -> None:
    """The root's enrichment kinds that need its services: the strong tier's vectors and
    what is read off remembered turns (its write path is composed when a task runs)."""
    from tulving.application.agent_memory.read_off_turns import ReadOffTurns

    enricher = services.enricher
    register_strong(services.ctx, enricher, services.searcher.strong)
    if enricher.handler(READ_OFF) is None:
        enricher.register(ReadOffTurns(services.ctx, services.llm, _writes_for(services)))


def _writes_for(root: Services) -> Callable[[tuple[str, str | None, str | None]],
                                             SessionWrites]:
    """The write path of each identity whose turns the root's enricher reads off: the
    root's own, or that of a view of it (the services of a ``Memory.view``, built once per
    identity), so what is read off a view's turns is owned by the view's identity."""
    views: dict[Identity, Services] = {}
    guard = threading.Lock()

    def writes(owner: tuple[str, str | None, str | None]) -> SessionWrites:
        own = root.ctx.identity
        identity = Identity(owner[0], owner[1], owner[2], own.model_id)
        if identity == own:
            return root.writes
        with guard:
            services = views.get(identity)
            if services is None:
                services = Services(root._settings, attrs.evolve(
                    root.ctx, identity=identity, current_session=None), root.llm,
                    root._policy, root.enricher, owns_adapters=False)
                views[identity] = services
        return services.writes

    return writes


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
    if services.composed("_rememberer"):  # no job queue was ever made otherwise
        services.jobs.stop()
    if services.owns_adapters:
        services.enricher.stop()
        if services.reads is not None:
            services.reads.stop()


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


# -- the two smaller compositions: a store alone, and a store with its caches -----------

def open_store_alone(location: str, *, storage: Any = DEFAULT,
                     options: Mapping[str, Any] | None = None,
                     encryption: Any = None) -> Storage:
    """The storage adapter of ``location`` alone (no embedder, no vector index), built as
    a Memory would build it from the same settings and opened, migrations included (close
    it when done): what the token commands write through beside a running server.

    A single-writer store (``UnlockedOpen``: SQLite) is opened without its writer lock,
    after its migrations ran under that lock if nobody held it, so a server can start (or
    keep running) beside it; a store with several writers (PostgreSQL) is used as it
    opened; one that can do neither is refused while its lock is held."""
    location = normalise_location(location)
    key = parse_encryption(encryption)
    context = AdapterContext(location=location, encryption=key)
    default = default_names(location)["storage"]
    store: Storage = resolve("storage", storage, default, context, options)
    require_encrypted(key, store, None)
    try:
        store.open()  # migrations run under the writer lock when nobody holds it
    except LockError:
        if not isinstance(store, UnlockedOpen):
            raise
    else:
        if not isinstance(store, UnlockedOpen):
            return store
        store.close()  # hold the lock no longer than the migrations took
    store = resolve("storage", storage, default, context, options)
    assert isinstance(store, UnlockedOpen)
    store.open_unlocked()
    return store


def change_encryption(location: str, old: EncryptionKey | None, new: EncryptionKey | None,
                      *, storage: Any = DEFAULT, vectors: Any = DEFAULT) -> Any:
    """``tulving encrypt`` / ``rekey`` / ``decrypt`` of the closed store at ``location``:
    its storage adapter and every vector cache it may have beside it, built here, and
    the conversion in its safe order (``governance.encryption.convert_store``)."""
    location = normalise_location(location)
    defaults = default_names(location, encrypted=old is not None)
    store = resolve("storage", storage, defaults["storage"],
                    AdapterContext(location=location, encryption=old))
    # The caches as the store has them now (under the old key): when encrypting or
    # decrypting, every one goes (a plain store may hold a usearch and an hnsw cache).
    choices = ([vectors] if vectors != DEFAULT
               else [defaults["vectors"], *(["usearch", "hnsw"] if old is None else [])])
    caches = []
    for choice in dict.fromkeys(choices):
        try:
            caches.append(resolve("vectors", choice, None,
                                  AdapterContext(location=location, encryption=old)))
        except ConfigError:  # an adapter that is not installed has no cache here
            continue
    resealed = None
    if old is not None and new is not None:
        resealed = resolve("vectors", vectors, defaults["vectors"],
                           AdapterContext(location=location, encryption=new))
    return convert_store(store, caches, resealed, old, new)
