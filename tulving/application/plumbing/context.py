"""What every service of one Memory shares: its adapters, identity, settings and lock."""

from __future__ import annotations

import threading
from collections.abc import Callable

import attrs

from tulving.domain.identity import Identity
from tulving.domain.representation import CONTEXT_WINDOW
from tulving.plugins.chain import PluginHooks
from tulving.ports.clock import Clock
from tulving.ports.embedder import Embedder
from tulving.ports.llm import LLM
from tulving.ports.storage import Storage
from tulving.ports.tokenizer import Tokenizer
from tulving.ports.vectors import VectorIndex


@attrs.define
class MemoryContext:
    identity: Identity
    storage: Storage
    clock: Clock
    embedder: Embedder | None
    vectors: VectorIndex | None
    tokenizer: Tokenizer | None
    llm: LLM | None
    #: The plugin manager's chained hooks: write policies and curate post-processing.
    hooks: PluginHooks | None
    #: The id of the session this identity is in now, asked of the store at each call
    #: (``agent_memory.sessions``): every process of one agent sees the same session, so
    #: a session started through one server replica is the one another ends.
    current_session: Callable[[], str | None] | None = None
    #: Entries written just before an entry that its vector reads with it (see
    #: ``plumbing.representation``); ``options={"writing": {"context_window": N}}``.
    context_window: int = CONTEXT_WINDOW
    #: The Memory's lock (its views share it): the first lock of every write of this
    #: process, taken by ``write_order.writing`` before the store's transaction, so no
    #: service can write without it or take it in the other order.
    serial: threading.RLock = attrs.field(factory=threading.RLock)
    #: The strong tier's encoder (``options={"search": {"strong": ...}}``), or None: it
    #: re-scores hybrid search's best candidates (``retrieval.strong``).
    strong: Embedder | None = None

    @property
    def session_id(self) -> str | None:
        return self.current_session() if self.current_session is not None else None

    def visible_partitions(self) -> tuple[str, ...]:
        return self.identity.visible_partitions(self.session_id)
