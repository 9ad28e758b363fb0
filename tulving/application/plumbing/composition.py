"""How the composition (``application/bootstrap.py``) turns a choice into an adapter.

Adapters are named (``storage="sqlite"``) or passed as instances; names resolve through
the plugin registry (entry points), so this module never imports a concrete adapter.
Defaults depend on the location: a file path means SQLite + usearch, a ``postgresql://`` URL
means PostgreSQL + pgvector, no location means the in-memory store + exact vectors. The
embedder defaults to ``local`` (offline MiniLM) and the tokenizer to ``cl100k_base``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from tulving.application.plumbing.memory_settings import DEFAULT
from tulving.application.plumbing.telemetry import engines_traced
from tulving.application.plumbing.traced_ports import traced_port
from tulving.distribution import DEFAULT_PARTS
from tulving.plugins.registry import AdapterContext, get_manager

__all__ = ["DEFAULT", "default_names", "resolve"]  # DEFAULT: memory_settings' marker


def default_names(location: str, *, encrypted: bool = False) -> dict[str, str | None]:
    """A file store's index is usearch (memory-mapped: a cold open reads nothing), except
    for an encrypted store (a memory-mapped file cannot be encrypted: hnsw seals its cache)
    and a store that already has an hnswlib cache and no usearch one (built before usearch
    was the default: it keeps its index rather than rebuild it unasked; ``vectors=
    "usearch"`` once builds the new one)."""
    if location.startswith(("postgresql://", "postgres://")):
        return {"storage": "postgres", "vectors": "pgvector"}
    if location in ("", ":memory:"):
        return {"storage": "memory", "vectors": "exact"}
    if encrypted or (os.path.exists(location + ".hnsw")
                     and not os.path.exists(location + ".usearch.json")):
        return {"storage": "sqlite", "vectors": "hnsw"}
    return {"storage": "sqlite", "vectors": "usearch"}


def resolve(
    kind: str,
    choice: Any,
    default: str | None,
    context: AdapterContext,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """An adapter instance from a name, an instance, or the default name (``None`` stays
    ``None``: the caller asked for no adapter of this kind); behind a traced proxy when
    spans are recorded (``plumbing.traced_ports``)."""
    adapter = _resolve(kind, choice, default, context, options)
    return traced_port(kind, adapter) if engines_traced() else adapter


def _resolve(kind: str, choice: Any, default: str | None, context: AdapterContext,
             options: Mapping[str, Any] | None) -> Any:
    defaulted = choice is DEFAULT
    if defaulted:
        choice = default
    if choice is None:
        return None
    if isinstance(choice, str):
        _pm, registry = get_manager()
        # A default adapter whose package is missing: the person never named it, so name
        # what they install (the README's `default`), not the part they never heard of.
        extra = registry.spec(kind, choice).extra if defaulted else None
        return registry.create(kind, choice, context,
                               install_extra="default" if extra in DEFAULT_PARTS else None,
                               **dict(options or {}))
    return choice
