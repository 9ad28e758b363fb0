"""Whose memory: every read and write of this package acts for one user.

A ``Memory`` that an agent's users share is bound to none of them, so each run is bound
to the user it is for (``memory.view(user_id=...)``, which shares the opened store), and
the package refuses to guess: reading one Memory for everybody is the explicit
``shared=True``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from pydantic_ai import RunContext

from tulving import Memory, ValidationError

#: A user id, or a function of the run's ``RunContext`` that gives one.
UserId = str | Callable[[RunContext[Any]], str]
#: Views kept (the least recently used is dropped beyond it; views share one store).
MAX_VIEWS = 1024


class UserMemories:
    """The Memory each run reads and writes."""

    def __init__(self, memory: Memory, user_id: UserId | None, shared: bool) -> None:
        if not isinstance(memory, Memory):
            raise ValidationError("pydantic-ai-tulving needs a tulving.Memory")
        if not isinstance(shared, bool):
            raise ValidationError("shared must be True or False")
        if shared and user_id is not None:
            raise ValidationError("give user_id or shared=True, not both")
        if user_id is None and not shared and memory.identity.user_id is None:
            raise ValidationError(
                "whose memory? pass user_id= (a user id, or a function of the run context "
                "such as lambda ctx: ctx.deps.user_id), or shared=True to let every user "
                "of this Memory read what any of them told it")
        if isinstance(user_id, str):
            self._check(memory, user_id)
        elif user_id is not None and not callable(user_id):
            raise ValidationError(f"user_id must be a string or a function, got {user_id!r}")
        self.memory = memory
        self.user_id = user_id
        self._views: OrderedDict[str, Memory] = OrderedDict()
        self._lock = threading.Lock()

    def for_run(self, ctx: RunContext[Any]) -> Memory:
        """The Memory of the run whose context is ``ctx``."""
        if self.user_id is None:
            return self.memory
        chosen = self.user_id(ctx) if callable(self.user_id) else self.user_id
        if not isinstance(chosen, str) or not chosen.strip():
            raise ValidationError(f"the run's user_id must be a non-empty string, got {chosen!r}")
        if chosen == self.memory.identity.user_id:
            return self.memory
        self._check(self.memory, chosen)
        with self._lock:
            view = self._views.get(chosen)
            if view is None:
                identity = self.memory.identity
                view = self.memory.view(agent_id=identity.agent_id, user_id=chosen,
                                        workspace_id=identity.workspace_id)
                self._views[chosen] = view
                while len(self._views) > MAX_VIEWS:
                    self._views.popitem(last=False)
            self._views.move_to_end(chosen)
            return view

    @staticmethod
    def _check(memory: Memory, user_id: str) -> None:
        bound = memory.identity.user_id
        if bound is not None and bound != user_id:
            raise ValidationError(
                f"this Memory acts for user {bound!r}; it cannot act for {user_id!r} (pass a "
                "Memory that is not bound to a user)")
