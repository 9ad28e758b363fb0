"""Which facade method is which GenAI memory operation, and what its span says.

The table below is the whole mapping (documented in docs/operations/observability.md):
writes are ``update_memory`` (an upsert: a key's new version supersedes the old one),
reads ``search_memory`` (``curate`` too: a search with a token budget, whose figures are
``tulving.curate.*``), archival and deletion ``delete_memory``; ``erase`` removes a data
subject's whole memory, ``delete_memory_store``; opening a store is
``create_memory_store`` (it creates one that does not exist).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tulving.application.plumbing.telemetry import (
    Describe,
    entry_attributes,
    query_text,
    records_json,
    scope_attributes,
    traced_operation,
)


def _opened(memory: Any, _args: Mapping[str, Any], _result: Any, _capture: bool
            ) -> dict[str, Any]:
    ctx = memory.ctx
    out: dict[str, Any] = {"tulving.storage": getattr(ctx.storage, "name", None),
                           "tulving.vectors": getattr(ctx.vectors, "name", None)}
    if ctx.embedder is not None:
        out["gen_ai.request.model"] = ctx.embedder.model_id
    return out


def _one(_memory: Any, _args: Mapping[str, Any], result: Any, capture: bool
         ) -> dict[str, Any]:
    return entry_attributes([result], capture)


def _many(_memory: Any, _args: Mapping[str, Any], result: Any, capture: bool
          ) -> dict[str, Any]:
    if not isinstance(result, list):  # remember(wait=False): a job, entries come later
        return {"tulving.remember.queued": True}
    return entry_attributes(result, capture)


def _count(_memory: Any, args: Mapping[str, Any], result: Any, _capture: bool
           ) -> dict[str, Any]:
    out = scope_attributes(args.get("scope"))
    if isinstance(result, int) and not isinstance(result, bool):
        out["gen_ai.memory.record.count"] = result
    return out


def _search(_memory: Any, args: Mapping[str, Any], result: Any, capture: bool
            ) -> dict[str, Any]:
    out: dict[str, Any] = {"gen_ai.memory.record.count": len(result),
                           "tulving.search.mode": args.get("mode", "hybrid"),
                           "tulving.search.top_k": args.get("top_k", 10)}
    threshold = args.get("min_score")
    if isinstance(threshold, int | float):
        out["gen_ai.memory.search.similarity.threshold"] = float(threshold)
    if capture:
        out["gen_ai.memory.query.text"] = query_text(args.get("query"))
        out["gen_ai.memory.records"] = records_json([(r.entry, r.score) for r in result])
    return out


def _curate(_memory: Any, args: Mapping[str, Any], result: Any, capture: bool
            ) -> dict[str, Any]:
    out: dict[str, Any] = {"gen_ai.memory.record.count": len(result.entries),
                           "tulving.curate.token_budget": result.token_budget,
                           "tulving.curate.tokens_used": result.token_count,
                           "tulving.curate.candidates": result.sources_consulted,
                           "tulving.curate.omitted": result.omitted,
                           "tulving.curate.mode": result.mode}
    if capture:
        out["gen_ai.memory.query.text"] = query_text(args.get("query"))
        out["gen_ai.memory.records"] = records_json([(c.entry, c.score)
                                                     for c in result.entries])
    return out


def _listed(_memory: Any, _args: Mapping[str, Any], result: Any, capture: bool
            ) -> dict[str, Any]:
    entries = list(getattr(result, "entries", result))
    return {"gen_ai.memory.record.count": len(entries),
            **({"gen_ai.memory.records": records_json([(e, None) for e in entries])}
               if capture and entries else {})}


def _procedures(memory: Any, args: Mapping[str, Any], result: Any, capture: bool
                ) -> dict[str, Any]:
    return {**_search(memory, args, result, capture), "tulving.search.mode": "procedures"}


UPDATE, SEARCH, DELETE = "update_memory", "search_memory", "delete_memory"

#: facade method -> (operation, what its span says after the call)
OPERATIONS: dict[str, tuple[str, Describe | None]] = {
    "store": (UPDATE, _one),
    "store_many": (UPDATE, _many),
    "remember": (UPDATE, _many),
    "correct": (UPDATE, _one),
    "record_outcome": (UPDATE, _one),
    "consolidate": (UPDATE, None),
    "import_bundle": (UPDATE, None),
    "search": (SEARCH, _search),
    "curate": (SEARCH, _curate),
    "get": (SEARCH, _one),
    "list_entries": (SEARCH, _listed),
    "history": (SEARCH, _listed),
    "procedures": (SEARCH, _procedures),
    "forget": (DELETE, _one),
    "clear": (DELETE, _count),
    "purge": (DELETE, None),
    "erase": ("delete_memory_store", None),
}


def trace_methods(cls: type) -> None:
    """Wrap the facade's memory operations (and ``startup``, the first time it opens
    the store) in spans, in place."""
    for name, (operation, describe) in OPERATIONS.items():
        setattr(cls, name, traced_operation(getattr(cls, name), operation, describe))
    cls.startup = traced_operation(  # type: ignore[attr-defined]
        cls.startup, "create_memory_store", _opened,  # type: ignore[attr-defined]
        when=lambda memory: memory.state == "not started")
