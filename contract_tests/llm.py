"""LLM contract suite (see ``tulving.ports.llm``).

Supply two fixtures:

- ``llm``: the adapter under test.
- ``script``: a callable ``script(text)`` that makes the *next* completion return ``text``
  (for a stub server: queue a canned reply). An adapter talking to a real model cannot
  script it: supply ``lambda text: None`` and set ``exact_replies = False`` on the class;
  every test then checks properties only (types, valid JSON), which a real model meets.

For example:

    class TestMyLLM(LLMContract):
        @pytest.fixture
        def llm(self): return MyLLM(...)
        @pytest.fixture
        def script(self, stub): return stub.queue_reply
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tulving.domain.errors import TulvingError
from tulving.ports.llm import LLM, LLMReply

Script = Callable[[str], None]

PERSON_SCHEMA: dict[str, Any] = {
    "title": "person",
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
ASK = [
    {"role": "system", "content": "You answer briefly."},
    {"role": "user", "content": "Say hello to Ada."},
]
ASK_JSON = [
    {"role": "user", "content": "Describe Ada Lovelace, aged 36, as JSON with name and age."}
]


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class LLMContract:
    """Base class of the LLM suite; subclass it and provide ``llm`` and ``script``."""

    #: True when ``script`` really decides the next reply (stub servers, fakes).
    exact_replies = True

    def test_is_an_llm(self, llm: LLM) -> None:
        assert isinstance(llm, LLM)
        assert isinstance(llm.model_id, str) and llm.model_id

    def test_plain_completion_returns_text(self, llm: LLM, script: Script) -> None:
        script("Hello, Ada.")
        reply = llm.complete(ASK)
        assert isinstance(reply, LLMReply)
        assert isinstance(reply.text, str) and reply.text.strip()
        if self.exact_replies:
            assert reply.text == "Hello, Ada."

    def test_json_schema_completion_returns_valid_json(self, llm: LLM, script: Script) -> None:
        script('{"name": "Ada Lovelace", "age": 36, "tags": ["mathematician"]}')
        reply = llm.complete(ASK_JSON, json_schema=PERSON_SCHEMA)
        value = json.loads(reply.text)
        assert isinstance(value, dict)
        assert isinstance(value["name"], str)
        assert isinstance(value["age"], int) and not isinstance(value["age"], bool)
        assert set(value) <= {"name", "age", "tags"}
        if self.exact_replies:
            assert value == {"name": "Ada Lovelace", "age": 36, "tags": ["mathematician"]}

    def test_usage_is_non_negative_ints(self, llm: LLM, script: Script) -> None:
        script("Counting tokens is part of the contract.")
        reply = llm.complete(ASK)
        assert _is_count(reply.prompt_tokens)
        assert _is_count(reply.completion_tokens)
        assert isinstance(reply.model, str)

    def test_max_tokens_is_accepted(self, llm: LLM, script: Script) -> None:
        script("Short.")
        reply = llm.complete(ASK, max_tokens=16)
        assert isinstance(reply.text, str)
        assert _is_count(reply.completion_tokens)

    def test_bad_messages_raise_a_tulving_error(self, llm: LLM) -> None:
        with pytest.raises(TulvingError):
            llm.complete([])
        with pytest.raises(TulvingError):
            llm.complete([{"role": "user"}])  # no content
