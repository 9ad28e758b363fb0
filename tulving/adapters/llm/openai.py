"""Chat completions from OpenAI or any OpenAI-compatible server (Ollama, vLLM, LM Studio),
through the official ``openai`` client.

JSON mode: with ``json_schema`` the request carries
``response_format={"type": "json_schema", ...}``. Servers that reject it with HTTP 400 get
the same request once more with ``{"type": "json_object"}`` plus the schema in a system
message, and the adapter remembers to use ``json_object`` from then on. Whatever the mode,
the reply is parsed (code fences and chatter around the JSON are tolerated) and validated
against the schema with :mod:`json_schema_check`; a reply that fails is sent back with the
reason, at most ``json_retries`` more times, then ``LLMError``. The returned text is the
validated JSON, re-serialised, so callers can ``json.loads`` it without another check.

Token accounting: the reply's ``prompt_tokens``/``completion_tokens`` add up the ``usage``
of every request made for this call (JSON repairs included), because that is what was
spent. Call budgets live in the application (``BudgetedLLM``), not here.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import openai

from tulving.adapters._openai_common import (
    RetryPolicy,
    bad_request_error,
    call_with_retries,
    check_positive,
    make_client,
    make_policy,
    resolve_api_key,
    resolve_base_url,
)
from tulving.adapters.llm.json_schema_check import SchemaMismatch, check_schema, validate
from tulving.domain.errors import ConfigError, LLMError, ValidationError
from tulving.ports.llm import LLMReply

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
_JSON_MODES = ("json_schema", "json_object")


class OpenAILLM:
    def __init__(
        self,
        *,
        client: openai.OpenAI,
        model: str,
        base_url: str,
        timeout: float,
        policy: RetryPolicy,
        temperature: float,
        json_retries: int,
        json_mode: str,
    ) -> None:
        self._client = client
        self._model = model
        self._base_url = base_url
        self._timeout = timeout
        self._policy = policy
        self._temperature = temperature
        self._json_retries = json_retries
        self._json_mode = json_mode
        self._lock = threading.Lock()
        self.model_id = f"openai:{model}"

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAILLM(model_id={self.model_id!r}, base_url={self._base_url!r})"

    @property
    def json_mode(self) -> str:
        """``json_schema`` until the server rejected it once, then ``json_object``."""
        return self._json_mode

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> LLMReply:
        chat = _check_messages(messages)
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise ValidationError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        if json_schema is None:
            text, prompt, completion, model = self._request(chat, None, max_tokens)
            return LLMReply(text, prompt, completion, model)
        try:
            check_schema(json_schema)
        except SchemaMismatch as exc:
            raise ValidationError(f"unusable json_schema: {exc}") from exc
        return self._complete_json(chat, json_schema, max_tokens)

    def _complete_json(
        self, chat: list[dict[str, str]], schema: Mapping[str, Any], max_tokens: int | None
    ) -> LLMReply:
        prompt_total = completion_total = 0
        attempts = 1 + self._json_retries
        problem = ""
        model = ""
        for _ in range(attempts):
            text, prompt, completion, model = self._request(chat, schema, max_tokens)
            prompt_total += prompt
            completion_total += completion
            try:
                value = _extract_json(text)
                validate(value, schema)
            except (ValueError, SchemaMismatch) as exc:
                problem = str(exc)
                chat = [
                    *chat,
                    {"role": "assistant", "content": text},
                    {
                        "role": "user",
                        "content": (
                            f"That reply was not valid: {problem}. Answer again with only the "
                            "JSON value, matching the schema exactly."
                        ),
                    },
                ]
                continue
            canonical = json.dumps(value, ensure_ascii=False)
            return LLMReply(canonical, prompt_total, completion_total, model)
        raise LLMError(
            f"{self.model_id} returned malformed JSON {attempts} time"
            f"{'s' if attempts > 1 else ''}; last problem: {problem}"
        )

    def _request(
        self,
        chat: list[dict[str, str]],
        schema: Mapping[str, Any] | None,
        max_tokens: int | None,
    ) -> tuple[str, int, int, str]:
        what = f"chat completion with {self._model!r}"
        mode = self._json_mode if schema is not None else None
        try:
            response = self._send(chat, schema, mode, max_tokens, what)
        except openai.BadRequestError as exc:
            if mode != "json_schema":
                raise bad_request_error(
                    exc, error=LLMError, what=what, base_url=self._base_url
                ) from exc
            # Servers without structured outputs: retry once with plain JSON mode.
            with self._lock:
                self._json_mode = "json_object"
            try:
                response = self._send(chat, schema, "json_object", max_tokens, what)
            except openai.BadRequestError as again:
                raise bad_request_error(
                    again, error=LLMError, what=what, base_url=self._base_url
                ) from again
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise LLMError(f"{what}: the server returned no choices")
        message = choices[0].message
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise LLMError(f"{what}: the model refused: {refusal}")
        if message.content is None:
            raise LLMError(f"{what}: the server returned an empty message")
        usage = getattr(response, "usage", None)
        prompt = _count(getattr(usage, "prompt_tokens", 0))
        completion = _count(getattr(usage, "completion_tokens", 0))
        return message.content, prompt, completion, str(getattr(response, "model", "") or "")

    def _send(
        self,
        chat: list[dict[str, str]],
        schema: Mapping[str, Any] | None,
        mode: str | None,
        max_tokens: int | None,
        what: str,
    ) -> Any:
        options: dict[str, Any] = {
            "model": self._model,
            "messages": chat,
            "temperature": self._temperature,
        }
        if max_tokens is not None:
            options["max_tokens"] = max_tokens
        if schema is not None and mode == "json_schema":
            options["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": _schema_name(schema),
                    "schema": dict(schema),
                    "strict": False,
                },
            }
        elif schema is not None:
            options["response_format"] = {"type": "json_object"}
            options["messages"] = [
                {
                    "role": "system",
                    "content": (
                        "Reply with JSON only, no prose, matching this JSON schema: "
                        + json.dumps(schema, sort_keys=True)
                    ),
                },
                *chat,
            ]
        return call_with_retries(
            lambda: self._client.chat.completions.create(**options),
            policy=self._policy,
            error=LLMError,
            what=what,
            base_url=self._base_url,
            timeout=self._timeout,
        )


def _check_messages(messages: Any) -> list[dict[str, str]]:
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise ValidationError("messages must be a sequence of {'role', 'content'} mappings")
    if not messages:
        raise ValidationError("messages must not be empty")
    chat = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ValidationError(f"message #{i} is {type(message).__name__}, not a mapping")
        role, content = message.get("role"), message.get("content")
        if role not in _ROLES:
            raise ValidationError(
                f"message #{i} has role {role!r}; expected one of {', '.join(sorted(_ROLES))}"
            )
        if not isinstance(content, str):
            raise ValidationError(f"message #{i} content must be a string")
        chat.append({"role": str(role), "content": content})
    return chat


def _extract_json(text: str) -> Any:
    """The JSON value in ``text``: as is, inside a code fence, or between the outermost
    brackets (local models like to add a sentence around it)."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0].strip()
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = stripped.find(opener), stripped.rfind(closer)
        if 0 <= start < end:
            try:
                return json.loads(stripped[start : end + 1])
            except ValueError:
                continue
    raise ValueError(f"not JSON: {text[:80]!r}")


def _schema_name(schema: Mapping[str, Any]) -> str:
    title = schema.get("title")
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in str(title or "reply"))
    return name[:64] or "reply"


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def create(
    context: Any,
    *,
    model: str = "gpt-4o-mini",
    base_url: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 2,
    api_key_env: str = "OPENAI_API_KEY",
    api_key: str | None = None,
    temperature: float = 0.0,
    json_retries: int = 2,
    json_mode: str = "json_schema",
    retry_backoff: float = 0.5,
    max_retry_delay: float = 8.0,
) -> OpenAILLM:
    """Build the adapter; ``ConfigError`` for bad options or a missing key, ``SecurityError`` for an inline one. No
    request is made here."""
    if not isinstance(model, str) or not model.strip():
        raise ConfigError("model must be a non-empty string")
    check_positive("timeout", timeout)
    policy = make_policy(max_retries, retry_backoff, max_retry_delay)
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not 0 <= temperature <= 2
    ):
        raise ConfigError(f"temperature must be a number in [0, 2], got {temperature!r}")
    if isinstance(json_retries, bool) or not isinstance(json_retries, int) or json_retries < 0:
        raise ConfigError(f"json_retries must be an integer >= 0, got {json_retries!r}")
    if json_mode not in _JSON_MODES:
        raise ConfigError(f"json_mode must be one of {', '.join(_JSON_MODES)}")
    url = resolve_base_url(base_url)
    key = resolve_api_key(api_key=api_key, api_key_env=api_key_env, base_url=url)
    return OpenAILLM(
        client=make_client(api_key=key, base_url=url, timeout=float(timeout)),
        model=model,
        base_url=url,
        timeout=float(timeout),
        policy=policy,
        temperature=float(temperature),
        json_retries=json_retries,
        json_mode=json_mode,
    )
