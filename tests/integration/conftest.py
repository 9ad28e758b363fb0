"""Fixtures the LLM-backed integration tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tulving.application.plumbing.warnings_once import reset_warnings
from tulving.testing.openai_server import OpenAIStubServer


@pytest.fixture
def server() -> Iterator[OpenAIStubServer]:
    """The scripted OpenAI-compatible server on 127.0.0.1 (reached by the real client)."""
    with OpenAIStubServer() as srv:
        yield srv


@pytest.fixture
def fresh_warnings() -> Iterator[None]:
    """Each test sees its own once-only warnings."""
    reset_warnings()
    yield
    reset_warnings()
