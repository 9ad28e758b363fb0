"""``TulvingSession``: the Agents SDK's ``Session`` protocol over a Tulving ``Memory``.

Each conversation item is one EPISODE memory (kept verbatim, see :mod:`.items`), tagged
with its session, so the conversation is at once the session's history (``get_items``
returns it in order) and part of what the agent remembers: ``Memory.search`` and
``Memory.curate`` find it later, from any session, door or process.

The SDK calls these methods from its event loop: each runs on a worker thread through
``tulving.AsyncMemory`` (reads in parallel, writes one at a time), and a write that has
started completes even if its task is cancelled, as ``SQLiteSession``'s do.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agents.memory.session_settings import SessionSettings, resolve_session_limit

from tulving import AsyncMemory, Memory, MemoryEntry, NotFoundError, ValidationError

from .items import entry_fields, item_of

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

_PAGE = 1000


def session_tag(session_id: str) -> str:
    """The tag that marks a session's items (hashed: a session id may be any string)."""
    return "oai-session:" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:24]


class TulvingSession:
    """Conversation history for one session id, kept as Tulving episodes.

    Args:
        session_id: the conversation's id (any non-empty string).
        memory: a ``tulving.Memory`` (or ``AsyncMemory``), whose identity owns the items;
            the session does not close it.
        session_settings: the SDK's ``SessionSettings`` (``limit``: how many of the
            latest items ``get_items`` returns by default).
        hard_delete: ``pop_item`` and ``clear_session`` delete the items for good instead
            of archiving them (archived items leave the history and search, and stay
            readable by id and in exports until Tulving's retention removes them).
    """

    session_settings: SessionSettings | None = None

    def __init__(self, session_id: str, memory: Memory | AsyncMemory, *,
                 session_settings: SessionSettings | dict[str, Any] | None = None,
                 hard_delete: bool = False) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ValidationError("session_id must be a non-empty string")
        self.session_id = session_id
        self.memory = memory.memory if isinstance(memory, AsyncMemory) else memory
        if not isinstance(self.memory, Memory):
            raise ValidationError("TulvingSession needs a tulving.Memory or AsyncMemory")
        self._async = memory if isinstance(memory, AsyncMemory) \
            else AsyncMemory.wrapping(self.memory)
        self.session_settings = (SessionSettings(**session_settings)
                                 if isinstance(session_settings, dict)
                                 else session_settings or SessionSettings())
        self.hard_delete = hard_delete
        self.tag = session_tag(session_id)

    # the Session protocol ----------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items in order; with ``limit`` (or the settings' limit), the
        latest ``limit`` of them, still in order."""
        wanted = resolve_session_limit(limit, self.session_settings)
        if wanted is not None and wanted <= 0:
            return []
        entries = await self._entries()
        if wanted is not None:
            entries = entries[-wanted:]
        return [item for e in entries if (item := item_of(e)) is not None]  # type: ignore[misc]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items (one transaction: all are kept or none). Items added together
        share one event time, so Tulving reads each in the context of the ones before."""
        if not items:
            return
        when = datetime.now(UTC)
        batch = [{**entry_fields(item, self.session_id, self.tag), "valid_from": when}
                 for item in items]
        await self._async.store_many(batch)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the latest item (None when the session is empty)."""
        entries = await self._entries()
        while entries:
            entry = entries.pop()
            try:
                await self._async.forget(entry.id, hard=self.hard_delete)
            except NotFoundError:        # removed meanwhile by another caller
                continue
            item = item_of(entry)
            if item is not None:
                return item  # type: ignore[return-value]
        return None

    async def clear_session(self) -> None:
        """Remove every item of the session."""
        for entry in await self._entries():
            try:
                await self._async.forget(entry.id, hard=self.hard_delete)
            except NotFoundError:
                continue

    # beyond the protocol -----------------------------------------------------------------
    async def _entries(self) -> list[MemoryEntry]:
        found: list[MemoryEntry] = []
        cursor: str | None = None
        while True:
            page = await self._async.list_entries(limit=_PAGE, cursor=cursor, tags=[self.tag])
            found.extend(e for e in page.entries if item_of(e) is not None
                         and e.metadata["openai_agents"].get("session_id") == self.session_id)
            cursor = page.next_cursor
            if cursor is None:
                return found
