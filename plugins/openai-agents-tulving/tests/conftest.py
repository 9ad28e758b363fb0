"""Fixtures: a real SQLite memory, the package from this tree, a scripted Agents SDK model.

The tests import ``openai_agents_tulving`` from the source folder beside them. Nothing
fakes the SDK or Tulving: runs go through ``agents.Runner``; a model is either the SDK's
``OpenAIChatCompletionsModel`` with the official ``openai`` client talking to
``tulving.testing``'s OpenAI-compatible server on 127.0.0.1, or ``ScriptedModel``, an
implementation of the SDK's ``Model`` interface that plays back tool calls and replies
(the stub server speaks no tool calls) and records what the SDK sent it.
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
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"      # no trace export over the network


@pytest.fixture(autouse=True)
def _no_tracing() -> None:
    from agents import set_tracing_disabled

    set_tracing_disabled(True)


@pytest.fixture
def make_memory(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """A Memory on real SQLite with the hashing embedder and exact vectors."""
    from tulving.testing.memories import memory_factory

    with memory_factory(tmp_path, agent_id="assistant") as make:
        yield make


@pytest.fixture
def memory(make_memory: Callable[..., Any]) -> Any:
    """One user's Memory (bound to ``user_id="user"``): what an app of one user opens."""
    return make_memory(user_id="user")


@pytest.fixture
def server_memory(make_memory: Callable[..., Any]) -> Any:
    """A Memory that a server's many users share (bound to none of them)."""
    return make_memory()
