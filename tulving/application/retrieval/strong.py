"""The strong tier: a stronger encoder's opinion of hybrid search's best candidates.

Why a second stage: the fast encoder (MiniLM) and full text find the candidates over the
whole store at write speed; a stronger encoder (all-mpnet-base-v2 by default) reads
meaning better (dense R@10 on LoCoMo's dev split 50.2 -> 61.7) but encodes ~6x slower,
so it only looks at the few dozen candidates the first stage returns: the cost grows
with the candidates, not with the store (DESIGN.md, "Relevance in two tiers").

Where its vectors come from, in order: the store (``ports.storage.StrongVectors``, written
by the background ``strong`` enrichment after each write), this process's memo of
vectors it computed for earlier queries, and the encoder itself for the ones still
missing among the best ``compute`` candidates (on demand: a store opened with the tier
for the first time answers well at once, at the cost of encoding those on the query's
time). Reads never write: what a query computed is kept in the memo, and the store gets
its vector from the background job.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tulving.ports.embedder import Embedder, Vectors
from tulving.ports.storage import Storage, StrongVectors

#: Vectors of candidates this process encoded on demand, kept for later queries (a
#: 768-float vector is 3 KB: 4,096 of them are 12 MB).
MEMO_SIZE = 4096
#: Query vectors kept (a query is encoded once for its search and its similarities).
QUERIES_KEPT = 16


def _text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class StrongTier:
    """The strong encoder over one store: cosines of a query with candidates' texts."""

    def __init__(self, encoder: Embedder, storage: Storage) -> None:
        self.encoder = encoder
        self.storage = storage
        self._lock = threading.Lock()
        self._memo: OrderedDict[bytes, Vectors] = OrderedDict()
        self._queries: OrderedDict[str, Vectors] = OrderedDict()
        #: candidates encoded on demand by this process (``stats`` and the benchmarks)
        self.computed = 0

    @property
    def model_id(self) -> str:
        return self.encoder.model_id

    @property
    def stores_vectors(self) -> bool:
        return isinstance(self.storage, StrongVectors)

    def query_vector(self, query: str) -> Vectors:
        with self._lock:
            found = self._queries.get(query)
        if found is None:
            found = np.asarray(self.encoder.embed_query(query), dtype=np.float32)
            with self._lock:
                self._queries[query] = found
                while len(self._queries) > QUERIES_KEPT:
                    self._queries.popitem(last=False)
        return found

    def vectors(self, texts: Mapping[str, str], compute: int) -> dict[str, Vectors]:
        """Strong vectors of the candidates ``texts`` (id -> content, best first): stored
        ones, memoised ones, then at most ``compute`` encoded now (the best first)."""
        ids = list(texts)
        found: dict[str, Vectors] = {}
        if self.stores_vectors and ids:
            found.update(self.storage.strong_vectors_for(  # type: ignore[attr-defined]
                self.model_id, ids))
        missing = [i for i in ids if i not in found]
        if not missing:
            return found
        keys = {i: _text_key(texts[i]) for i in missing}
        with self._lock:
            for entry_id in missing:
                memo = self._memo.get(keys[entry_id])
                if memo is not None:
                    self._memo.move_to_end(keys[entry_id])
                    found[entry_id] = memo
        wanted = [i for i in missing if i not in found][: max(0, compute)]
        if wanted:
            encoded = self.encoder.embed([texts[i] for i in wanted])
            self.computed += len(wanted)
            with self._lock:
                for entry_id, row in zip(wanted, encoded, strict=True):
                    vector = np.asarray(row, dtype=np.float32)
                    found[entry_id] = vector
                    self._memo[keys[entry_id]] = vector
                while len(self._memo) > MEMO_SIZE:
                    self._memo.popitem(last=False)
        return found

    def cosines(self, query: str, texts: Mapping[str, str], compute: int) -> dict[str, float]:
        """The cosine of the query's strong vector with each candidate's (candidates left
        without a vector are left out)."""
        vectors = self.vectors(texts, compute)
        if not vectors:
            return {}
        q = self.query_vector(query).astype(np.float64)
        order = [i for i in texts if i in vectors]
        matrix = np.stack([vectors[i] for i in order]).astype(np.float64)
        return dict(zip(order, (matrix @ q).tolist(), strict=True))

    def encode_for_store(self, items: Sequence[tuple[str, str]]) -> list[tuple[str, Any]]:
        """(entry id, strong vector) for (entry id, content) pairs: the background job's
        work, outside every lock; the memo answers contents a query already encoded."""
        texts = dict(items)
        vectors = self.vectors(texts, compute=len(texts)) if not self.stores_vectors else \
            self._encode_all(texts)
        return [(i, vectors[i]) for i in texts if i in vectors]

    def _encode_all(self, texts: Mapping[str, str]) -> dict[str, Vectors]:
        keys = {i: _text_key(t) for i, t in texts.items()}
        found: dict[str, Vectors] = {}
        with self._lock:
            for entry_id, key in keys.items():
                memo = self._memo.get(key)
                if memo is not None:
                    found[entry_id] = memo
        wanted = [i for i in texts if i not in found]
        if wanted:
            encoded = self.encoder.embed([texts[i] for i in wanted])
            for entry_id, row in zip(wanted, encoded, strict=True):
                found[entry_id] = np.asarray(row, dtype=np.float32)
        return found
