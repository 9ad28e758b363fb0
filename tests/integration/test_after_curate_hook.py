"""``tulving_after_curate``: plugins post-process a curated block in pluggy's order (the
last registered first, ``tryfirst``/``trylast`` as marked), each on the previous one's
result, and a replacement over the budget is dropped (the budget is the promise of
curate())."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tulving.application.plumbing.warnings_once import TulvingWarning, reset_warnings
from tulving.plugins import registry
from tulving.plugins.hooks import CurateContext
from tulving.plugins.hookspecs import hookimpl


class Footer:
    def __init__(self) -> None:
        self.contexts: list[CurateContext] = []

    @hookimpl
    def tulving_after_curate(self, content: str, context: CurateContext) -> str:
        self.contexts.append(context)
        return content + "\n(memory as of today)"


class Shout:
    @hookimpl
    def tulving_after_curate(self, content: str, context: CurateContext) -> str:
        return content.upper()


class Flood:
    @hookimpl
    def tulving_after_curate(self, content: str, context: CurateContext) -> str:
        return content + " filler" * 5000


@pytest.fixture
def plugins() -> Iterator[Callable[..., None]]:
    registry.reset()
    reset_warnings()

    def register(*items: object) -> None:
        pm, _ = registry.get_manager()
        for i, item in enumerate(items):
            pm.register(item, name=f"after-curate-{i}")

    yield register
    registry.reset()


class LateShout:
    @hookimpl(trylast=True)
    def tulving_after_curate(self, content: str, context: CurateContext) -> str:
        return content.upper()


def test_hooks_run_in_pluggys_order_and_see_the_request(
    make_memory: Callable[..., Any], plugins: Callable[..., None]
) -> None:
    footer = Footer()
    plugins(Shout(), footer)  # pluggy calls the last registered first
    memory = make_memory()
    memory.store("We deploy with blue-green releases", type="DECISION", key="deploy")
    block = memory.curate("how do we deploy?", token_budget=200)
    # The footer ran first, then the upper-casing saw it: the other order would leave
    # the footer in lower case.
    assert block.content.endswith("(MEMORY AS OF TODAY)")
    assert "BLUE-GREEN" in block.content
    assert block.token_count == memory.count_tokens(block.content) <= 200
    assert footer.contexts[0].query == "how do we deploy?"
    assert footer.contexts[0].mode == "query" and footer.contexts[0].token_budget == 200
    assert memory.curate(token_budget=200, mode="orient").content.endswith(
        "(MEMORY AS OF TODAY)")


def test_trylast_runs_after_a_hook_registered_before_it(
    make_memory: Callable[..., Any], plugins: Callable[..., None]
) -> None:
    plugins(Footer(), LateShout())  # registered last, called last: trylast
    memory = make_memory()
    memory.store("We deploy with blue-green releases", type="DECISION", key="deploy")
    assert memory.curate("how do we deploy?", token_budget=200).content.endswith(
        "(MEMORY AS OF TODAY)")


def test_a_replacement_over_the_budget_is_dropped_with_a_warning(
    make_memory: Callable[..., Any], plugins: Callable[..., None]
) -> None:
    plugins(Footer(), Flood())  # the flood is called first, the footer after it
    memory = make_memory()
    memory.store("We deploy with blue-green releases", type="DECISION", key="deploy")
    with pytest.warns(TulvingWarning, match="after-curate-1"):
        block = memory.curate("how do we deploy?", token_budget=200)
    assert "filler" not in block.content
    assert block.content.endswith("(memory as of today)")  # the next hook still ran
    assert block.token_count <= 200
