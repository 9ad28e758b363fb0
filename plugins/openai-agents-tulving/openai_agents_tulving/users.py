"""Whose memory: every read and write of this package acts for one user.

Tulving partitions memory by tenant (``user_id``, ``workspace_id``): a ``Memory`` bound
to a user sees that user's memories and no one else's. A ``Memory`` that a server's
users share is bound to none of them, so this package binds each call to the user it is
for (``memory.view(user_id=...)``, which shares the opened store) and refuses to guess:
reading one ``Memory`` for everybody is an explicit choice (``shared=True``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from tulving import AsyncMemory, Memory, ValidationError

#: A user id, or a function of the run's ``RunContextWrapper`` that gives one.
UserId = str | Callable[[Any], str]
#: Views kept per tool set or instructions (the least recently used is dropped beyond it).
MAX_VIEWS = 1024


def base_memory(memory: Memory | AsyncMemory) -> Memory:
    """The ``Memory`` behind ``memory``: the package calls it from worker threads, as the
    SDK may run one agent from several threads, each with its own event loop."""
    found = memory.memory if isinstance(memory, AsyncMemory) else memory
    if not isinstance(found, Memory):
        raise ValidationError("openai-agents-tulving needs a tulving.Memory or AsyncMemory")
    return found


def for_user(memory: Memory, user_id: str | None) -> Memory:
    """``memory`` acting for ``user_id`` (``memory`` itself when it already does, or when
    ``user_id`` is None). A Memory bound to another user is refused: it was handed over
    to act for that user only."""
    bound = memory.identity.user_id
    if user_id is None or user_id == bound:
        return memory
    if not isinstance(user_id, str) or not user_id.strip():
        raise ValidationError(f"user_id must be a non-empty string, got {user_id!r}")
    if bound is not None:
        raise ValidationError(
            f"this Memory acts for user {bound!r}; it cannot act for {user_id!r} (pass a "
            "Memory that is not bound to a user)")
    return memory.view(agent_id=memory.identity.agent_id, user_id=user_id,
                       workspace_id=memory.identity.workspace_id)


class UserMemories:
    """The memory each run reads and writes, for tools and instructions an agent keeps
    across runs (and users): ``user_id`` names the user, or is a function of the run
    context that does; ``shared=True`` reads and writes ``memory`` as it is for all."""

    def __init__(self, memory: Memory | AsyncMemory, user_id: UserId | None,
                 shared: bool) -> None:
        self.memory = base_memory(memory)
        if not isinstance(shared, bool):
            raise ValidationError("shared must be True or False")
        if shared and user_id is not None:
            raise ValidationError("give user_id or shared=True, not both")
        if user_id is None and not shared and self.memory.identity.user_id is None:
            raise ValidationError(
                "whose memory? pass user_id= (a user id, or a function of the run context "
                "such as lambda run: run.context['user_id']), or shared=True to let every "
                "user of this Memory read what any of them told it")
        if user_id is not None and not callable(user_id):
            for_user(self.memory, user_id)            # refused now, not at the first run
        self.user_id = user_id
        self._views: OrderedDict[str, Memory] = OrderedDict()
        self._lock = threading.Lock()

    def for_run(self, run: Any) -> Memory:
        """The memory of the run whose ``RunContextWrapper`` is ``run``."""
        if self.user_id is None:
            return self.memory
        chosen = self.user_id(run) if callable(self.user_id) else self.user_id
        if not isinstance(chosen, str) or not chosen.strip():
            raise ValidationError(f"the run's user_id must be a non-empty string, "
                                  f"got {chosen!r}")
        with self._lock:
            view = self._views.pop(chosen, None) or for_user(self.memory, chosen)
            self._views[chosen] = view
            if len(self._views) > MAX_VIEWS:   # dropped, not closed: a run may still use it
                self._views.popitem(last=False)
        return view
