"""Asking the configured LLM how to widen a query (opt-in: ``search.llm_expansion``).

The rules of a reply are in :mod:`tulving.domain.query_expansion`. Here: the call goes
through the gateway, so a missing, failing, slow or exhausted model means plain search
(counted in ``stats()["llm"]["fallbacks"]``, warned once), never an error; and replies
are remembered for recent queries, so an agent that repeats a question (search, then
curate on the same words) pays for one call.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from tulving.application.plumbing.llm_gateway import LLMGateway
from tulving.domain.query_expansion import (
    EXPANSION_SCHEMA,
    MAX_EXPANSION_TOKENS,
    Expansion,
    expansion_messages,
    parse_expansion,
)

#: Recent queries whose expansion is kept (a few kilobytes each at most).
CACHED_QUERIES = 256


class QueryExpander:
    def __init__(self, llm: LLMGateway, cached: int = CACHED_QUERIES) -> None:
        self._llm = llm
        self._cached = cached
        self._recent: OrderedDict[str, Expansion | None] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, query: str) -> Expansion | None:
        """The expansion of ``query``, or None when search must run plainly. Only
        answers are remembered: after a failure the next search asks again."""
        key = " ".join(query.split())
        with self._lock:
            if key in self._recent:
                self._recent.move_to_end(key)
                return self._recent[key]
        if self._llm.llm is None:
            self._llm.fallback("query expansion")
            return None
        reply = self._llm.complete_json("query expansion", expansion_messages(query),
                                        EXPANSION_SCHEMA, max_tokens=MAX_EXPANSION_TOKENS)
        if reply is None:
            return None
        expansion = parse_expansion(reply)
        with self._lock:
            self._recent[key] = expansion
            while len(self._recent) > self._cached:
                self._recent.popitem(last=False)
        return expansion
