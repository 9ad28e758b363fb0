"""Fixtures: a real SQLite memory, the store from this tree, LangGraph's own reference store.

The tests import ``langgraph.store.tulving`` from the source folder beside them (a portion
of the ``langgraph`` namespace package), so they test the code next to them whether or
not the distribution is installed. Nothing here fakes LangGraph or Tulving: graphs run on
langgraph itself, memories on SQLite with Tulving's hashing embedder (fast, offline,
deterministic); the README's example runs on the default local model.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

PLUGIN_ROOT = Path(__file__).resolve().parents[1]
if str(PLUGIN_ROOT) not in sys.path:
    sys.path.insert(0, str(PLUGIN_ROOT))
os.environ.setdefault("TULVING_PLUGINS", "tulving,tulving-memory")


@pytest.fixture
def make_memory(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """A Memory on real SQLite with the hashing embedder and exact vectors."""
    from tulving.testing.memories import memory_factory

    with memory_factory(tmp_path, agent_id="graph") as make:
        yield make


@pytest.fixture
def memory(make_memory: Callable[..., Any]) -> Any:
    return make_memory()


@pytest.fixture
def store(memory: Any) -> Any:
    from langgraph.store.tulving import TulvingStore

    return TulvingStore(memory, index={"fields": ["text"]})
