"""Thin traced proxies of the ports, so a trace shows where an operation's time went:
embedding, the lexical and the vector search, each storage call.

Installed by the composition root only when spans are really recorded
(``telemetry.engines_traced``); without an SDK the adapters are used as they are.
A proxy forwards every attribute, reads and writes alike, to its adapter, so
``isinstance`` checks against the ports' runtime protocols and optional capabilities
(``get_briefs``, ``SyncLog``) see the adapter's own. A call makes a child span only
inside a recorded operation: an engine never starts a trace of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tulving.application.plumbing.telemetry import recording_span, tracer

#: Storage methods left unwrapped: ``transaction`` hands out a context manager (the
#: writing transaction is timed by ``telemetry.write_lock``), then lifecycle and the
#: bookkeeping calls that cost less than a span of their own (a span of the SDK costs
#: some 15-20 us; see benchmarks/telemetry_overhead.py).
_STORAGE_SKIP = frozenset({
    "transaction", "open", "close", "get_meta", "set_meta", "vector_log_position",
    "vector_changes", "trim_vector_log", "open_sessions", "get_session",
    "note_session_activity"})
_VECTOR_CALLS = frozenset({"query", "add", "remove", "persist", "rebuild"})
_EMBED_CALLS = frozenset({"embed", "embed_query"})

_classes: dict[tuple[type, str], type] = {}


class _TracedPort:
    """The shared body of the proxies (a subclass per adapter class keeps its module and
    name readable: ``type(proxy).__module__`` is the adapter's)."""

    __slots__ = ("__weakref__", "_tulving_inner", "_tulving_span")

    def __init__(self, inner: Any,
                 span: Callable[[str, Any], tuple[str, dict[str, Any]] | None]) -> None:
        object.__setattr__(self, "_tulving_inner", inner)
        object.__setattr__(self, "_tulving_span", span)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance(proxy, PostgresStorage) as for the adapter
        return type(self._tulving_inner)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._tulving_inner, name)
        if name.startswith("_") or not callable(value):
            return value
        return _traced_call(value, name, self._tulving_span)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._tulving_inner, name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self._tulving_inner, name)

    def __repr__(self) -> str:
        return f"traced({self._tulving_inner!r})"


def _traced_call(fn: Callable[..., Any], name: str,
                 span: Callable[[str, Any], tuple[str, dict[str, Any]] | None]
                 ) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        if recording_span() is None:
            return fn(*args, **kwargs)
        described = span(name, args)
        if described is None:
            return fn(*args, **kwargs)
        title, attributes = described
        with tracer().start_as_current_span(title, attributes=attributes):
            return fn(*args, **kwargs)

    return call


def _proxy(inner: Any, kind: str,
           span: Callable[[str, Any], tuple[str, dict[str, Any]] | None]) -> Any:
    cls = type(inner)
    proxy_cls = _classes.get((cls, kind))
    if proxy_cls is None:
        proxy_cls = type(f"Traced{cls.__name__}", (_TracedPort,),
                         {"__module__": cls.__module__, "__slots__": ()})
        _classes[(cls, kind)] = proxy_cls
    return proxy_cls(inner, span)


def traced_storage(storage: Any) -> Any:
    engine = str(getattr(storage, "name", "storage"))
    system = {"postgres": "postgresql"}.get(engine, engine)

    def span(name: str, _args: Any) -> tuple[str, dict[str, Any]] | None:
        if name in _STORAGE_SKIP:
            return None
        kind = "lexical" if name == "lexical_search" else "storage"
        return f"{name} {engine}", {"db.system.name": system, "db.operation.name": name,
                                    "tulving.engine": kind}

    return _proxy(storage, "storage", span)


def traced_vectors(vectors: Any) -> Any:
    engine = str(getattr(vectors, "name", "vectors"))

    def span(name: str, args: Any) -> tuple[str, dict[str, Any]] | None:
        if name not in _VECTOR_CALLS:
            return None
        attributes: dict[str, Any] = {"tulving.engine": "vector",
                                      "tulving.vectors": engine, "db.operation.name": name}
        if name == "query" and len(args) > 1 and isinstance(args[1], int):
            attributes["tulving.vectors.k"] = args[1]
        return f"vector {name} {engine}", attributes

    return _proxy(vectors, "vectors", span)


def traced_embedder(embedder: Any) -> Any:
    model = str(getattr(embedder, "model_id", "embedder"))

    def span(name: str, args: Any) -> tuple[str, dict[str, Any]] | None:
        if name not in _EMBED_CALLS:
            return None
        attributes: dict[str, Any] = {"tulving.engine": "embedding",
                                      "gen_ai.operation.name": "embeddings",
                                      "gen_ai.request.model": model}
        if args and isinstance(args[0], list | tuple):
            attributes["tulving.embedding.texts"] = len(args[0])
        return f"embeddings {model}", attributes

    return _proxy(embedder, "embedder", span)


#: port kind -> its proxy maker (the tokenizer is left alone: packing counts hundreds of
#: texts a call, timed as one ``curate.pack`` span instead)
PROXIES: dict[str, Callable[[Any], Any]] = {
    "storage": traced_storage,
    "vectors": traced_vectors,
    "embedder": traced_embedder,
}


def traced_port(kind: str, adapter: Any) -> Any:
    """``adapter`` behind a traced proxy when ``kind`` has one, else as it is."""
    make = PROXIES.get(kind)
    if adapter is None or make is None or isinstance(adapter, _TracedPort):
        return adapter
    return make(adapter)
