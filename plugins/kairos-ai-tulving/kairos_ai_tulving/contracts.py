"""Output contracts of the memory steps (Kairos ``Schema``), so the executor checks them.

Field names avoid Kairos' sensitive-key patterns: ``final_state`` redacts any key that
contains ``token`` or ``auth`` (``token_count`` would come out as ``[REDACTED]``), hence
``used`` and ``budget``.
"""

from __future__ import annotations

from typing import Any

from kairos import Schema

from kairos_ai_tulving.binding import DEFAULT
from kairos_ai_tulving.validators import fits_budget

_CONTEXT_FIELDS: dict[str, Any] = {
    "context": str,          # the prompt-ready block
    "used": int,             # its size in tokens (re-counted by the contract)
    "budget": int,
    "ids": list[str],        # the memories it holds
    "omitted": int,          # relevant memories left out
    "mode": str,             # "query" or "orient"
    "degraded": str | None,  # None, or the error class when the memory failed
}

REMEMBER_OUTPUT = Schema({
    "id": str | None,
    "key": str | None,
    "type": str | None,
    "superseded": str | None,   # the id of the entry this one replaced
    "degraded": str | None,
})


def context_output(budget: int, memory: Any = None, binding: str = DEFAULT) -> Schema:
    """The contract of a ``recall``/``orient`` step with this budget: the shape, and
    ``context`` re-counted against ``budget`` by :func:`fits_budget`."""
    return Schema(dict(_CONTEXT_FIELDS),
                  validators={"context": [fits_budget(budget, memory=memory, binding=binding)]})
