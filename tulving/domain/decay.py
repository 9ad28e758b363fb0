"""Lazy decay: importance is computed on read, never rewritten by a background pass.

``base * 0.5 ** (hours_since_last_access / half_life[type])``. DECISION and pinned
entries never decay (ADR-006), so an old architectural decision keeps its weight.
"""

from __future__ import annotations

from datetime import datetime

from tulving.domain.types import MemoryType


def decayed_importance(
    base: float,
    memory_type: MemoryType,
    last_access: datetime,
    now: datetime,
    *,
    pinned: bool = False,
) -> float:
    if pinned or not memory_type.decays:
        return base
    hours = max(0.0, (now - last_access).total_seconds() / 3600.0)
    return float(base * 0.5 ** (hours / memory_type.half_life_hours))
