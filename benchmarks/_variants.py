"""Named ablation rows shared by the quality benchmarks (``--variant NAME``).

A variant is a change to how an opened ``Memory`` searches and curates (its
``SearchOptions`` and ``CurationOptions``); how the store is built (the ingest
representation) is chosen separately, since it needs its own store. ``configure`` swaps
the options into the Memory's own searcher and curator, so the measured calls are the
public ``search()`` and ``curate()`` on exactly the code path a user runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from tulving import Memory
from tulving.application.curation.options import CurationOptions
from tulving.application.retrieval.options import SearchOptions
from tulving.domain.passages import DEFAULT_CHOICE, PLAIN

Variant = tuple[SearchOptions | None, CurationOptions | None]


def _curation(**changes: Any) -> Callable[[], Variant]:
    return lambda: (None, attrs.evolve(CurationOptions(), **changes))


def _search(**changes: Any) -> Callable[[], Variant]:
    return lambda: (attrs.evolve(SearchOptions(), **changes), None)


VARIANTS: dict[str, Callable[[], Variant]] = {
    "default": lambda: (None, None),
    "no excerpts": _curation(excerpts=False),
    "curate session decay 0.9": _curation(session_decay=0.9),
    "curate session decay 0.7": _curation(session_decay=0.7),
    "curate session decay 0.5": _curation(session_decay=0.5),
    "curate duplicates at 0.7": _curation(duplicate_threshold=0.7),
    # passage choice of excerpts (issue 47), each idea switched off alone
    "excerpts plain": _curation(passages=PLAIN),
    "excerpts - opening discount": _curation(
        passages=attrs.evolve(DEFAULT_CHOICE, opening_weight=1.0)),
    "excerpts - preamble discount": _curation(
        passages=attrs.evolve(DEFAULT_CHOICE, preamble_weight=1.0)),
    "excerpts + focus words": _curation(passages=attrs.evolve(DEFAULT_CHOICE, focus_weight=2.0)),
    "excerpts - list items": _curation(passages=attrs.evolve(DEFAULT_CHOICE, lists=False)),
    "excerpts - two passages": _curation(passages=attrs.evolve(DEFAULT_CHOICE, spread=2.0)),
    "mmr 0.9": _search(mmr=0.9),
    "mmr 0.8": _search(mmr=0.8),
    "mmr 0.7": _search(mmr=0.7),
    "learned ranker": _search(ranker="learned"),
}
# each search idea switched off alone (SearchOptions.ablations: "- neighbours", ...)
VARIANTS.update({name: (lambda o=options: (o, None))
                 for name, options in SearchOptions.ablations().items()})


def configure(memory: Memory, name: str) -> None:
    """Give ``memory``'s searcher and curator the options of variant ``name``."""
    search, curation = VARIANTS[name]()
    memory.startup()
    if search is not None:
        memory._searcher.options = search
    if curation is not None:
        memory._curator.options = curation
