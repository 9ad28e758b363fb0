"""Shared fixtures. Ambient third-party plugins are kept out of tests unless a test asks."""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tulving.adapters.clock import ManualClock
from tulving.application.plumbing.rule_set_source import install_rule_sets

os.environ.setdefault("TULVING_PLUGINS", "tulving")
# The strong model is converted once per machine for the suite (not into the user's own
# cache), and every process a test starts (CLI, servers, README blocks) finds it there.
os.environ.setdefault("TULVING_MODEL_CACHE",
                      str(Path(tempfile.gettempdir()) / "tulving-test-model-cache"))

# The tests' composition: unit tests call the domain's redaction directly, without a
# Memory or tulving.redact() to install the rule sets it masks with (see rule_set_source).
install_rule_sets()

# onnxruntime crashes creating a session in a process that imported usearch before it
# (see tulving/adapters/vectors/usearch_index.py, which imports it first); test modules
# that import usearch themselves would otherwise break every later local-model test.
if importlib.util.find_spec("onnxruntime") is not None:
    import onnxruntime  # noqa: F401


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))


@pytest.fixture
def make_memory(tmp_path: Path, clock: ManualClock) -> Iterator[Callable[..., Any]]:
    """A fast Memory on real SQLite (hashing embedder, exact vectors, manual clock)."""
    from tulving import Memory

    opened: list[Memory] = []

    def make(name: str = "m.db", **kwargs: Any) -> Memory:
        kwargs.setdefault("agent_id", "agent-a")
        kwargs.setdefault("embedder", "hashing")
        kwargs.setdefault("vectors", "exact")
        kwargs.setdefault("tokenizer", "cl100k_base")
        kwargs.setdefault("clock", clock)
        memory = Memory(tmp_path / name, **kwargs)
        opened.append(memory)
        return memory

    yield make
    for memory in opened:
        memory.close()
