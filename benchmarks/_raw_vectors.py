"""The raw vector engine under a Memory's index, for the benchmarks' side-by-side figures.

``raw_knn(memory)`` returns ``knn(vector, k) -> ids``: the nearest ``k`` on the very graph
the Memory uses (hnswlib's ``knn_query``, or usearch's ``search`` on the memory-mapped
view or the graph in RAM) with the engine's labels mapped to ids the plain way (a dict
for hnswlib, the id array for usearch), at the search breadth the index is configured
with (at least k). No filter, no rescoring, no fusion: what a caller of the engine gets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tulving import Memory

Knn = Callable[[Any, int], list[str]]


def raw_knn(memory: Memory) -> Knn:
    index: Any = memory.ctx.vectors
    if index.name == "hnsw":
        graph = index._index
        ids_by_label = dict(index._ids_by_label)
        ef_search = index._ef_search

        def hnsw(vector: Any, k: int) -> list[str]:
            graph.set_ef(max(ef_search, k))
            labels, _ = graph.knn_query(vector, k=k)
            return [ids_by_label[int(label)] for label in labels[0]]

        return hnsw
    if index.name == "usearch":
        graph = index._view if index._view is not None else index._graph
        ef = index._ef
        if index._view is not None:
            names = index._view_ids

            def name(label: int) -> str:
                return bytes(names[label]).decode()
        else:
            by_label = dict(index._ids_by_label)
            name = by_label.__getitem__

        def usearch(vector: Any, k: int) -> list[str]:
            graph.expansion_search = max(ef, k)
            found = graph.search(np.asarray(vector, dtype=np.float32), k)
            return [name(int(label)) for label in found.keys]

        return usearch
    raise SystemExit(f"no raw engine known for the {index.name} index")


def engine_name(memory: Memory) -> str:
    return {"hnsw": "hnswlib", "usearch": "usearch"}.get(
        memory.ctx.vectors.name if memory.ctx.vectors else "", "?")
