"""Running the ``tulving_after_curate`` hook chain over a curated block.

A plugin may rewrite the block (a house style, a disclaimer, a translation of headings);
it may not break the promise of ``curate()``: the budget. Each replacement is counted
with the Memory's tokenizer and one that does not fit is dropped, said once per plugin,
and the chain goes on from the block as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from tulving.application.plumbing.warnings_once import warn_once
from tulving.domain.curated import CuratedContext
from tulving.domain.errors import TulvingError
from tulving.plugins.hooks import CurateContext


def apply_after_curate(
    hook_relay: Any, result: CuratedContext, context: CurateContext,
    count: Callable[[str], int],
) -> CuratedContext:
    if hook_relay is None:
        return result
    impls = hook_relay.tulving_after_curate.get_hookimpls()
    content, cost = result.content, result.token_count
    for impl in impls:  # registration order (pluggy 1.x lists them so)
        replaced = impl.function(content=content, context=context)
        if replaced is None:
            continue
        if not isinstance(replaced, str):
            raise TulvingError(f"curate hook {impl.plugin_name} returned "
                               f"{type(replaced).__name__}, expected a str or None")
        replaced_cost = count(replaced) if replaced else 0
        if replaced_cost > context.token_budget:
            warn_once(f"after-curate-over-budget:{impl.plugin_name}",
                      f"curate hook {impl.plugin_name} returned {replaced_cost} tokens for a "
                      f"budget of {context.token_budget}: its change was dropped")
            continue
        content, cost = replaced, replaced_cost
    if content == result.content:
        return result
    return attrs.evolve(result, content=content, token_count=cost)
