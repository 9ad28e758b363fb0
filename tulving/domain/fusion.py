"""Reciprocal rank fusion of candidate lists.

RRF (Cormack et al., 2009) fuses ranked lists by ``sum(w / (k + rank))``: it needs no
score calibration between engines whose scores live on different scales (bm25 vs
cosine), and one list's outlier score cannot swamp the other. Fused scores are scaled to
[0, 1] by the best possible fused score, so ``min_score`` means the same in every mode.
"""

from __future__ import annotations

from collections.abc import Sequence

from tulving.domain.query import ScoredId

RRF_K = 60


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
) -> list[ScoredId]:
    """Score fusion: each list min-max scaled to [0, 1] within itself, then a weighted sum.

    Unlike RRF it keeps how *much* better the best hit is than the rest (a bm25 score far
    above the others is a strong signal that rank alone flattens). An id missing from a
    list gets 0 from it. Scaled by the total weight, so the best possible score is 1.
    """
    weights = list(weights or [1.0] * len(lists))
    fused: dict[str, float] = {}
    for weight, ranked in zip(weights, lists, strict=True):
        if not ranked:
            continue
        top = max(h.score for h in ranked)
        low = min(h.score for h in ranked)
        span = top - low
        for hit in ranked:
            part = (hit.score - low) / span if span > 0 else 1.0
            fused[hit.id] = fused.get(hit.id, 0.0) + weight * part
    total = sum(weights) or 1.0
    out = [ScoredId(i, s / total) for i, s in fused.items()]
    out.sort(key=lambda h: (-h.score, h.id))
    return out
