"""Dividing a token budget among sections that need different amounts (water-filling).

Why not fixed shares: a briefing's sections differ from store to store (a store of
preferences and chat turns has no decisions or plans), and a share held for an empty
section is budget nobody uses, while the one section that has something to say is cut
short. So each section gets a share in proportion to its weight, but never more than it
asks for (its demand: what showing all of it would cost); what a section does not need is
divided among the others, again by weight, until every section has its demand or the
budget is spent. A section with weight 0 gets only what is left when every weighted
section is satisfied.
"""

from __future__ import annotations

from collections.abc import Mapping

from tulving.domain.errors import ValidationError


def allocate(budget: int, demands: Mapping[str, int],
             weights: Mapping[str, float]) -> dict[str, int]:
    """Tokens for each section of ``demands`` (integers that sum to at most ``budget``).

    Sections with no demand get 0; sections of weight 0 share, in the order given, what
    the weighted ones leave. Deterministic: the same input gives the same split.
    """
    if budget < 0:
        raise ValidationError(f"budget must be >= 0, got {budget}")
    out = {name: 0 for name in demands}
    left = budget
    open_ = [n for n, d in demands.items() if d > 0 and weights.get(n, 0.0) > 0]
    while open_ and left > 0:
        total = sum(weights[n] for n in open_)
        shares = {n: left * weights[n] / total for n in open_}
        satisfied = [n for n in open_ if demands[n] - out[n] <= shares[n] + 1e-9]
        if not satisfied:
            for n in open_:
                out[n] += int(shares[n])
            left = budget - sum(out.values())
            # the tokens rounding left over, one each, heaviest section first
            for n in sorted(open_, key=lambda name: -weights[name]):
                if left <= 0:
                    break
                if out[n] < demands[n]:
                    out[n] += 1
                    left -= 1
            break
        for n in satisfied:
            left -= demands[n] - out[n]
            out[n] = demands[n]
        open_ = [n for n in open_ if n not in satisfied]
    left_over = budget - sum(out.values())
    for name, demand in demands.items():  # the unweighted, in order, with what is left
        if left_over <= 0:
            break
        if weights.get(name, 0.0) > 0 or demand <= 0:
            continue
        given = min(demand, left_over)
        out[name] = given
        left_over -= given
    return out
