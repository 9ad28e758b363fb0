"""Running the ``tulving_after_curate`` hook chain over a curated block.

Implementations run in pluggy's call order (``tryfirst``, then the last registered first,
then ``trylast``), each on the previous one's result (:mod:`tulving.plugins.chain`). A
plugin may rewrite the block (a house style, a disclaimer, a translation of headings);
it may not break the promise of ``curate()``: the budget. Each replacement is counted
with the Memory's tokenizer and one that does not fit is dropped, said once per plugin,
and the chain goes on from the block as it was.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from tulving.application.plumbing.warnings_once import warn_once
from tulving.domain.curated import CuratedContext
from tulving.domain.errors import TulvingError
from tulving.plugins.chain import PluginHooks
from tulving.plugins.hooks import CurateContext


def apply_after_curate(
    hooks: PluginHooks | None, result: CuratedContext, context: CurateContext,
    count: Callable[[str], int],
) -> CuratedContext:
    if hooks is None:
        return result
    content, cost = result.content, result.token_count
    for step in hooks.after_curate.steps():  # pluggy's call order (plugins.chain)
        replaced = step(content=content, context=context)
        if replaced is None:
            continue
        if not isinstance(replaced, str):
            raise TulvingError(f"curate hook {step.plugin_name} returned "
                               f"{type(replaced).__name__}, expected a str or None")
        replaced_cost = count(replaced) if replaced else 0
        if replaced_cost > context.token_budget:
            warn_once(f"after-curate-over-budget:{step.plugin_name}",
                      f"curate hook {step.plugin_name} returned {replaced_cost} tokens for a "
                      f"budget of {context.token_budget}: its change was dropped")
            continue
        content, cost = replaced, replaced_cost
    if content == result.content:
        return result
    return attrs.evolve(result, content=content, token_count=cost)
