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
