"""A scriptable OpenAI-compatible HTTP server on 127.0.0.1, for tests and benchmarks.

Why a real server rather than a mocked client: the adapters must be exercised through the
official ``openai`` client, its HTTP stack, its error mapping and our retry loop, exactly as
they run against OpenAI, Ollama or vLLM. A paid LLM cannot run here, so this server plays
one: embeddings are deterministic feature-hashed vectors; chat replies come from a script.

Usage::

    with OpenAIStubServer() as server:
        server.queue_reply("hello")               # next chat completion says "hello"
        server.fail_next(2, status=500)           # the next two requests fail
        ... OpenAI(base_url=server.base_url, api_key="k") ...
        assert server.requests[-1].bearer == "k"

Only the standard library is used; it listens on loopback only, and every injected delay is
interruptible, so leaving the ``with`` block stops it promptly.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = [
    "ChatReply",
    "Fault",
    "OpenAIStubServer",
    "RecordedRequest",
    "stub_embedding",
]

#: Real dimensions of OpenAI's embedding models, so a client that knows them agrees.
KNOWN_MODEL_DIMENSIONS: Mapping[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received (faulted or not), in arrival order."""

    method: str
    path: str
    headers: Mapping[str, str]  # names lower-cased
    body: Any  # parsed JSON, or None when the body was empty or not JSON
    received_at: float  # time.monotonic()

    @property
    def bearer(self) -> str | None:
        value = self.headers.get("authorization", "")
        return value[len("Bearer ") :] if value.startswith("Bearer ") else None


@dataclass(frozen=True)
class Fault:
    """What to do instead of (or before) answering one request.

    ``status=None`` means "answer normally", which together with ``delay`` gives a slow
    server. ``body`` replaces the JSON error body (use it for garbage); ``path`` limits the
    fault to requests whose path ends with it (e.g. ``"/embeddings"``).
    """

    status: int | None = 500
    delay: float = 0.0
    body: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    path: str | None = None


@dataclass(frozen=True)
class ChatReply:
    """A scripted chat completion. ``None`` token counts mean "count words"."""

    content: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"
    refusal: str | None = None


ScriptItem = str | ChatReply | Callable[[dict[str, Any]], "str | ChatReply"]


def _word_count(text: str) -> int:
    return len(_WORD.findall(text))


def stub_embedding(
    text: str, dimension: int, model: str = "", *, normalize: bool = False
) -> list[float]:
    """The stub's vector for ``text``: signed feature hashing of lower-cased words, seeded
    by the model name (different models, different spaces). Texts sharing words get a
    positive cosine, which keeps retrieval tests and benchmarks meaningful.
    Public so tests can compute the vector they expect."""
    vector = [0.0] * dimension
    tokens = _WORD.findall(text.lower()) or [text]
    for token in tokens:
        digest = hashlib.blake2b(f"{model}\0{token}".encode(), digest_size=8).digest()
        (value,) = struct.unpack("<Q", digest)
        index = value % dimension
        sign = 1.0 if (value >> 63) & 1 else -1.0
        vector[index] += sign * (1.0 + ((value >> 32) % 7) / 7.0)
    if not any(vector):  # collisions cancelled out: keep the vector usable
        digest = hashlib.blake2b(f"{model}\0{text}".encode(), digest_size=8).digest()
        vector[int.from_bytes(digest, "little") % dimension] = 1.0
    if normalize:
        norm = math.sqrt(sum(v * v for v in vector))
        vector = [v / norm for v in vector]
    return vector


class _ApiError(Exception):
    def __init__(self, status: int, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param


class OpenAIStubServer:
    """An OpenAI-compatible server: ``POST /v1/embeddings``, ``POST /v1/chat/completions``,
    ``GET /v1/models``.

    Options: ``default_dimension`` for unknown embedding models (known OpenAI models keep
    their real dimension); ``model_dimensions`` to override per model; ``responder`` answers
    chat requests when the reply queue is empty; ``api_key`` makes the server return 401 on
    any other bearer token; ``reject_json_schema`` answers 400 to
    ``response_format={"type": "json_schema"}`` like servers that only know ``json_object``;
    ``normalize_embeddings`` returns unit vectors (off by default so clients must
    normalise, as some local servers do not).
    """

    def __init__(
        self,
        *,
        default_dimension: int = 64,
        model_dimensions: Mapping[str, int] | None = None,
        responder: Callable[[dict[str, Any]], str | ChatReply] | None = None,
        api_key: str | None = None,
        reject_json_schema: bool = False,
        normalize_embeddings: bool = False,
    ) -> None:
        self.default_dimension = default_dimension
        self.model_dimensions = {**KNOWN_MODEL_DIMENSIONS, **(model_dimensions or {})}
        self.responder = responder
        self.api_key = api_key
        self.reject_json_schema = reject_json_schema
        self.normalize_embeddings = normalize_embeddings
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._requests: list[RecordedRequest] = []
        self._replies: deque[ScriptItem] = deque()
        self._faults: list[Fault] = []
        self._completion_counter = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> OpenAIStubServer:
        if self._httpd is not None:
            raise RuntimeError("stub server already started")
        handler = type("_BoundHandler", (_Handler,), {"stub": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        self._stopping.clear()
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="openai-stub-server",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()  # wakes handlers sleeping in an injected delay
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIStubServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("stub server not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting -------------------------------------------------------------------

    def queue_reply(self, *items: ScriptItem) -> None:
        """Queue chat replies, used in order: a string (the content), a ChatReply, or a
        callable taking the request JSON and returning either."""
        with self._lock:
            self._replies.extend(items)

    def clear_replies(self) -> None:
        with self._lock:
            self._replies.clear()

    @property
    def pending_replies(self) -> int:
        with self._lock:
            return len(self._replies)

    def add_fault(self, fault: Fault, count: int = 1) -> None:
        with self._lock:
            self._faults.extend([fault] * count)

    def fail_next(
        self,
        count: int = 1,
        *,
        status: int = 500,
        retry_after: float | None = None,
        body: bytes | None = None,
        path: str | None = None,
    ) -> None:
        """The next ``count`` requests get ``status`` (with ``Retry-After`` if given)."""
        headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        self.add_fault(Fault(status=status, body=body, headers=headers, path=path), count)

    def delay_next(self, count: int = 1, *, seconds: float, path: str | None = None) -> None:
        """The next ``count`` requests are answered normally after ``seconds``."""
        self.add_fault(Fault(status=None, delay=seconds, path=path), count)

    def garble_next(self, count: int = 1, *, path: str | None = None) -> None:
        """The next ``count`` requests get HTTP 200 with a body that is not JSON."""
        self.add_fault(Fault(status=200, body=b'{"object": "list", "data": [', path=path), count)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    # -- inspection ------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, suffix: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith(suffix)]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    # -- request handling (called from handler threads) ------------------------------

    def _record(self, request: RecordedRequest) -> Fault | None:
        with self._lock:
            self._requests.append(request)
            for i, fault in enumerate(self._faults):
                if fault.path is None or request.path.endswith(fault.path):
                    del self._faults[i]
                    return fault
        return None

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops first; True when it is stopping."""
        return self._stopping.wait(seconds) if seconds > 0 else self._stopping.is_set()

    def _answer(self, method: str, path: str, body: Any) -> Any:
        if method == "GET" and path.rstrip("/") == "/v1/models":
            names = [*sorted(self.model_dimensions), "stub-chat"]
            return {
                "object": "list",
                "data": [
                    {"id": n, "object": "model", "created": 0, "owned_by": "stub"} for n in names
                ],
            }
        if method == "POST" and path == "/v1/embeddings":
            return self._embeddings(body)
        if method == "POST" and path == "/v1/chat/completions":
            return self._chat(body)
        raise _ApiError(404, f"no route for {method} {path}")

    def _embeddings(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise _ApiError(400, "request body must be a JSON object")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise _ApiError(400, "'model' is required", param="model")
        raw = body.get("input")
        inputs = [raw] if isinstance(raw, str) else raw
        if not isinstance(inputs, list) or not inputs:
            raise _ApiError(400, "'input' must be a string or a non-empty list", param="input")
        if not all(isinstance(t, str) for t in inputs):
            raise _ApiError(400, "the stub accepts text input only", param="input")
        if any(t == "" for t in inputs):  # OpenAI rejects empty strings too
            raise _ApiError(400, "'$.input' is invalid: empty string", param="input")
        dimension = body.get("dimensions")
        if dimension is None:
            dimension = self.model_dimensions.get(model, self.default_dimension)
        elif not isinstance(dimension, int) or isinstance(dimension, bool) or dimension < 1:
            raise _ApiError(400, "'dimensions' must be a positive integer", param="dimensions")
        encoding = body.get("encoding_format", "float")
        if encoding not in ("float", "base64"):
            raise _ApiError(400, "'encoding_format' must be float or base64")
        data = []
        for index, text in enumerate(inputs):
            vector = stub_embedding(text, dimension, model, normalize=self.normalize_embeddings)
            encoded: Any = vector
            if encoding == "base64":
                encoded = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(max(1, _word_count(t)) for t in inputs)
        return {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _chat(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise _ApiError(400, "request body must be a JSON object")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise _ApiError(400, "'model' is required", param="model")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _ApiError(400, "'messages' must be a non-empty list", param="messages")
        for message in messages:
            if not isinstance(message, dict) or "role" not in message:
                raise _ApiError(400, "each message needs a role", param="messages")
        fmt = body.get("response_format") or {}
        fmt_type = fmt.get("type") if isinstance(fmt, dict) else None
        if fmt_type not in (None, "text", "json_object", "json_schema"):
            raise _ApiError(400, f"unknown response_format type {fmt_type!r}")
        if fmt_type == "json_schema":
            if self.reject_json_schema:
                raise _ApiError(
                    400,
                    "response_format json_schema is not supported by this server",
                    param="response_format",
                )
            schema = fmt.get("json_schema")
            if not isinstance(schema, dict) or not isinstance(schema.get("name"), str):
                raise _ApiError(400, "json_schema needs a name and a schema")
        with self._lock:
            item: ScriptItem | None = self._replies.popleft() if self._replies else None
            self._completion_counter += 1
            number = self._completion_counter
        if item is None:
            item = self.responder if self.responder is not None else _default_reply
        reply = item(body) if callable(item) else item
        if isinstance(reply, str):
            reply = ChatReply(content=reply)
        content, finish = reply.content, reply.finish_reason
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
        if isinstance(max_tokens, int) and content is not None:
            words = content.split()
            if len(words) > max_tokens:
                content, finish = " ".join(words[:max_tokens]), "length"
        prompt = reply.prompt_tokens
        if prompt is None:
            prompt = sum(max(1, _word_count(str(m.get("content") or ""))) for m in messages)
        completion = reply.completion_tokens
        if completion is None:
            completion = _word_count(content or "")
        return {
            "id": f"chatcmpl-stub-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": reply.refusal},
                    "finish_reason": finish,
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


def _default_reply(body: dict[str, Any]) -> str:
    fmt = body.get("response_format") or {}
    if isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema"):
        return "{}"
    last = next(
        (m.get("content") for m in reversed(body["messages"]) if m.get("role") == "user"), ""
    )
    return f"stub reply to: {last}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    stub: OpenAIStubServer  # bound per server by OpenAIStubServer.start

    def log_message(self, format: str, *args: Any) -> None:  # quiet in tests
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        request = RecordedRequest(
            method=method,
            path=path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            received_at=time.monotonic(),
        )
        stub = self.stub
        fault = stub._record(request)
        if fault is not None and stub._sleep(fault.delay):
            self.close_connection = True
            return
        try:
            if fault is not None and fault.status is not None:
                payload = fault.body
                if payload is None:
                    payload = _error_body(fault.status, f"injected failure ({fault.status})")
                self._send(fault.status, payload, fault.headers)
                return
            if stub.api_key is not None and request.bearer != stub.api_key:
                self._send(
                    401, _error_body(401, "Incorrect API key provided", code="invalid_api_key")
                )
                return
            if raw and body is None:
                raise _ApiError(400, "request body is not valid JSON")
            answer = stub._answer(method, path, body)
            self._send(200, json.dumps(answer).encode())
        except _ApiError as exc:
            self._send(exc.status, _error_body(exc.status, exc.message, param=exc.param))
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            self.close_connection = True

    def _send(self, status: int, payload: bytes, headers: Mapping[str, str] = {}) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def _error_body(
    status: int, message: str, *, param: str | None = None, code: str | None = None
) -> bytes:
    kind = {
        400: "invalid_request_error",
        401: "invalid_request_error",
        404: "not_found_error",
        429: "rate_limit_error",
    }.get(status, "server_error")
    return json.dumps(
        {"error": {"message": message, "type": kind, "param": param, "code": code}}
    ).encode()
