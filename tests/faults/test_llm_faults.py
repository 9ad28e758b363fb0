"""An LLM endpoint that hangs, answers garbage or rate-limits, under 20 concurrent
``remember`` calls (the real openai client against the local OpenAI-compatible server):
every call degrades to the deterministic path within its timeout and nothing is lost."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tulving import MemoryType
from tulving.testing.openai_server import OpenAIStubServer

CALLS = 20
TIMEOUT = 0.4


def _fault(server: OpenAIStubServer, kind: str) -> None:
    if kind == "hang":
        server.delay_next(CALLS * 2, seconds=5.0)
    elif kind == "garbage":
        server.queue_reply(*(["{not json at all"] * (CALLS * 2)))
    else:
        server.fail_next(CALLS * 2, status=429, retry_after=0.01)


@pytest.mark.parametrize("kind", ["hang", "garbage", "rate_limit"])
def test_twenty_concurrent_remembers_degrade_and_keep_everything(
    make_memory: Callable[..., Any], kind: str
) -> None:
    with OpenAIStubServer() as server:
        memory = make_memory(f"{kind}.db", llm="openai", options={"llm": {
            "base_url": server.base_url, "model": "stub-chat", "max_retries": 0,
            "json_retries": 0, "timeout": TIMEOUT}})
        memory.startup()
        _fault(server, kind)
        texts = [f"Ann{i}: I prefer green tea number {i}.\nBo{i}: We decided to ship {i}."
                 for i in range(CALLS)]
        began = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with ThreadPoolExecutor(max_workers=CALLS) as pool:
                # wait=True: what is read off the turns (the LLM's, or the rules' after
                # its fault) is what this test checks
                results = list(pool.map(lambda t: memory.remember(t, wait=True), texts))
        elapsed = time.perf_counter() - began
        assert len(results) == CALLS
        for i, written in enumerate(results):
            turns = sorted(e.content for e in written if "turn" in e.metadata)
            assert turns == sorted(texts[i].split("\n")), kind  # every turn, verbatim
            prefs = [e for e in written if e.type is MemoryType.PREFERENCE]
            assert prefs and prefs[0].metadata["extracted_by"] == "rules", kind
        assert memory.stats()["active"] >= CALLS * 3
        # each call waits at most its timeout; calls run one at a time on one store
        assert elapsed < CALLS * (TIMEOUT + 1.0), elapsed
