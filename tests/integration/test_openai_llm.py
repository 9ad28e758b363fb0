"""The openai LLM adapter, the none adapter and the call budget, through the official
client against the stub server on 127.0.0.1."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tulving.adapters.llm import none as none_llm
from tulving.adapters.llm.openai import OpenAILLM, create
from tulving.application.plumbing.llm_budget import BudgetedLLM
from tulving.domain.errors import ConfigError, LLMError, SecurityError, ValidationError
from tulving.plugins import builtin
from tulving.plugins.registry import AdapterContext, Registry
from tulving.ports.llm import LLM
from tulving.testing.openai_server import ChatReply, OpenAIStubServer

KEY_ENV = "TULVING_TEST_LLM_KEY"
KEY = "sk-test-llm-9876543210"
FAST = {"timeout": 2.0, "max_retries": 2, "retry_backoff": 0.01, "max_retry_delay": 0.05}
ASK = [{"role": "user", "content": "What did we decide about auth?"}]
FACTS = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "entity": {"type": "string"},
                    "attribute": {"type": "string"},
                    "value": {"type": ["string", "number"]},
                    "kind": {"enum": ["FACT", "PREFERENCE"]},
                },
                "required": ["entity", "attribute", "value"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["facts"],
}
GOOD = (
    '{"facts": [{"entity": "alice", "attribute": "editor", "value": "vim", "kind": "PREFERENCE"}]}'
)


@pytest.fixture(scope="module")
def module_server() -> Iterator[OpenAIStubServer]:
    with OpenAIStubServer() as server:
        yield server


@pytest.fixture
def server(module_server: OpenAIStubServer) -> Iterator[OpenAIStubServer]:
    module_server.clear_faults()
    module_server.clear_requests()
    module_server.clear_replies()  # a failed test must not leak replies into the next
    yield module_server
    assert module_server.pending_replies == 0, "a scripted reply was never requested"


@pytest.fixture(autouse=True)
def key_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY_ENV


def make(server: OpenAIStubServer, **options: Any) -> OpenAILLM:
    settings: dict[str, Any] = {
        "model": "stub-chat",
        "base_url": server.base_url,
        "api_key_env": KEY_ENV,
        **FAST,
    }
    settings.update(options)
    return create(AdapterContext(), **settings)


def chats(server: OpenAIStubServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests_to("/chat/completions")]


# -- plain completions -----------------------------------------------------------------


def test_plain_completion_sends_messages_and_returns_usage(server) -> None:
    server.queue_reply(
        ChatReply("We chose OAuth device flow.", prompt_tokens=21, completion_tokens=6)
    )
    llm = make(server, temperature=0.3)
    reply = llm.complete(ASK, max_tokens=50)
    assert isinstance(llm, LLM)
    assert reply.text == "We chose OAuth device flow."
    assert (reply.prompt_tokens, reply.completion_tokens) == (21, 6)
    assert reply.model == "stub-chat" and llm.model_id == "openai:stub-chat"
    [body] = chats(server)
    assert body["messages"] == ASK
    assert body["temperature"] == 0.3 and body["max_tokens"] == 50
    assert "response_format" not in body
    assert server.requests[0].bearer == KEY


def test_bad_messages_are_rejected_without_a_request(server) -> None:
    llm = make(server)
    for bad in (
        [],
        "hello",
        [{"role": "wizard", "content": "x"}],
        [{"role": "user"}],
        [{"role": "user", "content": 3}],
    ):
        with pytest.raises(ValidationError):
            llm.complete(bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        llm.complete(ASK, max_tokens=0)
    with pytest.raises(ValidationError):
        llm.complete(ASK, json_schema={"type": "objekt"})
    assert server.requests == []


def test_refusal_and_empty_content_are_llm_errors(server) -> None:
    server.queue_reply(ChatReply(None, refusal="I can't help with that."))
    with pytest.raises(LLMError, match="refused"):
        make(server).complete(ASK)
    server.queue_reply(ChatReply(None))
    with pytest.raises(LLMError, match="empty"):
        make(server).complete(ASK)


# -- JSON mode -------------------------------------------------------------------------


def test_json_schema_is_requested_and_the_reply_validated(server) -> None:
    server.queue_reply(GOOD)
    reply = make(server).complete(ASK, json_schema={**FACTS, "title": "extracted facts"})
    assert json.loads(reply.text) == json.loads(GOOD)
    fmt = chats(server)[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "extracted_facts"
    assert fmt["json_schema"]["schema"]["required"] == ["facts"]


def test_code_fences_and_chatter_around_json_are_tolerated(server) -> None:
    server.queue_reply(f"```json\n{GOOD}\n```", f"Sure! Here it is: {GOOD} Hope it helps.")
    llm = make(server)
    assert json.loads(llm.complete(ASK, json_schema=FACTS).text) == json.loads(GOOD)
    assert json.loads(llm.complete(ASK, json_schema=FACTS).text) == json.loads(GOOD)
    assert len(chats(server)) == 2


def test_malformed_twice_then_valid_succeeds_with_three_requests(server) -> None:
    server.queue_reply(
        ChatReply("{not json", prompt_tokens=10, completion_tokens=2),
        ChatReply('{"facts": [{"entity": "alice"}]}', prompt_tokens=20, completion_tokens=5),
        ChatReply(GOOD, prompt_tokens=30, completion_tokens=9),
    )
    reply = make(server).complete(ASK, json_schema=FACTS)
    assert json.loads(reply.text) == json.loads(GOOD)
    bodies = chats(server)
    assert len(bodies) == 3
    assert (reply.prompt_tokens, reply.completion_tokens) == (60, 16)  # all attempts count
    # each retry shows the model its bad reply and what was wrong with it
    assert bodies[1]["messages"][-2] == {"role": "assistant", "content": "{not json"}
    assert "not valid" in bodies[1]["messages"][-1]["content"]
    assert "'attribute' is a required property" in bodies[2]["messages"][-1]["content"]


def test_malformed_always_raises_after_the_bounded_attempts(server) -> None:
    server.queue_reply("nope", '{"facts": "x"}', "[1, 2")
    with pytest.raises(LLMError, match="malformed JSON 3 times"):
        make(server).complete(ASK, json_schema=FACTS)
    assert len(chats(server)) == 3


def test_json_retries_is_configurable(server) -> None:
    server.queue_reply("nope")
    with pytest.raises(LLMError, match="malformed JSON 1 time"):
        make(server, json_retries=0).complete(ASK, json_schema=FACTS)
    assert len(chats(server)) == 1


def test_enum_and_additional_properties_are_enforced(server) -> None:
    bad_enum = '{"facts": [{"entity": "a", "attribute": "b", "value": 1, "kind": "GOSSIP"}]}'
    extra = '{"facts": [{"entity": "a", "attribute": "b", "value": 1, "mood": "x"}]}'
    server.queue_reply(bad_enum, extra, GOOD)
    make(server).complete(ASK, json_schema=FACTS)
    feedback = [b["messages"][-1]["content"] for b in chats(server)[1:]]
    assert "GOSSIP" in feedback[0] and "'mood' was unexpected" in feedback[1]


def test_server_without_json_schema_falls_back_to_json_object() -> None:
    with OpenAIStubServer(reject_json_schema=True) as old:
        old.queue_reply(GOOD, GOOD)
        llm = make(old)
        assert json.loads(llm.complete(ASK, json_schema=FACTS).text) == json.loads(GOOD)
        first = [r.body for r in old.requests_to("/chat/completions")]
        assert [b["response_format"]["type"] for b in first] == ["json_schema", "json_object"]
        assert '"facts"' in first[1]["messages"][0]["content"]  # schema given in the prompt
        assert llm.json_mode == "json_object"
        llm.complete(ASK, json_schema=FACTS)  # remembered: no second rejected attempt
        assert len(old.requests) == 3


def test_other_400s_are_not_retried(server) -> None:
    server.fail_next(1, status=400)
    with pytest.raises(LLMError, match="HTTP 400"):
        make(server).complete(ASK)
    assert len(server.requests) == 1


# -- transport failures ----------------------------------------------------------------


def test_500_twice_then_success(server) -> None:
    server.fail_next(2, status=500)
    server.queue_reply("recovered")
    assert make(server).complete(ASK).text == "recovered"
    assert len(server.requests) == 3


def test_500_retries_then_llm_error(server) -> None:
    server.fail_next(10, status=500)
    with pytest.raises(LLMError, match="after 3 attempts: HTTP 500"):
        make(server, max_retries=2).complete(ASK)
    assert len(server.requests) == 3


def test_429_retry_after_is_honoured(server) -> None:
    server.fail_next(1, status=429, retry_after=0.3)
    server.queue_reply("patience")
    assert make(server).complete(ASK).text == "patience"
    first, second = server.requests
    assert second.received_at - first.received_at >= 0.28


def test_timeout_gives_llm_error_in_bounded_time(server) -> None:
    server.delay_next(5, seconds=10)
    llm = make(server, timeout=0.3, max_retries=1)
    started = time.monotonic()
    with pytest.raises(LLMError, match="timeout"):
        llm.complete(ASK)
    assert time.monotonic() - started < 3.0
    assert len(server.requests) == 2


def test_timeout_during_json_mode_is_an_llm_error(server) -> None:
    server.delay_next(1, seconds=10)
    with pytest.raises(LLMError, match="timeout"):
        make(server, timeout=0.3, max_retries=0).complete(ASK, json_schema=FACTS)


# -- keys and configuration ------------------------------------------------------------


def test_inline_key_is_refused(server) -> None:
    with pytest.raises(SecurityError, match="inline api_key"):
        make(server, api_key="sk-inline")


def test_missing_key_remote_is_refused_local_gets_a_placeholder(server, monkeypatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(ConfigError, match=KEY_ENV):
        create(AdapterContext(), base_url="https://llm.example.invalid/v1", api_key_env=KEY_ENV)
    server.queue_reply("hi")
    make(server).complete(ASK)
    assert server.requests[0].bearer and server.requests[0].bearer != KEY


@pytest.mark.parametrize(
    "options",
    [
        {"temperature": 3},
        {"timeout": -1},
        {"max_retries": 1.5},
        {"json_retries": -1},
        {"json_mode": "yaml"},
        {"base_url": "not a url"},
    ],
)
def test_bad_options_are_config_errors(server, options) -> None:
    with pytest.raises(ConfigError):
        make(server, **options)


def test_registered_under_their_plugin_names(server) -> None:
    registry = Registry()
    builtin.tulving_register_adapters(registry=registry)
    llm = registry.create(
        "llm",
        "openai",
        AdapterContext(),
        model="stub-chat",
        base_url=server.base_url,
        api_key_env=KEY_ENV,
    )
    server.queue_reply("registered")
    assert llm.complete(ASK).text == "registered"
    assert registry.create("llm", "none").model_id == "none"


# -- the none adapter ------------------------------------------------------------------


def test_none_adapter_is_an_llm_that_always_refuses() -> None:
    llm = none_llm.create(AdapterContext())
    assert isinstance(llm, LLM) and llm.model_id == "none"
    with pytest.raises(LLMError, match="no LLM configured"):
        llm.complete(ASK)
    with pytest.raises(LLMError, match="no LLM configured"):
        llm.complete(ASK, json_schema=FACTS)


# -- the call budget -------------------------------------------------------------------


def test_budget_counts_calls_and_stops_before_the_request(server) -> None:
    budget = BudgetedLLM(make(server), max_calls=2, max_tokens=None)
    assert isinstance(budget, LLM) and budget.model_id == "openai:stub-chat"
    server.queue_reply("one", "two")
    budget.complete(ASK)
    budget.complete(ASK)
    with pytest.raises(LLMError, match="budget exhausted"):
        budget.complete(ASK)
    assert len(server.requests) == 2 and budget.remaining_calls == 0 and budget.exhausted


def test_budget_counts_tokens_from_usage(server) -> None:
    budget = BudgetedLLM(make(server), max_calls=None, max_tokens=100)
    server.queue_reply(
        ChatReply("a", prompt_tokens=40, completion_tokens=20),
        ChatReply("b", prompt_tokens=40, completion_tokens=20),
    )
    budget.complete(ASK)
    assert budget.tokens_used == 60 and budget.remaining_tokens == 40
    budget.complete(ASK)  # allowed: under the ceiling when it started
    assert budget.tokens_used == 120
    with pytest.raises(LLMError, match="120 of 100 tokens"):
        budget.complete(ASK)
    assert len(server.requests) == 2


def test_failed_calls_count_against_the_budget(server) -> None:
    server.fail_next(10, status=500)
    budget = BudgetedLLM(make(server, max_retries=0), max_calls=1, max_tokens=None)
    with pytest.raises(LLMError, match="HTTP 500"):
        budget.complete(ASK)
    with pytest.raises(LLMError, match="budget exhausted"):
        budget.complete(ASK)
    assert budget.calls_used == 1 and len(server.requests) == 1


def test_budget_rejects_bad_limits() -> None:
    with pytest.raises(ConfigError):
        BudgetedLLM(none_llm.create(AdapterContext()), max_calls=-1, max_tokens=None)
    with pytest.raises(ConfigError):
        BudgetedLLM(none_llm.create(AdapterContext()), max_calls=None, max_tokens=1.5)  # type: ignore[arg-type]
