"""Fixtures: a real SQLite memory and the block from this tree.

The tests import ``llama_index.memory.tulving`` from the source folder beside them (a
portion of the ``llama_index`` namespace package). Nothing fakes LlamaIndex or Tulving:
the block runs inside ``llama_index.core.memory.Memory`` (its own SQLite chat store,
tokenizer and flushing), memories on SQLite with Tulving's hashing embedder.
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
    """A Tulving Memory on real SQLite with the hashing embedder and exact vectors."""
    from tulving.testing.memories import memory_factory

    with memory_factory(tmp_path, agent_id="assistant") as make:
        yield make


@pytest.fixture
def tulving_memory(make_memory: Callable[..., Any]) -> Any:
    return make_memory()
