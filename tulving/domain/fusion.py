"""Fusion of the engines' candidate lists: reciprocal rank fusion and score fusion.

RRF (Cormack et al., 2009) fuses ranked lists by ``sum(w / (k + rank))``: it needs no
score calibration between engines whose scores live on different scales (bm25 vs
cosine), and one list's outlier score cannot swamp the other. Fused scores are scaled to
[0, 1] by the best possible fused score, so ``min_score`` means the same in every mode.
"""

from __future__ import annotations

from collections.abc import Sequence

from tulving.domain.query import ScoredId

RRF_K = 60
#: Weight of a hit's place in its whole list next to its place in the scaled span
#: (:func:`blend`): orders the hits below the span, and breaks exact ties above it.
TAIL_ORDER = 1e-9


def rrf(
    lists: Sequence[Sequence[ScoredId]],
    weights: Sequence[float] | None = None,
    k: int = RRF_K,
) -> list[ScoredId]:
    weights = list(weights or [1.0] * len(lists))
    fused: dict[str, float] = {}
    for weight, ranked in zip(weights, lists, strict=True):
        for rank, hit in enumerate(ranked, start=1):
            fused[hit.id] = fused.get(hit.id, 0.0) + weight / (k + rank)
    best = sum(w / (k + 1) for w in weights) or 1.0
    out = [ScoredId(i, s / best) for i, s in fused.items()]
    out.sort(key=lambda h: (-h.score, h.id))
    return out


def normalise(hits: Sequence[ScoredId]) -> list[ScoredId]:
    """Scale scores into [0, 1] by the best one (single-engine modes)."""
    if not hits:
        return []
    top = max(h.score for h in hits)
    if top <= 0:
        return [ScoredId(h.id, 0.0) for h in hits]
    return [ScoredId(h.id, max(0.0, h.score / top)) for h in hits]


def blend(
    lists: Sequence[Sequence[ScoredId]],
    weights: Sequence[float] | None = None,
    depth: int | None = None,
) -> list[ScoredId]:
    """Score fusion: each list min-max scaled to [0, 1] within itself, then a weighted sum.

    Unlike RRF it keeps how *much* better the best hit is than the rest (a bm25 score far
    above the others is a strong signal that rank alone flattens). An id missing from a
    list gets 0 from it. Scaled by the total weight, so the best possible score is 1.

    ``depth`` fixes the span each list is scaled over: its first ``depth`` hits. Without
    it the span is the whole list, so how deep the engines were asked to go would change
    the order at the top: the lowest score of a deeper list is lower, which shrinks every
    difference above it, and not by the same factor for bm25 as for cosine. On LoCoMo,
    asking for 200 results instead of 50 cost the first five 1.8 points of recall that way
    (R@5 68.1 -> 66.3). Hits below the span score 0 from their list, plus a
    ``TAIL_ORDER``-sized share of their place in the whole list: enough to keep the tail
    in the engines' order, too little to reorder hits the span tells apart (it can only
    break an exact tie, which a deeper list may then break differently).
    """
    weights = list(weights or [1.0] * len(lists))
    fused: dict[str, float] = {}
    for weight, ranked in zip(weights, lists, strict=True):
        if not ranked:
            continue
        top = max(h.score for h in ranked)
        floor = min(h.score for h in ranked)
        head = ranked[:depth] if depth else ranked
        low = min(h.score for h in head)
        span, whole = max(h.score for h in head) - low, top - floor
        for hit in ranked:
            if span > 0:
                part = max(0.0, (hit.score - low) / span)
            else:
                part = 1.0 if hit.score >= low else 0.0
            place = (hit.score - floor) / whole if whole > 0 else 1.0
            part = (1.0 - TAIL_ORDER) * part + TAIL_ORDER * place
            fused[hit.id] = fused.get(hit.id, 0.0) + weight * part
    total = sum(weights) or 1.0
    out = [ScoredId(i, s / total) for i, s in fused.items()]
    out.sort(key=lambda h: (-h.score, h.id))
    return out
