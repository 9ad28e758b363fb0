"""``memory.operator``: what the doors (CLI, MCP, HTTP, the framework integrations) and
operators need of a Memory besides the agent's own calls.

An agent developer's object is the ``Memory``; a server's token table, store census,
pool figures, sync side and audit of refusals are not part of it. They live
here, one ``Operator`` per Memory (each view has its own, for its own identity), built
from the services the Memory composed: it never sees the facade.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # each service loads when a call needs it (nothing heavy at import)
    from tulving.application.bootstrap import Services
    from tulving.application.governance.erasure import ErasureReport
    from tulving.application.portability.sync_service import SyncService
    from tulving.application.upkeep.census import Readiness, StoreCensus
    from tulving.domain.query import EntryFilter
    from tulving.ports.storage import StorageCapabilities, TokenStore

#: The operator surface, by name: each was a method (or, ``capabilities``, a property) of
#: ``Memory`` before 0.2 and stays there one release as a deprecated alias.
OPERATOR_NAMES = (
    "touch", "now", "capabilities", "read_scope", "token_store", "keeps_sync_log",
    "store_census", "pool_stats", "audited_tenants", "warm_up", "sync_service",
    "sync_filter", "replay_erasure", "audit_refusal",
)


class Operator:
    """The door and operator surface of one Memory (``memory.operator``)."""

    def __init__(self, services: Callable[[], Services], *, read_only: bool) -> None:
        self._services = services  # the Memory's own, started on first use
        self._read_only = read_only

    # for a door: what it needs besides the agent's calls ---------------------------------
    def touch(self, entry_ids: Sequence[str]) -> None:
        """Record a read of ``entry_ids`` now, in storage, at once (``get``, ``search``
        and ``curate`` queue theirs and write them in batches): for an integration whose
        expiry counts from the last read (the LangGraph store's TTL). A read-only Memory
        records nothing, as for every read."""
        services = self._services()
        if self._read_only or not entry_ids:
            return
        services.ctx.storage.touch(list(entry_ids), services.ctx.clock.now())

    def now(self) -> datetime:
        """The time by this Memory's clock (a ``ManualClock`` in tests), timezone-aware."""
        return self._services().ctx.clock.now()

    @property
    def capabilities(self) -> StorageCapabilities:
        """What the store can do (``multi_process_writers``: several server processes
        may write it, as PostgreSQL replicas do)."""
        return self._services().ctx.storage.capabilities

    def read_scope(self) -> AbstractContextManager[None]:
        """What one request reads, read in one read transaction of a store that has them
        (PostgreSQL); nothing on others."""
        from tulving.ports.storage import ReadTransactions

        storage = self._services().ctx.storage
        return storage.reading() if isinstance(storage, ReadTransactions) else nullcontext()

    def warm_up(self) -> Readiness:
        """Load a lazily loaded embedding model now and check the embedder and the
        tokenizer answer (a server at start; ``tulving doctor``)."""
        from tulving.application.upkeep.census import warm_up

        return warm_up(self._services().ctx)

    def audit_refusal(self, inputs: Mapping[str, str], details: Mapping[str, str]) -> None:
        """Record in this identity's audit chain that a caller was refused (a door: a
        token that named another tenant), in a transaction of its own."""
        from tulving.application.plumbing.write_order import writing

        services = self._services()
        with writing(services.ctx):
            services.audit.record("refused", dict(inputs), details=dict(details))

    # a server's store-wide figures -------------------------------------------------------
    def token_store(self) -> TokenStore:
        """The store's table of bearer tokens (``interfaces.auth.bearer_tokens``)."""
        return self._services().ctx.storage

    def keeps_sync_log(self) -> bool:
        """Whether the store keeps the server's sync log (``ports.storage.SyncLog``)."""
        from tulving.ports.storage import SyncLog

        return isinstance(self._services().ctx.storage, SyncLog)

    def store_census(self, tenants: Iterable[str] = ()) -> StoreCensus:
        """Store-wide figures for an operator (every tenant's, so for a server's own
        Memory): active entries by tenant, jobs pending, sync deltas pending and
        quarantined of ``tenants`` and of every tenant with entries."""
        from tulving.application.upkeep.census import store_census

        return store_census(self._services().ctx, tenants)

    def pool_stats(self) -> Mapping[str, int] | None:
        """The store's connection pool figures, None when it keeps none."""
        from tulving.application.upkeep.census import pool_stats

        return pool_stats(self._services().ctx)

    def audited_tenants(self) -> set[str]:
        """Every tenant (``Identity.tenant``) with a record in the store's audit log
        (store-wide, so for a server's own Memory)."""
        return {r.tenant for r in self._services().ctx.storage.audit_records()}

    # the server's side of sync -----------------------------------------------------------
    def sync_service(self) -> SyncService:
        """The server's side of sync for this Memory's tenant (``tulving serve``'s
        ``/v1/sync``; see ``portability.sync_service``): ConfigError when the store keeps
        no sync log."""
        from tulving.application.portability.sync_service import SyncService

        # not startup() every call: it waits for the Memory's lock, which a merge holds
        # for its whole import
        return SyncService(self._services().sync_side())

    def sync_filter(self) -> EntryFilter:
        """Everything this identity sees, archived versions included (what sync sends)."""
        return self._services().sync_side().visible()

    def replay_erasure(self, kind: str, subject_sha256: str,
                       before: datetime) -> ErasureReport:
        """Apply an erasure another device made (sync): see ``erasure.replay``."""
        return self._services().sync_side().replay_erasure(kind, subject_sha256, before)
