"""What the OpenAI-compatible adapters share: option checks, key handling, client
construction and the retry loop.

Keys come only from the environment (the variable named by ``api_key_env``): a key written
into code or a config file ends up in version control and logs, so an inline ``api_key`` is
refused with ``SecurityError`` (ADR-010: a secret in the wrong place is a security
matter, not a typo). Local servers (Ollama, vLLM, LM Studio on loopback) usually
ignore keys, so a missing key is allowed there and a placeholder is sent.

Retries are ours, not the client's (the client is built with ``max_retries=0``): the
backoff must be tunable (tests use milliseconds), ``Retry-After`` must be honoured with a
cap, timeouts and garbled bodies must count as transient, and every final failure must
become the adapter's own ``TulvingError`` subclass with a message that names the server
but never the key.
"""

from __future__ import annotations

import email.utils
import ipaddress
import json
import os
import random
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

import attrs
import openai

from tulving.domain.errors import ConfigError, SecurityError, TulvingError

T = TypeVar("T")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Sent to loopback servers when no key is set; they ignore it.
PLACEHOLDER_KEY = "tulving-no-key-required"
#: Statuses worth retrying: request timeout, lock conflict, rate limit, server errors.
_RETRYABLE = frozenset({408, 409, 429})


def is_loopback_url(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_base_url(base_url: str | None) -> str:
    """``None`` means OpenAI itself. ``OPENAI_BASE_URL`` is deliberately not read: where
    requests (and the key) go is configuration, never an ambient variable."""
    if base_url is None:
        return DEFAULT_BASE_URL
    if not isinstance(base_url, str):
        raise ConfigError(f"base_url must be a string, not {type(base_url).__name__}")
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"base_url must be an http(s) URL, got {base_url!r}")
    return base_url.rstrip("/")


def resolve_api_key(*, api_key: object, api_key_env: str, base_url: str) -> str:
    if api_key is not None:
        raise SecurityError(
            "an inline api_key is refused: secrets come from the environment; set the "
            f"variable {api_key_env!r} (or choose another with api_key_env=)"
        )
    if not isinstance(api_key_env, str) or not api_key_env:
        raise ConfigError("api_key_env must name an environment variable")
    key = os.environ.get(api_key_env, "").strip()
    if key:
        return key
    if is_loopback_url(base_url):
        return PLACEHOLDER_KEY
    raise ConfigError(
        f"no API key for {base_url}: set the environment variable {api_key_env!r} "
        "(a missing key is only allowed for servers on localhost/127.0.0.1)"
    )


def check_positive(name: str, value: object, *, integer: bool = False) -> float:
    """The value as a float when it is a positive number (an int when ``integer``)."""
    ok = isinstance(value, int) or (not integer and isinstance(value, float))
    if isinstance(value, bool) or not ok or not float(value) > 0:  # type: ignore[arg-type]
        kind = "a positive integer" if integer else "a positive number"
        raise ConfigError(f"{name} must be {kind}, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def check_retries(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"max_retries must be an integer >= 0, got {value!r}")


@attrs.frozen
class RetryPolicy:
    """Exponential backoff with jitter: attempt n (from 0) waits
    ``min(backoff * 2**n, max_delay)`` scaled by a random factor in [0.75, 1], unless the
    server sent ``Retry-After``, which wins up to ``max_retry_after`` (beyond that we fail
    at once rather than hang a caller for minutes)."""

    max_retries: int = 2
    backoff: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after
        base: float = min(self.backoff * 2.0**attempt, self.max_delay)
        return base * (1.0 - 0.25 * random.random())


def make_policy(max_retries: object, retry_backoff: object, max_retry_delay: object) -> RetryPolicy:
    check_retries(max_retries)
    assert isinstance(max_retries, int)
    return RetryPolicy(
        max_retries=max_retries,
        backoff=check_positive("retry_backoff", retry_backoff),
        max_delay=check_positive("max_retry_delay", max_retry_delay),
    )


def make_client(*, api_key: str, base_url: str, timeout: float) -> openai.OpenAI:
    """The official client with its own retries off (ours apply) and an explicit
    ``base_url``, so no ambient ``OPENAI_BASE_URL`` can redirect requests."""
    return openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _server_message(exc: openai.APIStatusError) -> str:
    body: Any = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(body.get("message"), str):
            return str(body["message"])
    return str(exc.message)


def call_with_retries(
    fn: Callable[[], T],
    *,
    policy: RetryPolicy,
    error: type[TulvingError],
    what: str,
    base_url: str,
    timeout: float,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``fn`` (one HTTP request through the openai client), retrying transient
    failures; every final failure is raised as ``error`` chained to the cause.
    ``openai.BadRequestError`` is re-raised untouched so a caller can react to a 400
    (the LLM adapter falls back to ``json_object``); callers convert it afterwards."""
    attempt = 0
    while True:
        retry_after: float | None = None
        try:
            return fn()
        except openai.BadRequestError:
            raise
        except openai.APIStatusError as exc:
            status = exc.status_code
            reason = f"HTTP {status} from {base_url}: {_server_message(exc)}"
            if status not in _RETRYABLE and status < 500:
                raise error(f"{what} failed: {reason}") from exc
            retry_after = parse_retry_after(exc.response.headers)
            if retry_after is not None and retry_after > policy.max_retry_after:
                raise error(
                    f"{what} failed: {reason}; the server asks to retry after "
                    f"{retry_after:.0f}s, more than the {policy.max_retry_after:.0f}s we wait"
                ) from exc
            cause: Exception = exc
        except openai.APITimeoutError as exc:
            reason = f"no answer from {base_url} within the {timeout:g}s timeout"
            cause = exc
        except openai.APIConnectionError as exc:
            reason = f"cannot reach {base_url}: {exc.__cause__ or exc}"
            cause = exc
        except (json.JSONDecodeError, openai.APIResponseValidationError) as exc:
            reason = f"malformed response from {base_url}: {exc}"
            cause = exc
        except openai.OpenAIError as exc:
            raise error(f"{what} failed: {exc}") from exc
        if attempt >= policy.max_retries:
            tries = attempt + 1
            raise error(
                f"{what} failed after {tries} attempt{'s' if tries > 1 else ''}: {reason}"
            ) from cause
        sleep(policy.delay(attempt, retry_after))
        attempt += 1


def bad_request_error(
    exc: openai.BadRequestError, *, error: type[TulvingError], what: str, base_url: str
) -> TulvingError:
    return error(f"{what} failed: HTTP 400 from {base_url}: {_server_message(exc)}")
