"""``TulvingSession``: the Agents SDK's ``Session`` protocol over a Tulving ``Memory``.

Each conversation item is an EPISODE memory (kept verbatim, see :mod:`.items`), tagged
with its session, so the conversation is at once the session's history (``get_items``
returns it in order) and part of what the agent remembers: ``Memory.search`` and
``Memory.curate`` find it later, from any session, door or process.

Every session acts for one user (see :mod:`.users`): the one given, else the one the
Memory is bound to, else the session's own id, so one user's conversation never reaches
another's recall or briefing unless ``shared=True`` says it may.

The SDK calls these methods from an event loop, and a threaded server runs one session
from several threads at once, each with its own loop (``Runner.run_sync``). Each method
therefore runs on a worker thread with nothing bound to a loop: the Memory serialises
writes itself, and a lock held on the worker thread makes ``pop_item`` and
``clear_session`` atomic against each other. A call that has started completes even if
its task is cancelled (anyio waits for the thread), as ``SQLiteSession``'s do.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread
from agents.memory.session_settings import (
    SessionSettings,
    coerce_session_settings,
    resolve_session_limit,
)

from tulving import AsyncMemory, Memory, MemoryEntry, NotFoundError, ValidationError

from .items import KeptItem, assemble, entries_for, session_of
from .users import base_memory, for_user

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

_PAGE = 1000
_T = TypeVar("_T")


def session_tag(session_id: str) -> str:
    """The tag that marks a session's items (hashed: a session id may be any string)."""
    return "oai-session:" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:24]


def session_user(session_id: str) -> str:
    """The user a session acts for when none is given: its own id (hashed when it is
    not a valid Tulving user id), so each conversation is private to itself."""
    if len(session_id) <= 256 and "\x1f" not in session_id and session_id.strip():
        return session_id
    return "oai-session:" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]


async def _off_loop(fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)`` on a worker thread; a cancellation waits for it to finish."""
    return await anyio.to_thread.run_sync(fn, *args)


class TulvingSession:
    """Conversation history for one session id, kept as Tulving episodes of one user.

    Args:
        session_id: the conversation's id (any non-empty string).
        memory: a ``tulving.Memory`` (or ``AsyncMemory``); the session does not close it.
        user_id: the user the session's items belong to. Default: the user the Memory is
            bound to, else ``session_id`` itself (each conversation private to itself).
            Give the same ``user_id`` to a user's sessions to let them recall each other.
        shared: keep the items under the Memory's own identity, which every session
            given that Memory reads (for a memory that is one user's already, or that
            its users are meant to share).
        session_settings: the SDK's ``SessionSettings`` or a dict of its fields
            (``limit``: how many of the latest items ``get_items`` returns by default);
            an unknown field raises ``TypeError``, as the SDK's own sessions do.
        hard_delete: ``pop_item`` and ``clear_session`` delete the items for good instead
            of archiving them (archived items leave the history and search, and stay
            readable by id and in exports until Tulving's retention removes them).
    """

    session_settings: SessionSettings | None = None

    def __init__(self, session_id: str, memory: Memory | AsyncMemory, *,
                 user_id: str | None = None, shared: bool = False,
                 session_settings: SessionSettings | dict[str, Any] | None = None,
                 hard_delete: bool = False) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ValidationError("session_id must be a non-empty string")
        if not isinstance(shared, bool):
            raise ValidationError("shared must be True or False")
        if shared and user_id is not None:
            raise ValidationError("give user_id or shared=True, not both")
        self.session_id = session_id
        self.session_settings = (coerce_session_settings(session_settings)
                                 if session_settings is not None else SessionSettings())
        base = base_memory(memory)
        if not shared and user_id is None and base.identity.user_id is None:
            user_id = session_user(session_id)
        self.memory = base if shared else for_user(base, user_id)
        """The Memory (a per-user view of the one given) the session reads and writes."""
        self.user_id = self.memory.identity.user_id
        self.hard_delete = hard_delete
        self.tag = session_tag(session_id)
        self._removals = threading.Lock()

    # the Session protocol ----------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items in order; with ``limit`` (or the settings' limit), the
        latest ``limit`` of them, still in order."""
        wanted = resolve_session_limit(limit, self.session_settings)
        if wanted is not None and wanted <= 0:
            return []
        items = [k.item for k in await _off_loop(self._kept) if k.item is not None]
        if wanted is not None:
            items = items[-wanted:]
        return items  # type: ignore[return-value]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items (one transaction: all are kept or none). Items added together
        share one event time, so Tulving reads each in the context of the ones before.
        What a tool or a user produced is kept whatever its size or bytes."""
        if not items:
            return
        when = datetime.now(UTC)
        batch = [{**fields, "valid_from": when} for item in items
                 for fields in entries_for(item, self.session_id, self.tag)]
        await _off_loop(self.memory.store_many, batch)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the latest item (None when the session is empty)."""
        item: Any = await _off_loop(self._pop)
        return item  # type: ignore[no-any-return]

    async def clear_session(self) -> None:
        """Remove every item of the session."""
        await _off_loop(self._clear)

    # on the worker thread ----------------------------------------------------------------
    def _pop(self) -> dict[str, Any] | None:
        with self._removals:
            kept = self._kept()
            while kept:                    # unreadable entries on the way are dropped
                last = kept.pop()
                self._remove(last.entries)
                if last.item is not None:
                    return last.item
            return None

    def _clear(self) -> None:
        with self._removals:
            for kept in self._kept():
                self._remove(kept.entries)

    def _remove(self, entries: tuple[MemoryEntry, ...]) -> None:
        for entry in entries:
            try:
                self.memory.forget(entry.id, hard=self.hard_delete)
            except NotFoundError:        # removed meanwhile by another process
                continue

    def _kept(self) -> list[KeptItem]:
        found: list[MemoryEntry] = []
        cursor: str | None = None
        while True:
            page = self.memory.list_entries(limit=_PAGE, cursor=cursor, tags=[self.tag])
            found.extend(e for e in page.entries if session_of(e) == self.session_id)
            cursor = page.next_cursor
            if cursor is None:
                return assemble(found)
