"""Fixtures for the plugin's tests: a real SQLite memory and the plugin from this tree.

The tests import ``kairos_ai_tulving`` from the source folder (so they test the code next
to them, installed or not); the discovery test builds and installs a wheel of it instead,
as Kairos loads plugins only from installed distributions. No test here uses a fake of
Kairos or Tulving: workflows run on kairos-ai itself, memories on SQLite.
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
os.environ.setdefault("TULVING_PLUGINS", "tulving")


@pytest.fixture
def make_memory(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """A Memory on real SQLite with the hashing embedder (fast, deterministic)."""
    from tulving.testing.memories import memory_factory

    with memory_factory(tmp_path, agent_id="kairos-runner") as make:
        yield make


@pytest.fixture
def memory(make_memory: Callable[..., Any]) -> Any:
    return make_memory()


@pytest.fixture(autouse=True)
def _no_binding_left() -> Iterator[None]:
    yield
    from kairos_ai_tulving import binding

    with binding._lock:
        binding._bound.clear()
