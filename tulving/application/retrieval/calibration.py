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

#: fitted on LoCoMo's tuning half (495 questions, 3 conversations)
FAST = Calibration(relative=6.339, cosine=0.0, best=0.244, bias=-7.414)
#: fitted on the same questions, with all-mpnet-base-v2's cosines
STRONG = Calibration(relative=4.861, cosine=7.412, best=-5.257, bias=-6.749)
