"""The knobs of query-mode curation, with the reason each default was kept.

Each is an ablation row of ``benchmarks/longmemeval.py`` and ``benchmarks/curate_locomo.py``
(``--variant``): measured on both halves of both dev sets.
"""

from __future__ import annotations

import attrs

from tulving.domain.packing import DEFAULT_EXCERPT_SHARE


@attrs.frozen
class CurationOptions:
    """Knobs of ``curate()`` in query mode.

    - ``excerpts``: a long memory (its line over ``excerpt_share`` of the budget) is shown
      as the passage that bears on the query (``excerpt_chars`` characters at most, after
      the memory's first words), marked with its id, instead of whole or truncated
      (:mod:`tulving.domain.passages`).
    """

    excerpts: bool = True
    excerpt_share: float = DEFAULT_EXCERPT_SHARE
    excerpt_chars: int = 400
