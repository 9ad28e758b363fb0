"""How the strong tier's cosines re-order hybrid search's best candidates (pure).

The first stage's fused score is relative to the query (each engine's list is scaled
over its own hits), the strong encoder's cosine is absolute (it depends on the two
texts only). The head of the fused list, the best ``depth``, is re-ordered by

    combined = (1 - weight) * fused / best fused + weight * strong cosine

and the rest keeps its order below the head (a candidate the strong encoder did not read
never jumps over one it did). Why a blend and not the cosine alone: the first stage
carries what the encoder cannot see (exact names and rare words through bm25, the
event-time context and neighbours of the best hits); why the absolute cosine and not a
rescaled one: a head whose cosines are all low (nothing stored answers) must not be
stretched to look like one that matches. The weight and depth were chosen on the tuning
halves (``benchmarks/strong_tier.py``; docs/library/search.md has the figures).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tulving.domain.query import ScoredId


def rescored(fused: Sequence[ScoredId], cosines: Mapping[str, float], weight: float,
             depth: int) -> list[tuple[ScoredId, float | None]]:
    """The fused list re-ordered: the head by the blend (as each hit's score), the rest
    after it in its order, each paired with its strong cosine (None past the head or
    without a vector; such a head hit is blended with the head's lowest cosine)."""
    if not fused or depth <= 0 or not cosines:
        return [(hit, cosines.get(hit.id)) for hit in fused]
    head, tail = list(fused[:depth]), list(fused[depth:])
    best = max(h.score for h in head) or 1.0
    floor = min((cosines[h.id] for h in head if h.id in cosines), default=0.0)
    blended = []
    for hit in head:
        cosine = cosines.get(hit.id)
        value = (1.0 - weight) * hit.score / best + weight * (
            cosine if cosine is not None else floor)
        blended.append((ScoredId(hit.id, value), cosine))
    blended.sort(key=lambda pair: (-pair[0].score, pair[0].id))
    return blended + [(hit, None) for hit in tail]
