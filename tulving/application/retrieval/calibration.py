"""The calibrations of the hybrid score (``domain.strong_fusion.Calibration``), fitted.

- ``FAST``: without a strong tier. It reads the fused score over the query's best and the
  best fast (MiniLM) cosine of the head, not each candidate's cosine, so it is monotone in
  the fused score: the order is the hand-tuned fusion's, unchanged; only the numbers
  become probabilities (a query nothing answers scores low throughout).
- ``STRONG``: with the strong tier (all-mpnet-base-v2). Each candidate's strong cosine
  enters too, which re-orders the head.

Fitted by ``benchmarks/strong_tier.py calibrate`` (logistic regression, each question
weighing the same, on the tuning halves only; LoCoMo's category-5 questions, whose answer
is absent, count as questions whose every hit is irrelevant). The figures of both halves
are in docs/library/search.md.
"""

from __future__ import annotations

from tulving.domain.strong_fusion import Calibration

FAST = Calibration(relative=4.0, cosine=0.0, best=4.0, bias=-7.0)
STRONG = Calibration(relative=3.0, cosine=6.0, best=0.0, bias=-7.0)
