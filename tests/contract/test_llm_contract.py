"""The LLM contract run against the openai adapter talking to the stub server, in both JSON
modes (structured outputs, and a server that only knows json_object)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from contract_tests.llm import LLMContract
from tulving.adapters.llm.openai import create
from tulving.plugins.registry import AdapterContext
from tulving.ports.llm import LLM
from tulving.testing.openai_server import OpenAIStubServer

KEY_ENV = "TULVING_TEST_LLM_KEY"


@pytest.fixture(scope="module")
def stub() -> Iterator[OpenAIStubServer]:
    with OpenAIStubServer() as server:
        yield server


@pytest.fixture(scope="module")
def stub_json_object_only() -> Iterator[OpenAIStubServer]:
    with OpenAIStubServer(reject_json_schema=True) as server:
        yield server


def _llm(server: OpenAIStubServer, monkeypatch: pytest.MonkeyPatch) -> LLM:
    monkeypatch.setenv(KEY_ENV, "sk-contract")
    return create(
        AdapterContext(),
        model="stub-chat",
        base_url=server.base_url,
        api_key_env=KEY_ENV,
        timeout=2.0,
        max_retries=1,
        retry_backoff=0.01,
    )


class TestOpenAILLM(LLMContract):
    @pytest.fixture
    def llm(self, stub: OpenAIStubServer, monkeypatch: pytest.MonkeyPatch) -> LLM:
        return _llm(stub, monkeypatch)

    @pytest.fixture
    def script(self, stub: OpenAIStubServer) -> Iterator[Callable[[str], None]]:
        stub.clear_replies()
        yield stub.queue_reply
        # a test that did not consume its reply must not leak it into the next one
        assert stub.pending_replies == 0, "a scripted reply was never requested"


class TestOpenAILLMJsonObjectServer(LLMContract):
    @pytest.fixture
    def llm(self, stub_json_object_only: OpenAIStubServer, monkeypatch: pytest.MonkeyPatch) -> LLM:
        return _llm(stub_json_object_only, monkeypatch)

    @pytest.fixture
    def script(self, stub_json_object_only: OpenAIStubServer) -> Iterator[Callable[[str], None]]:
        stub_json_object_only.clear_replies()
        yield stub_json_object_only.queue_reply
        assert stub_json_object_only.pending_replies == 0
