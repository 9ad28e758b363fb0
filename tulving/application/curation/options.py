"""The knobs of query-mode curation, with the reason each default was kept.

Each is an ablation row of ``benchmarks/longmemeval.py`` and ``benchmarks/curate_locomo.py``
(``--variant``): measured on both halves of both dev sets.
"""

from __future__ import annotations

import attrs

from tulving.domain.packing import DEFAULT_EXCERPT_SHARE
from tulving.domain.passages import DEFAULT_CHOICE, PassageChoice
from tulving.domain.similarity import DEFAULT_THRESHOLD


@attrs.frozen
class CurationOptions:
    """Knobs of ``curate()`` in query mode.

    - ``excerpts``: a long memory (its line over ``excerpt_share`` of the budget) is shown
      as the passage that bears on the query (``excerpt_chars`` characters at most, after
      the memory's first words), marked with its id, instead of whole or truncated
      (`tulving.domain.passages`), chosen as ``passages`` says (the item a
      question asks for, not the opening that restates its topic).
    - ``session_decay``: each candidate's score is multiplied by this for every better
      candidate of the same event time (session) before packing
      (`tulving.domain.ranking.spread_events`); 1.0 leaves the order alone.
    - ``duplicate_threshold``: word-set Jaccard from which a memory is a near-duplicate
      of one already shown and is left out.
    """

    excerpts: bool = True
    session_decay: float = 1.0
    duplicate_threshold: float = DEFAULT_THRESHOLD
    excerpt_share: float = DEFAULT_EXCERPT_SHARE
    excerpt_chars: int = 400
    passages: PassageChoice = DEFAULT_CHOICE
