"""``TulvingStore``: LangGraph's ``BaseStore`` over a Tulving ``Memory``.

An item is one Tulving memory entry: its Tulving key comes from the namespace and item
key (:mod:`.keys`), its content is the text of the fields the store indexes (LangGraph's
``index`` rules), and the item itself (namespace, key, value, creation time, TTL) is kept
verbatim in the entry's metadata. A ``put`` to an existing item supersedes the entry
(the old version is archived and linked, so ``history`` and ``get_as_of`` can read it); a
``delete`` archives it (``hard_delete=True`` deletes it). A search with a query goes
through Tulving's hybrid ranking (full text + vectors) restricted to the namespace prefix.

The store is synchronous underneath (SQLite, PostgreSQL and the embedding model are), so
``abatch`` runs ``batch`` on a worker thread, as LangGraph's own ``PostgresStore`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)

from tulving import CuratedContext, Memory, MemoryEntry, NotFoundError, ValidationError

from . import index as indexing
from . import keys, values
from .filters import matches
from .index import Embedded, IndexSettings

#: Metadata field that holds the LangGraph item.
META = "langgraph"
#: How deep a query search reads into Tulving's ranking at most to fill a filtered page:
#: the most results one search returns (top_k's bound in Tulving's input limits,
#: docs/reference/limits.md).
MAX_CANDIDATES = 100
_PAGE = 1000
#: The most characters of an item's text its entry indexes (Tulving keeps 100,000; the
#: parts of a big value carry the rest).
MAX_TEXT = 50_000
_T = TypeVar("_T")


class TulvingStore(BaseStore):
    """A LangGraph store whose items are Tulving memories.

    Args:
        memory: the Tulving ``Memory`` (or a ``memory.view(...)``) whose identity owns
            every item; the store does not close it.
        index: LangGraph's ``IndexConfig``: ``fields``, the paths of a value that are
            its text for search (default ``["$"]``, the whole value as JSON, as
            LangGraph's default); ``embed``, your embeddings (a LangChain
            ``Embeddings``, a function of a list of texts, sync or async, or a
            ``"provider:model"`` string): each selected text is embedded with it and a
            query search is ranked by the best cosine of query and text, which is the
            ``score``, as LangGraph's stores define it; ``dims``, checked against those
            vectors. Without ``embed``, Tulving's own model embeds the texts and its
            hybrid ranking answers. Any other key is a TypeError.
        type: the Tulving memory type of every item (``"FACT"`` by default): it sets
            how fast an item's importance decays in curation.
        scope: Tulving visibility of the items (``"agent"``: only this agent;
            ``"personal"``: every agent of the same user; ``"workspace"``: the tenant).
        hard_delete: ``delete`` removes the entry for good instead of archiving it.
        ttl: LangGraph's ``TTLConfig`` (``default_ttl`` in minutes,
            ``refresh_on_read``, ``sweep_interval_minutes``, ``omit_expired``). A read
            refreshes an item's TTL when it asks (``refresh_ttl=True``) or when
            ``refresh_on_read`` is True, not otherwise, as ``SqliteStore`` does.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: Memory,
        *,
        index: Mapping[str, Any] | None = None,
        type: str = "FACT",
        scope: str = "agent",
        hard_delete: bool = False,
        ttl: TTLConfig | None = None,
    ) -> None:
        if not isinstance(memory, Memory):
            raise ValidationError("TulvingStore needs a tulving.Memory")
        self.memory = memory
        self._index = IndexSettings(index)
        #: The index configuration, as LangGraph's stores expose it.
        self.index_config = self._index.config or None
        #: The embeddings of ``index["embed"]`` (None: Tulving's own model).
        self.embeddings = self._index.embeddings
        self.type = type
        self.scope = scope
        self.hard_delete = hard_delete
        # BaseStore resolves a read's refresh_ttl=None from the config's refresh_on_read,
        # True when absent; SqliteStore refreshes only when it is set: made explicit here
        self.ttl_config: TTLConfig | None = {"refresh_on_read": False, **(ttl or {})}
        self._writes = threading.Lock()
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()

    @classmethod
    @contextlib.contextmanager
    def from_path(cls, path: str, *, agent_id: str, store_options: Mapping[str, Any] | None
                  = None, **memory_options: Any) -> Iterator[TulvingStore]:
        """``with TulvingStore.from_path("agent.db", agent_id="assistant") as store:`` a
        store over a ``Memory`` it opens and closes (keywords other than
        ``store_options`` go to ``Memory``)."""
        with Memory(path, agent_id=agent_id, **memory_options) as memory:
            store = cls(memory, **dict(store_options or {}))
            try:
                yield store
            finally:
                store.stop_ttl_sweeper()

    # BaseStore ---------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations; writes first (one transaction for the puts, last put of an
        address wins), then reads, each result at its operation's position. With
        ``index["embed"]``, the batch's texts and queries are embedded first."""
        ops = _checked(ops)
        return self._run(ops, self._index.embed(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = _checked(ops)
        embedded = await self._index.aembed(ops)
        return await asyncio.get_running_loop().run_in_executor(
            None, self._run, ops, embedded)

    def _run(self, ops: list[Op], embedded: Embedded) -> list[Result]:
        writes: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                writes[(tuple(op.namespace), op.key)] = op
        if writes:
            self._apply_writes(list(writes.values()), embedded)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, embedded))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                results.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        return results

    # Tulving's ideas the BaseStore interface has no words for ----------------------------
    def curate(self, namespace_prefix: tuple[str, ...] | None = None, query: str | None = None,
               *, token_budget: int, **options: Any) -> CuratedContext:
        """The memories that matter for ``query`` as a prompt block of at most
        ``token_budget`` tokens (``Memory.curate``): with ``namespace_prefix``, only the
        indexed items under it; with None, the whole memory (what other doors wrote too).
        No query: the cold-start briefing (``mode="orient"``)."""
        if namespace_prefix is not None:
            keys.check_depth(namespace_prefix)
            options["tags"] = [keys.indexed_tag(namespace_prefix)]
        if query is None or not query.strip():
            options.setdefault("mode", "orient")
            query = None
        return self.memory.curate(query, token_budget=token_budget, **options)

    async def acurate(self, namespace_prefix: tuple[str, ...] | None = None,
                      query: str | None = None, *, token_budget: int,
                      **options: Any) -> CuratedContext:
        return await asyncio.get_running_loop().run_in_executor(
            None, lambda: self.curate(namespace_prefix, query, token_budget=token_budget,
                                      **options))

    def history(self, namespace: tuple[str, ...], key: str) -> list[Item]:
        """Every version of the item, newest first (each ``put`` superseded the last;
        a deleted item's versions stay readable unless it was hard-deleted)."""
        try:
            versions = self.memory.history(keys.memory_key(namespace, key))
        except NotFoundError:
            return []
        return [item for entry in versions if (item := self._item(entry)) is not None]

    async def ahistory(self, namespace: tuple[str, ...], key: str) -> list[Item]:
        return await asyncio.get_running_loop().run_in_executor(
            None, self.history, namespace, key)

    def get_as_of(self, namespace: tuple[str, ...], key: str, as_of: datetime) -> Item | None:
        """The item as the store held it at ``as_of`` (an aware datetime), or None."""
        try:
            entry = self.memory.get(keys.memory_key(namespace, key), as_of=as_of)
        except NotFoundError:
            return None
        return self._item(entry)

    async def aget_as_of(self, namespace: tuple[str, ...], key: str,
                         as_of: datetime) -> Item | None:
        return await asyncio.get_running_loop().run_in_executor(
            None, self.get_as_of, namespace, key, as_of)

    # TTL -----------------------------------------------------------------------------------
    def sweep_ttl(self) -> int:
        """Archive (or, with ``hard_delete``, delete) every expired item; returns how many.
        Reads already leave expired items out; this reclaims them."""
        expired = [e for e in self._entries([keys.TTL_TAG]) if self._expired(e)]
        for entry in expired:
            self._forget(entry.key or entry.id)
        return len(expired)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> None:
        """Sweep on a daemon thread every ``sweep_interval_minutes`` (default: the TTL
        config's ``sweep_interval_minutes``, else 5) until ``stop_ttl_sweeper``."""
        interval = sweep_interval_minutes or (self.ttl_config or {}).get(
            "sweep_interval_minutes") or 5
        if self._sweeper is not None and self._sweeper.is_alive():
            return
        self._sweeper_stop.clear()

        def run() -> None:
            while not self._sweeper_stop.wait(float(interval) * 60):
                with contextlib.suppress(Exception):
                    self.sweep_ttl()

        self._sweeper = threading.Thread(target=run, name="tulving-ttl-sweeper", daemon=True)
        self._sweeper.start()

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True when it has stopped (or never ran)."""
        self._sweeper_stop.set()
        if self._sweeper is None:
            return True
        self._sweeper.join(timeout)
        stopped = not self._sweeper.is_alive()
        if stopped:
            self._sweeper = None
        return stopped

    # writes ------------------------------------------------------------------------------
    def _apply_writes(self, ops: list[PutOp], embedded: Embedded) -> None:
        with self._writes:
            batch: list[dict[str, Any]] = []
            deletes: list[str] = []
            replaced: list[str] = []
            now = self._now()
            for op in ops:
                tulving_key = keys.memory_key(op.namespace, op.key)
                if op.value is None:
                    deletes.append(tulving_key)
                    continue
                if not isinstance(op.value, Mapping):
                    raise ValidationError(
                        f"a value must be a mapping, got {type(op.value).__name__}")
                previous = self._read(tulving_key, refresh=False)
                old = previous.metadata.get(META) if previous is not None else None
                if isinstance(old, Mapping) and old.get("value_id"):
                    replaced.append(str(old["value_id"]))
                vectors = embedded.puts.get((tuple(op.namespace), op.key))
                batch.extend(self._entries_for(op, tulving_key, now, old, vectors))
            if batch:
                self.memory.store_many(batch)
            for value_id in replaced:              # the old version's parts leave search
                self._forget_parts(value_id)
            for tulving_key in deletes:
                self._forget(tulving_key)

    def _entries_for(self, op: PutOp, tulving_key: str, now: datetime,
                     old: Mapping[str, Any] | None,
                     vectors: indexing.Vectors | None) -> list[dict[str, Any]]:
        value = dict(op.value or {})
        texts = self._index.texts(value, op.index)
        indexed = bool(texts)
        created = old["created_at"] if isinstance(old, Mapping) else now.isoformat()
        item: dict[str, Any] = {"namespace": list(op.namespace), "key": op.key,
                                "created_at": created, "ttl": op.ttl, "indexed": indexed}
        if vectors is not None:
            item["vectors"] = indexing.encode(vectors)
            if (values.json_size(item) or 0) > values.METADATA_ROOM - 1000:
                raise ValidationError(
                    f"the item's {len(vectors)} vectors of {vectors.shape[1]} dimensions "
                    f"take more than the {values.METADATA_ROOM} bytes an item keeps: "
                    "index fewer fields of it")
        size = values.json_size({**item, "value": value})
        chunks: list[str] = []
        if size is not None and size <= values.METADATA_ROOM:
            item["value"] = value
        else:                                      # other types, NUL, or too big: typed
            room = values.METADATA_ROOM - (values.json_size(item) or 0) - 200
            typed, chunks = values.typed(value, room)
            item.update(typed)
        content = "\n".join(texts) if indexed else "/".join([*op.namespace, op.key])
        common = {"type": self.type, "scope": self.scope, "dedup": False}
        head = {**common, "content": _printable(content or op.key)[:MAX_TEXT] or "(empty)",
                "key": tulving_key, "metadata": {META: item},
                "tags": keys.item_tags(op.namespace, indexed=indexed, ttl=op.ttl is not None)}
        return [head, *values.part_entries(item, chunks, value, common)]

    def _forget(self, tulving_key: str) -> None:
        entry = self._read(tulving_key, refresh=False)
        with contextlib.suppress(NotFoundError):
            self.memory.forget(tulving_key, hard=self.hard_delete)
        item = entry.metadata.get(META) if entry is not None else None
        if isinstance(item, Mapping) and item.get("value_id"):
            self._forget_parts(str(item["value_id"]))

    def _forget_parts(self, value_id: str) -> None:
        for part in self._entries([values.part_tag(value_id)]):
            with contextlib.suppress(NotFoundError):
                self.memory.forget(part.id, hard=self.hard_delete)

    # reads -------------------------------------------------------------------------------
    def _get(self, op: GetOp) -> Item | None:
        entry = self._read(keys.memory_key(op.namespace, op.key), refresh=op.refresh_ttl)
        if entry is None or self._hidden(entry):
            return None
        return self._item(entry)

    def _read(self, tulving_key: str, *, refresh: bool) -> MemoryEntry | None:
        """The item's current entry (an as-of read: no access queued); with ``refresh``
        its read is recorded at once (see ``_refresh``)."""
        try:
            entry = self.memory.get(tulving_key, as_of=self._now())
        except NotFoundError:
            return None
        if refresh:
            self._refresh([entry])
        return entry

    def _refresh(self, entries: Sequence[MemoryEntry]) -> None:
        """Record a read of the live ``entries`` now, in storage, before the read
        returns: a TTL refreshed by a read holds even if nothing else follows (Tulving's
        own access statistics are written in batches, later). An expired item is not
        brought back. A read-only Memory records nothing."""
        live = [e.id for e in entries if not self._expired(e)]
        if live:
            self.memory.operator.touch(live)

    def _search(self, op: SearchOp, embedded: Embedded) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        keys.check_depth(prefix)
        if op.limit == 0:
            return []
        if op.query and op.query in embedded.queries:
            return self._vector_search(op, prefix, embedded.queries[op.query])
        if op.query:
            return self._query_search(op, prefix)
        found = [e for e in self._entries([keys.indexed_tag(prefix), keys.unindexed_tag(prefix)])
                 if self._keep(e, prefix, op.filter)]
        found.sort(key=lambda e: e.created_at, reverse=True)
        page = _page(found, op.offset, op.limit)
        if op.refresh_ttl:
            self._refresh([e for e in page if e.metadata[META].get("ttl") is not None])
        return [self._search_item(e, None) for e in page]

    def _query_search(self, op: SearchOp, prefix: tuple[str, ...]) -> list[SearchItem]:
        everything = op.offset < 0 or op.limit < 0       # a slice from the end: read all
        wanted = MAX_CANDIDATES if everything else op.offset + op.limit
        top_k = min(MAX_CANDIDATES, max(2 * wanted, 20))
        while True:
            # as_of: a read that leaves no access record; distinct=False: every item is
            # findable by its key even when two hold the same text or the text is the
            # query itself (LangGraph's semantics, not Tulving's one-hit-per-text recall)
            hits = self.memory.search(
                op.query or "", top_k=top_k, tags=[keys.indexed_tag(prefix)],
                as_of=None if op.refresh_ttl else self._now(), distinct=False)
            kept: list[tuple[MemoryEntry, float | None]] = [
                (h.entry, h.similarity) for h in hits if self._keep(h.entry, prefix, op.filter)]
            if len(kept) >= wanted or len(hits) < top_k or top_k >= MAX_CANDIDATES:
                break
            top_k = min(MAX_CANDIDATES, top_k * 4)
        return self._ranked_page(op, prefix, kept)

    def _vector_search(self, op: SearchOp, prefix: tuple[str, ...],
                       query: indexing.Vectors) -> list[SearchItem]:
        """Ranked by your embeddings, as LangGraph's stores rank: every indexed item under
        the prefix that passes the filter, by its best cosine with the query."""
        scored: list[tuple[MemoryEntry, float | None]] = []
        scoreless: list[tuple[MemoryEntry, float | None]] = []
        for entry in self._entries([keys.indexed_tag(prefix)]):
            if entry.metadata.get(META) is None or not self._keep(entry, prefix, op.filter):
                continue
            score = indexing.score(query, entry.metadata[META].get("vectors"))
            (scoreless if score is None else scored).append((entry, score))
        scored.sort(key=lambda pair: pair[1] or 0.0, reverse=True)
        scoreless.sort(key=lambda pair: pair[0].created_at, reverse=True)
        return self._ranked_page(op, prefix, [*scored, *scoreless])

    def _ranked_page(self, op: SearchOp, prefix: tuple[str, ...],
                     ranked: list[tuple[MemoryEntry, float | None]]) -> list[SearchItem]:
        """The page of a query search: the ranked items, then (as LangGraph's stores do)
        the unindexed ones, newest first; their TTLs refreshed if the read asks."""
        rest = [e for e in self._entries([keys.unindexed_tag(prefix)])
                if self._keep(e, prefix, op.filter)]
        rest.sort(key=lambda e: e.created_at, reverse=True)
        page = _page([*ranked, *((e, None) for e in rest)], op.offset, op.limit)
        if op.refresh_ttl:
            self._refresh([e for e, _ in page if e.metadata[META].get("ttl") is not None])
        return [self._search_item(e, s) for e, s in page]

    def _keep(self, entry: MemoryEntry, prefix: tuple[str, ...],
              flt: Mapping[str, Any] | None) -> bool:
        item = entry.metadata.get(META) if entry.metadata else None
        if not isinstance(item, Mapping):
            return False
        if tuple(item["namespace"][: len(prefix)]) != prefix or self._hidden(entry):
            return False
        return not flt or matches(self._value(entry), flt)

    def _entries(self, tags: Sequence[str], *, archived: bool = False) -> list[MemoryEntry]:
        found: list[MemoryEntry] = []
        cursor: str | None = None
        while True:
            page = self.memory.list_entries(limit=_PAGE, cursor=cursor, tags=list(tags),
                                            include_archived=archived)
            found.extend(e for e in page.entries
                         if e.metadata and (META in e.metadata or values.PART in e.metadata))
            cursor = page.next_cursor
            if cursor is None:
                return found

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces: set[tuple[str, ...]] = set()
        for tulving_key in self.memory.list_keys(keys.ROOT + "/"):
            entry = None
            parsed = keys.parse_memory_key(tulving_key)
            if parsed is None or self._omit_expired:
                entry = self._read(tulving_key, refresh=False)
                if entry is None or (self._omit_expired and self._expired(entry)):
                    continue
                meta = entry.metadata.get(META) or {}
                parsed = (tuple(meta["namespace"]), meta["key"])
            namespaces.add(parsed[0])
        chosen = [ns for ns in namespaces
                  if all(_matches_condition(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            chosen = [ns[: op.max_depth] for ns in chosen]
        return _page(sorted(set(chosen)), op.offset, op.limit)

    # conversions -------------------------------------------------------------------------
    def _value(self, entry: MemoryEntry) -> dict[str, Any]:
        item = entry.metadata[META]
        if "value_typed" not in item or not item.get("value_parts"):
            return values.decode(item, [])
        parts = self._entries([values.part_tag(str(item["value_id"]))], archived=True)
        return values.decode(item, [p.metadata[values.PART] for p in parts])

    def _item(self, entry: MemoryEntry) -> Item | None:
        item = entry.metadata.get(META) if entry.metadata else None
        if not isinstance(item, Mapping):
            return None
        return Item(value=self._value(entry), key=item["key"],
                    namespace=tuple(item["namespace"]),
                    created_at=datetime.fromisoformat(item["created_at"]),
                    updated_at=entry.created_at)

    def _search_item(self, entry: MemoryEntry, score: float | None) -> SearchItem:
        item = entry.metadata[META]
        return SearchItem(namespace=tuple(item["namespace"]), key=item["key"],
                          value=self._value(entry),
                          created_at=datetime.fromisoformat(item["created_at"]),
                          updated_at=entry.created_at, score=score)

    @property
    def _omit_expired(self) -> bool:
        return bool((self.ttl_config or {}).get("omit_expired", True))

    def _hidden(self, entry: MemoryEntry) -> bool:
        """Left out of reads: expired, unless ``omit_expired=False`` keeps it until swept."""
        return self._omit_expired and self._expired(entry)

    def _expired(self, entry: MemoryEntry) -> bool:
        ttl = (entry.metadata or {}).get(META, {}).get("ttl")
        if ttl is None:
            return False
        touched = max(entry.created_at, entry.last_accessed_at)
        return self._now() >= touched + timedelta(minutes=float(ttl))

    def _now(self) -> datetime:
        return self.memory.operator.now()


def _checked(ops: Iterable[Op]) -> list[Op]:
    """The operations, their namespaces checked as LangGraph checks them (and as deep as
    Tulving's tags allow) before anything runs."""
    ops = list(ops)
    for op in ops:
        validate_op_namespace(op)
        if isinstance(op, PutOp | GetOp):
            keys.check_depth(op.namespace)
    return ops


def _page(found: Sequence[_T], offset: int, limit: int) -> list[_T]:
    """``found[offset:offset + limit]``, as LangGraph's reference ``InMemoryStore`` pages
    (negative bounds count from the end, as Python slices do)."""
    return list(found[offset: offset + limit])


def _printable(text: str) -> str:
    """Text Tulving accepts as content (no NUL, no lone surrogate)."""
    return text.replace("\x00", "\\0").encode("utf-8", "replace").decode("utf-8")


def _matches_condition(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" \
        else namespace[len(namespace) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))
