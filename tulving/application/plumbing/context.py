"""What every service of one Memory shares: its adapters, identity and settings."""

from __future__ import annotations

from typing import Any

import attrs

from tulving.domain.identity import Identity
from tulving.domain.representation import CONTEXT_WINDOW
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
    #: pluggy hook relay (``pm.hook``) for write policies and curate post-processing.
    hooks: Any
    session_id: str | None = None
    #: Entries written just before an entry that its vector reads with it (see
    #: ``plumbing.representation``); ``options={"writing": {"context_window": N}}``.
    context_window: int = CONTEXT_WINDOW

    def visible_partitions(self) -> tuple[str, ...]:
        return self.identity.visible_partitions(self.session_id)
