"""Every hook accepts an implementation that takes a subset of its arguments (pluggy's
rule, which lets a spec grow): each one below declares fewer arguments than its spec and
runs through a real Memory. A new hook without a case here fails the coverage test."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from tulving import Memory
from tulving.domain.entry import MemoryEntry
from tulving.plugins import hookspecs, registry
from tulving.plugins.hookspecs import hookimpl


class AdaptersWithoutArguments:
    """``tulving_register_adapters()``: a plugin that only wants to know it was loaded."""

    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def tulving_register_adapters(self) -> None:
        self.calls += 1


class WriteWithEntryOnly:
    """``tulving_before_write(entry)``: no context."""

    @hookimpl
    def tulving_before_write(self, entry: MemoryEntry) -> MemoryEntry:
        return attrs.evolve(entry, tags=(*entry.tags, "seen-by-subset"))


class CurateWithContentOnly:
    """``tulving_after_curate(content)``: no context."""

    @hookimpl
    def tulving_after_curate(self, content: str) -> str:
        return content + "\n(checked)"


def _runs_register_adapters(tmp_path: Path) -> None:
    plugin = AdaptersWithoutArguments()
    pm, _ = registry.get_manager()
    pm.register(plugin, name="subset")
    filled = registry.collect_adapters(pm)  # what build_manager does after loading
    assert plugin.calls == 1
    assert "sqlite" in filled.names("storage")  # and the others still registered


def _runs_before_write(tmp_path: Path) -> None:
    pm, _ = registry.get_manager()
    pm.register(WriteWithEntryOnly(), name="subset")
    with Memory(tmp_path / "w.db", agent_id="a", embedder="hashing") as memory:
        entry = memory.store("We deploy with blue-green releases", type="DECISION")
        batch = memory.store_many([{"content": "Staging is eu-west", "type": "FACT"}])
    assert "seen-by-subset" in entry.tags
    assert "seen-by-subset" in batch[0].tags


def _runs_after_curate(tmp_path: Path) -> None:
    pm, _ = registry.get_manager()
    pm.register(CurateWithContentOnly(), name="subset")
    with Memory(tmp_path / "c.db", agent_id="a", embedder="hashing") as memory:
        memory.store("We deploy with blue-green releases", type="DECISION")
        block = memory.curate("how do we deploy?", token_budget=300)
    assert block.content.endswith("(checked)")


CASES: dict[str, Callable[[Path], None]] = {
    "tulving_register_adapters": _runs_register_adapters,
    "tulving_before_write": _runs_before_write,
    "tulving_after_curate": _runs_after_curate,
}


@pytest.fixture(autouse=True)
def fresh_manager() -> Iterator[None]:
    registry.reset()
    yield
    registry.reset()


def _specs() -> dict[str, Callable[..., Any]]:
    return {name: fn for name, fn in vars(hookspecs).items()
            if name.startswith("tulving_") and callable(fn)}


def test_every_hook_has_a_subset_case() -> None:
    assert set(CASES) == set(_specs())


@pytest.mark.parametrize("hook", sorted(CASES))
def test_an_implementation_taking_fewer_arguments_runs(hook: str, tmp_path: Path) -> None:
    spec_arguments = set(inspect.signature(_specs()[hook]).parameters)
    plugin = {"tulving_register_adapters": AdaptersWithoutArguments,
              "tulving_before_write": WriteWithEntryOnly,
              "tulving_after_curate": CurateWithContentOnly}[hook]
    taken = set(inspect.signature(getattr(plugin, hook)).parameters) - {"self"}
    assert taken < spec_arguments  # the case really is a subset
    CASES[hook](tmp_path)
