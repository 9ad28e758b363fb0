"""The store's ``index`` configuration: which texts of a value are searched, and whose
embeddings score them.

LangGraph's stores select an item's texts with the index paths (the store's ``fields``,
``["$"]`` by default: the whole value as JSON; or ``put(..., index=[...])`` for one item),
embed each text on its own and score a query search by the best cosine of the query's
vector and the item's vectors (max pooling: ``InMemoryStore``, ``SqliteStore`` and
``PostgresStore`` alike). With an ``embed`` in the configuration this store does exactly
that: the vectors are kept with the item (normalised float32, base64, in the entry's
metadata) and a query search ranks the items under the prefix by that score. Tulving's
own model still embeds the entry's content, so every other door searches it as usual.
Without ``embed``, Tulving's model and hybrid ranking answer (see ``base``).

Embedding happens before anything is written: an embedding that fails, or vectors of the
wrong shape, raise and leave the store as it was.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings
from langgraph.store.base import Op, PutOp, SearchOp, ensure_embeddings, get_text_at_path
from langgraph.store.base import tokenize_path as _tokenize

from tulving import ValidationError

from . import values

#: The keys of LangGraph's ``IndexConfig``.
INDEX_KEYS = frozenset({"dims", "embed", "fields"})
Vectors = npt.NDArray[np.float32]
Address = tuple[tuple[str, ...], str]
Path = tuple[str, str | list[str]]


@dataclass(frozen=True)
class Embedded:
    """What one batch's embeddings gave: the vectors of each put (by address; absent when
    the put has no text or no ``embed`` is configured) and of each query."""

    puts: dict[Address, Vectors] = field(default_factory=dict)
    queries: dict[str, Vectors] = field(default_factory=dict)


class IndexSettings:
    """The parsed ``index``: its paths, the user's embeddings (or None) and ``dims``."""

    def __init__(self, index: Mapping[str, Any] | None) -> None:
        config = dict(index or {})
        unknown = set(config) - INDEX_KEYS
        if unknown:
            raise TypeError(f"Unknown index settings: {', '.join(sorted(unknown))} "
                            f"(LangGraph's IndexConfig has {', '.join(sorted(INDEX_KEYS))})")
        fields = config.get("fields") or ["$"]
        if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
            raise TypeError("index fields must be a list of paths, e.g. ['text', 'tags[*]']")
        dims = config.get("dims")
        if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int)
                                 or dims <= 0):
            raise ValidationError(f"index dims must be a positive integer, got {dims!r}")
        embed = config.get("embed")
        self.config: dict[str, Any] = config
        self.fields: list[str] = list(fields)
        self.paths: list[Path] = [_path(f) for f in self.fields]
        self.embeddings: Embeddings | None = (ensure_embeddings(embed) if embed is not None
                                              else None)
        self.dims: int | None = dims if self.embeddings is not None else None

    # which texts ------------------------------------------------------------------------
    def texts(self, value: Mapping[str, Any], index: Literal[False] | list[str] | None
              ) -> list[str]:
        """The texts of ``value`` the paths select (``put``'s ``index`` overrides the
        store's fields; False: none), each a vector of its own."""
        if index is False:
            return []
        paths = self.paths if index is None else [_path(p) for p in index]
        texts: list[str] = []
        for path, tokens in paths:
            if path == "$":                        # the whole value, whatever it holds
                texts.append(values.text_of(value))
                continue
            try:
                found = get_text_at_path(value, tokens)
            except (TypeError, ValueError):        # a part that is not JSON (bytes, ...)
                found = []
            texts.extend(t for t in found if t and t.strip())
        return texts

    # embedding --------------------------------------------------------------------------
    def embed(self, ops: Sequence[Op]) -> Embedded:
        """The batch's vectors, with the embeddings' synchronous calls."""
        if self.embeddings is None:
            return Embedded()
        puts, texts = self._put_texts(ops)
        queries = _queries(ops)
        vectors = self.embeddings.embed_documents(texts) if texts else []
        asked = [self.embeddings.embed_query(q) for q in queries]
        return self._embedded(puts, texts, vectors, queries, asked)

    async def aembed(self, ops: Sequence[Op]) -> Embedded:
        """The batch's vectors, with the embeddings' asynchronous calls (an async-only
        ``embed`` function works here)."""
        if self.embeddings is None:
            return Embedded()
        puts, texts = self._put_texts(ops)
        queries = _queries(ops)
        vectors = await self.embeddings.aembed_documents(texts) if texts else []
        asked = [await self.embeddings.aembed_query(q) for q in queries]
        return self._embedded(puts, texts, vectors, queries, asked)

    def _put_texts(self, ops: Sequence[Op]) -> tuple[list[tuple[Address, int]], list[str]]:
        """Each put that wins its address (the last one) with how many texts it has, and
        all those texts in order."""
        winners: dict[Address, PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                winners[(tuple(op.namespace), op.key)] = op
        counts: list[tuple[Address, int]] = []
        texts: list[str] = []
        for address, op in winners.items():
            if isinstance(op.value, Mapping):
                found = self.texts(op.value, op.index)
                counts.append((address, len(found)))
                texts.extend(found)
        return counts, texts

    def _embedded(self, puts: list[tuple[Address, int]], texts: list[str],
                  vectors: Sequence[Sequence[float]], queries: list[str],
                  asked: Sequence[Sequence[float]]) -> Embedded:
        if len(vectors) != len(texts):
            raise ValidationError(f"the index's embed returned {len(vectors)} vectors "
                                  f"for {len(texts)} texts")
        matrix = self._matrix(vectors) if texts else np.zeros((0, 0), np.float32)
        done = Embedded()
        start = 0
        for address, count in puts:
            if count:
                done.puts[address] = matrix[start:start + count]
            start += count
        for query, vector in zip(queries, asked, strict=True):
            done.queries[query] = self._matrix([vector])[0]
        return done

    def _matrix(self, vectors: Iterable[Sequence[float]]) -> Vectors:
        try:
            matrix = np.asarray(list(vectors), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"the index's embed returned vectors that are not "
                                  f"lists of numbers of one length: {exc}") from None
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise ValidationError("the index's embed must return one non-empty list of "
                                  "numbers per text")
        if self.dims is not None and matrix.shape[1] != self.dims:
            raise ValidationError(f"the index's embed returned {matrix.shape[1]}-dimensional"
                                  f" vectors; the index says dims={self.dims}")
        if not np.isfinite(matrix).all():
            raise ValidationError("the index's embed returned a vector with NaN or infinity")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def encode(vectors: Vectors) -> dict[str, Any]:
    """Vectors as an item keeps them in its metadata."""
    return {"dims": int(vectors.shape[1]), "count": int(vectors.shape[0]),
            "data": base64.b64encode(vectors.astype("<f4").tobytes()).decode("ascii")}


def score(query: Vectors, kept: Mapping[str, Any] | None) -> float | None:
    """The best cosine of the query's vector and an item's vectors; None when the item
    has none of that dimension (indexed before ``embed`` was configured, or by another
    model): it fills a page after the scored items, as unembedded items do in LangGraph."""
    if not isinstance(kept, Mapping) or int(kept.get("dims", 0)) != query.shape[0]:
        return None
    raw = base64.b64decode(str(kept["data"]))
    matrix = np.frombuffer(raw, dtype="<f4").reshape(int(kept["count"]), query.shape[0])
    return float(np.max(matrix @ query))


def _path(path: str) -> Path:
    return (path, path) if path == "$" else (path, _tokenize(path))


def _queries(ops: Sequence[Op]) -> list[str]:
    return sorted({op.query for op in ops if isinstance(op, SearchOp) and op.query})
