"""Fixtures: real SQLite memories and the package from this tree.

The tests import ``adk_tulving`` from the source folder beside them, so they test the
code next to them whether or not the distribution is installed. Nothing fakes ADK or
Tulving: agents run on google-adk's own Runner, memories on SQLite with Tulving's
hashing embedder (fast, offline, deterministic); the README's examples run on the
default local model.
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
os.environ.setdefault("ADK_DISABLE_TELEMETRY", "1")


@pytest.fixture
def make_memory(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """A Memory on real SQLite with the hashing embedder and exact vectors."""
    from tulving.testing.memories import memory_factory

    with memory_factory(tmp_path, agent_id="adk") as make:
        yield make


@pytest.fixture
def memory(make_memory: Callable[..., Any]) -> Any:
    return make_memory()


@pytest.fixture
def service(memory: Any) -> Any:
    from adk_tulving import TulvingMemoryService

    return TulvingMemoryService(memory)
