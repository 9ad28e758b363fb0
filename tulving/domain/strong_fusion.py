"""The hybrid score as a probability: the head of the fused list re-scored (pure).

The first stage's fused score is relative to the query (each engine's list is scaled
over its own hits, so the best hit scores high whatever it says); a cosine is absolute
(it depends on the two texts only). The best ``depth`` fused candidates are scored by

    p = sigmoid(relative * fused / best fused + cosine * c + best * max c + bias)

where ``c`` is the candidate's cosine with the query (the strong tier's encoder when
there is one, else the fast one's) and ``max c`` the best cosine in the head (how well
the query is matched at all: a question nothing stored answers has a low one). ``p`` is
the score and the order of the head; the candidates past the head keep their order
below it, each scoring at most the one before it. Why a blend and not the cosine alone:
the first stage carries what an encoder cannot see (exact names and rare words through
bm25, the event-time context and neighbours of the best hits); why a logistic map: it is
the blend whose output is a probability of relevance, so one ``min_score`` means the
same for every query. The coefficients were fitted on the tuning halves only
(``benchmarks/strong_tier.py calibrate``; docs/library/search.md has the figures).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import attrs

from tulving.domain.query import ScoredId


@attrs.frozen
class Calibration:
    """The logistic map of one encoder's cosines (and the fused score) to a probability."""

    relative: float
    cosine: float
    best: float
    bias: float

    def probability(self, relative: float, cosine: float, best: float) -> float:
        z = self.relative * relative + self.cosine * cosine + self.best * best + self.bias
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))


def calibrated(fused: Sequence[ScoredId], cosines: Mapping[str, float],
               calibration: Calibration, depth: int) -> list[ScoredId]:
    """The fused list re-scored: the head (best ``depth``) by ``calibration`` and in that
    order, the rest after it in its own order, never above the hit before it. A head hit
    without a cosine is scored with the head's lowest one."""
    if not fused or depth <= 0:
        return list(fused)
    head, tail = list(fused[:depth]), list(fused[depth:])
    top = max(h.score for h in head)
    top = top if top > 0 else 1.0
    known = [cosines[h.id] for h in head if h.id in cosines]
    floor = min(known, default=0.0)
    best = max(known, default=0.0)
    scored = [ScoredId(h.id, calibration.probability(h.score / top, cosines.get(h.id, floor),
                                                     best)) for h in head]
    scored.sort(key=lambda h: (-h.score, h.id))
    out = list(scored)
    ceiling = scored[-1].score
    for hit in tail:
        value = min(ceiling, calibration.probability(hit.score / top, floor, best))
        out.append(ScoredId(hit.id, value))
        ceiling = value
    return out
