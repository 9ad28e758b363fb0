"""``TulvingMemoryService``: ADK's ``BaseMemoryService`` over a Tulving ``Memory``.

ADK names the app and the user on every call; each call reads and writes
``memory.view(agent_id=<app>, user_id=<user>)``, so one user's memories never reach
another's, from this service or any other door (the CLI, MCP, the HTTP server). Events
are stored once per session and event (a Tulving key each), so adding a growing session
again writes only what is new or changed, and a deleted memory is not brought back by a
later ``add_session_to_memory``.

A search returns what ADK's own services return (the user's events that share words
with the query, those sharing the most first, at most ``max_results``), then what
Tulving's vectors find without a shared word, when its cosine with the query reaches
``min_similarity``: a paraphrase is remembered, an unrelated event is not put in the
prompt.

Tulving is synchronous (SQLite, the embedding model); every call runs on a worker thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry as AdkMemory
from typing_extensions import override

from tulving import CuratedContext, Memory, MemoryEntry, NotFoundError, ValidationError

from . import events, naming

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session

#: The bucket of events added without a session id.
NO_SESSION = "__no_session__"
#: Views kept (the least recently used is dropped beyond it; views share one store).
MAX_VIEWS = 1024
_SCOPES = ("agent", "personal")


class TulvingMemoryService(BaseMemoryService):
    """ADK memory kept in Tulving.

    Args:
        memory: the ``tulving.Memory`` to keep it in (not closed by the service). A
            Memory bound to a user serves that user only; one bound to none serves
            every user ADK names (each through a view).
        max_results: the most memories a search returns (ADK's in-memory service: 10).
        min_similarity: the cosine (query, memory) at which a memory sharing no word
            with the query is still returned; 1.0 turns that off (words only).
        scope: ``"agent"`` (default): what the app stored is seen by this app only, for
            that user; ``"personal"``: by every agent and door of that user.
    """

    def __init__(self, memory: Memory, *, max_results: int = 10,
                 min_similarity: float = 0.5, scope: str = "agent") -> None:
        if not isinstance(memory, Memory):
            raise ValidationError("TulvingMemoryService needs a tulving.Memory")
        if isinstance(max_results, bool) or not isinstance(max_results, int) \
                or max_results < 1:
            raise ValidationError(f"max_results must be a positive integer, got {max_results!r}")
        if isinstance(min_similarity, bool) or not isinstance(min_similarity, int | float) \
                or not -1.0 <= min_similarity <= 1.0:
            raise ValidationError(f"min_similarity must be a number in [-1, 1], "
                                  f"got {min_similarity!r}")
        if scope not in _SCOPES:
            raise ValidationError(f"scope must be one of {', '.join(_SCOPES)}, got {scope!r}")
        self.memory = memory
        self.max_results = max_results
        self.min_similarity = float(min_similarity)
        self.scope = scope
        self._views: OrderedDict[tuple[str, str], Memory] = OrderedDict()
        self._lock = threading.Lock()

    # BaseMemoryService --------------------------------------------------------------------
    @override
    async def add_session_to_memory(self, session: Session) -> None:
        await self.add_events_to_memory(app_name=session.app_name, user_id=session.user_id,
                                        events=session.events, session_id=session.id)

    @override
    async def add_events_to_memory(self, *, app_name: str, user_id: str,
                                   events: Sequence[Event], session_id: str | None = None,
                                   custom_metadata: Mapping[str, object] | None = None
                                   ) -> None:
        view = self.view(app_name, user_id)
        copied = [e.model_copy(deep=True) for e in events]     # the caller's stay theirs
        await asyncio.to_thread(self._add_events, view, copied, session_id, custom_metadata)

    @override
    async def add_memory(self, *, app_name: str, user_id: str,
                         memories: Sequence[AdkMemory],
                         custom_metadata: Mapping[str, object] | None = None) -> None:
        view = self.view(app_name, user_id)
        common = self._common("FACT")
        batch = [entry for m in memories for entry in events.memory_entries(
            m, naming.memory_key(m.id) if m.id else None, custom_metadata, common)]
        if batch:
            await asyncio.to_thread(view.store_many, batch)

    @override
    async def search_memory(self, *, app_name: str, user_id: str,
                            query: str) -> SearchMemoryResponse:
        if not isinstance(query, str) or not query.strip():
            return SearchMemoryResponse()
        view = self.view(app_name, user_id)
        return SearchMemoryResponse(memories=await asyncio.to_thread(self._search, view, query))

    @override
    async def delete_memory(self, *, app_name: str, user_id: str,
                            memory_id: str | None = None) -> None:
        """Forget the memory whose ``id`` a search returned (archived, so its history and
        the audit log keep it; ``memory.forget(id, hard=True)`` deletes it for good)."""
        if not memory_id:
            return
        view = self.view(app_name, user_id)
        await asyncio.to_thread(self._forget, view, memory_id)

    # Tulving's ideas ADK's interface has no words for -----------------------------------
    async def curate(self, *, app_name: str, user_id: str, query: str | None = None,
                     token_budget: int) -> CuratedContext:
        """The user's memories that matter for ``query`` as one prompt block of at most
        ``token_budget`` tokens (``Memory.curate``; no query: the cold-start briefing)."""
        view = self.view(app_name, user_id)
        return await asyncio.to_thread(view.curate, query or None, token_budget=token_budget)

    def view(self, app_name: str, user_id: str) -> Memory:
        """The Memory this service reads and writes for ``(app_name, user_id)``."""
        agent, user = naming.tulving_id(app_name), naming.tulving_id(user_id)
        bound = self.memory.identity.user_id
        if bound is not None and bound != user:
            raise ValidationError(f"this Memory acts for user {bound!r}; it cannot act for "
                                  f"{user_id!r} (pass a Memory that is not bound to a user)")
        with self._lock:
            found = self._views.get((agent, user))
            if found is None:
                found = self.memory.view(agent_id=agent, user_id=user,
                                         workspace_id=self.memory.identity.workspace_id)
                self._views[(agent, user)] = found
                while len(self._views) > MAX_VIEWS:
                    self._views.popitem(last=False)
            self._views.move_to_end((agent, user))
            return found

    # on the worker thread ----------------------------------------------------------------
    def _common(self, type: str) -> dict[str, object]:
        return {"type": type, "scope": self.scope, "dedup": False, "tags": [naming.ROOT]}

    def _add_events(self, view: Memory, added: Sequence[Event], session_id: str | None,
                    custom_metadata: Mapping[str, object] | None) -> None:
        session = session_id or NO_SESSION
        common = self._common("EPISODE")
        active = set(view.list_keys(naming.event_key(session, "")[:-1]))
        batch: list[dict[str, object]] = []
        for event in added:
            key = naming.event_key(session, event.id)
            entries = events.event_entries(event, key, session, custom_metadata, common)
            if not entries or not self._changed(view, key, entries, key in active):
                continue
            batch.extend(entries)
        if batch:
            view.store_many(batch)

    def _changed(self, view: Memory, key: str, entries: list[dict[str, object]],
                 active: bool) -> bool:
        """Whether the event's entries are new or differ from what is kept; an event
        forgotten on purpose (``delete_memory``) is never written again."""
        if active:
            kept = view.get(key)
            written = cast("dict[str, object]", entries[0]["metadata"])
            return kept.content != entries[0]["content"] or \
                (kept.metadata or {}).get(events.META) != written[events.META]
        try:
            versions = view.history(key)
        except NotFoundError:
            return True
        reason = versions[0].archive_reason if versions else None
        return not (reason is not None and reason.value == "forgotten")

    def _search(self, view: Memory, query: str) -> list[AdkMemory]:
        text = events.searchable(query)
        wanted = self.max_results
        ranked = [h.entry for h in view.search(text, top_k=wanted * 3, mode="lexical")]
        words = {e.id for e in ranked}
        ranked += [h.entry for h in view.search(text, top_k=wanted * 3, mode="semantic")
                   if h.entry.id not in words and h.similarity is not None
                   and h.similarity >= self.min_similarity]
        found: list[AdkMemory] = []
        seen: set[str] = set()
        for entry in ranked:
            key = _head_key(entry)
            if key in seen:
                continue
            seen.add(key)
            found.append(events.to_adk(*self._whole(view, entry, key), key))
            if len(found) == wanted:
                break
        return found

    @staticmethod
    def _whole(view: Memory, entry: MemoryEntry, key: str
               ) -> tuple[MemoryEntry, list[MemoryEntry]]:
        """An event's head entry and its other parts, in order."""
        meta = (entry.metadata or {}).get(events.META) or {}
        count = int(meta.get("parts", 1))
        if count == 1:
            return entry, []
        head = view.get(key)
        return head, [view.get(f"{key}/{i}") for i in range(1, count)]

    @staticmethod
    def _forget(view: Memory, memory_id: str) -> None:
        try:
            head = view.get(memory_id)
        except NotFoundError:
            return
        key = head.key or head.id
        count = int(((head.metadata or {}).get(events.META) or {}).get("parts", 1))
        for name in [key, *(f"{key}/{i}" for i in range(1, count))]:
            try:
                view.forget(name)
            except NotFoundError:
                continue


def _head_key(entry: MemoryEntry) -> str:
    """The id a search returns for ``entry``: its event's key (a part's is its head's),
    or the entry's own key or id for any other memory."""
    meta = (entry.metadata or {}).get(events.META) or {}
    key = entry.key or entry.id
    part = int(meta.get("part", 0))
    return key.rsplit("/", 1)[0] if part and entry.key else key
