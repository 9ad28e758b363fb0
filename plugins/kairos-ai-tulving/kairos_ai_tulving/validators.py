"""``fits_budget``: a Kairos field validator that re-counts a curated context.

``recall`` and ``orient`` report how many tokens their context used, but a contract
should not take a step's word for it: the validator counts the text again with the
memory's own tokenizer (``Memory.count_tokens``, the one ``curate`` packs with) and fails
the step's output contract when the text is over budget. Use it in any contract::

    Schema({"context": str}, validators={"context": [fits_budget(1500, memory=memory)]})

When the memory cannot count (closed, say), the UTF-8 byte length stands in: a byte-level
BPE token covers at least one byte, so a text of at most ``budget`` bytes fits for
certain; a longer one is refused rather than guessed at.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kairos import sanitize_exception
from kairos.plugins import validator_plugin

from kairos_ai_tulving.binding import DEFAULT, bound, check_memory, check_name
from kairos_ai_tulving.errors import PluginConfigError

MAX_BUDGET = 1_000_000


def check_budget(budget: object) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int) or not 0 <= budget <= MAX_BUDGET:
        raise PluginConfigError(f"budget must be an integer in 0..{MAX_BUDGET}")
    return budget


@validator_plugin(name="fits_budget", description="A curated context fits its token budget.")
def fits_budget(budget: int, *, memory: Any = None,
                binding: str = DEFAULT) -> Callable[[Any], bool | str]:
    """A field validator: ``True`` when the text fits ``budget`` tokens, else a message.
    ``memory`` counts; without one, the memory bound as ``binding`` counts."""
    check_budget(budget)
    if memory is not None:
        check_memory(memory)
    check_name(binding)

    def validate(value: Any) -> bool | str:
        if not isinstance(value, str):
            return f"expected the curated context as a string, got {type(value).__name__}"
        if not value:
            return True
        try:
            used = (memory if memory is not None else bound(binding)).count_tokens(value)
        except Exception as exc:  # a closed or missing memory: fall back to bytes
            size = len(value.encode("utf-8"))
            if size <= budget:
                return True
            kind, _ = sanitize_exception(exc)
            return (f"cannot count tokens ({kind}) and the context is {size} bytes, more "
                    f"than its budget of {budget} tokens")
        if used > budget:
            return f"curated context is {used} tokens, over its budget of {budget}"
        return True

    return validate
