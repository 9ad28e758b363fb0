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
from typing import Any

import attrs

from tulving.application.access import AccessTracker
from tulving.application.composition import DEFAULT, default_names, normalise_location, resolve
from tulving.application.context import MemoryContext
from tulving.application.entry_factory import build_entry
from tulving.application.search import Searcher, build_filter
from tulving.application.vector_sync import check_model, embed_missing, reconcile_index
from tulving.application.warnings_once import warn_once
from tulving.application.write_hooks import apply_before_write
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ConfigError, NotFoundError, ScopeError, ValidationError
from tulving.domain.identity import Identity
from tulving.domain.ids import looks_like_id
from tulving.domain.query import EntryFilter, SearchResult
from tulving.domain.types import ArchiveReason, MemoryType
from tulving.plugins.hooks import WriteContext
from tulving.plugins.registry import AdapterContext, get_manager
from tulving.ports.storage import Archival, WriteOutcome

Progress = Callable[[str, int, int], None]


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
                llm = resolve("llm", self._choices["llm"], None, adapter_ctx, opts.get("llm"))
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
            return self

    @property
    def ctx(self) -> MemoryContext:
        if self._ctx is None:
            self.startup()
        assert self._ctx is not None
        return self._ctx

    def close(self) -> None:
        with self._lock:
            if self._ctx is not None:
                ctx, self._ctx = self._ctx, None
                try:
                    self._access.flush()
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
        **more: Any,
    ) -> MemoryEntry:
        """Store one memory. An active entry with the same key (in the same scope) is
        superseded: archived with reason ``superseded`` and linked both ways."""
        fields = dict(content=content, type=type, key=key, tags=tags, importance=importance,
                      pinned=pinned, metadata=metadata, valid_from=valid_from, **more)
        return self._write([fields], "store")[0].entry

    def store_many(self, items: Iterable[Mapping[str, Any]]) -> list[MemoryEntry]:
        """Store a batch in one transaction (all or none); entries come back in order."""
        batch = list(items)
        for i, item in enumerate(batch):
            if not isinstance(item, Mapping):
                raise ValidationError(f"store_many item {i} is not a mapping")
        return [o.entry for o in self._write([dict(i) for i in batch], "store_many")]

    def _write(self, batch: list[dict[str, Any]], operation: str) -> list[WriteOutcome]:
        ctx = self.ctx
        now = ctx.clock.now()
        hook_ctx = WriteContext(ctx.identity.agent_id, ctx.identity.tenant, operation)
        entries = [
            apply_before_write(
                ctx.hooks,
                build_entry(ctx.identity, now, fields, session_id=ctx.session_id,
                            model_id=ctx.identity.model_id),
                hook_ctx,
            )
            for fields in batch
        ]
        vectors: list[Any] = [None] * len(entries)
        if ctx.embedder is not None and entries:
            matrix = ctx.embedder.embed([e.content for e in entries])
            vectors = [matrix[i] for i in range(len(entries))]
        outcomes = ctx.storage.write_many(list(zip(entries, vectors, strict=True)))
        self._index_outcomes(outcomes, vectors)
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
                raise NotFoundError(
                    f"entry {key_or_id} is archived ({entry.archive_reason.value if entry.archive_reason else '?'})"
                )
        found = ctx.storage.active_by_key(visible, key_or_id)
        if found is None:
            raise NotFoundError(f"no active memory with id or key {key_or_id!r}")
        return found

    def get(self, key_or_id: str) -> MemoryEntry:
        """The active entry with this id or key, raw (not redacted)."""
        entry = self._resolve(key_or_id)
        self._access.record([entry.id])
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
        if hard:
            ctx.storage.delete([entry.id])
        else:
            ctx.storage.archive([Archival(entry.id, ArchiveReason.FORGOTTEN, ctx.clock.now())])
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
    ) -> list[SearchResult]:
        """Hybrid (default), semantic, lexical or key search over visible active entries."""
        flt = build_filter(self.ctx, types, tags, since, until)
        results = self._searcher.search(query, top_k, mode, flt, min_score)
        self._access.record([r.entry.id for r in results])
        return results

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
        from tulving.application.tokens import FileBackend, MetaBackend, TokenRegistry, token_file_for

        path = token_file_for(self.location)
        if path is not None:
            return TokenRegistry(FileBackend(path))
        storage = self.ctx.storage
        return TokenRegistry(MetaBackend(storage.get_meta, storage.set_meta))

    def __repr__(self) -> str:
        state = "open" if self._ctx else ("closed" if self._closed else "not started")
        return f"Memory({self.location!r}, agent_id={self.identity.agent_id!r}, {state})"


def evolve(entry: MemoryEntry, **changes: Any) -> MemoryEntry:
    return attrs.evolve(entry, **changes)
