"""The openai embedder through the official client against the stub server on 127.0.0.1."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from tulving.adapters.embedders.openai import OpenAIEmbedder, create
from tulving.domain.errors import ConfigError, EmbedderError, SecurityError
from tulving.plugins import builtin
from tulving.plugins.registry import AdapterContext, Registry
from tulving.ports.embedder import Embedder
from tulving.testing.openai_server import OpenAIStubServer, stub_embedding

KEY_ENV = "TULVING_TEST_EMBED_KEY"
KEY = "sk-test-embedder-0123456789"
FAST = {"timeout": 2.0, "max_retries": 2, "retry_backoff": 0.01, "max_retry_delay": 0.05}


@pytest.fixture(scope="module")
def module_server() -> Iterator[OpenAIStubServer]:
    with OpenAIStubServer(default_dimension=16) as server:
        yield server


@pytest.fixture
def server(module_server: OpenAIStubServer) -> OpenAIStubServer:
    module_server.clear_faults()
    module_server.clear_requests()
    return module_server


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY_ENV


def make(server: OpenAIStubServer, **options: Any) -> OpenAIEmbedder:
    settings: dict[str, Any] = {
        "model": "stub-embed",
        "base_url": server.base_url,
        "api_key_env": KEY_ENV,
        **FAST,
    }
    settings.update(options)
    return create(AdapterContext(), **settings)


def expected(texts: list[str], dimension: int, model: str = "stub-embed") -> np.ndarray:
    rows = np.array([stub_embedding(t, dimension, model) for t in texts], dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


# -- vectors ---------------------------------------------------------------------------


def test_embeds_unit_float32_rows_matching_the_server(server, key_env) -> None:
    embedder = make(server)
    texts = ["the deploy uses blue-green releases", "cats sleep a lot", "blue-green deploys"]
    vectors = embedder.embed(texts)
    assert isinstance(embedder, Embedder)
    assert vectors.shape == (3, 16) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(vectors, expected(texts, 16), atol=1e-6)
    body = server.requests_to("/embeddings")[0].body
    assert body["input"] == texts and body["model"] == "stub-embed"
    assert "dimensions" not in body


def test_embed_query_is_one_row(server, key_env) -> None:
    embedder = make(server, dimensions=8)
    query = embedder.embed_query("blue-green deploys")
    assert query.shape == (8,) and query.dtype == np.float32
    np.testing.assert_allclose(query, expected(["blue-green deploys"], 8)[0], atol=1e-6)


def test_prefixes_are_sent_for_queries_and_documents(server, key_env) -> None:
    embedder = make(server, query_prefix="search_query: ", document_prefix="search_document: ")
    embedder.embed_query("auth")
    embedder.embed(["auth refactor"])
    sent = [r.body["input"] for r in server.requests_to("/embeddings")]
    assert sent == [["search_query: auth"], ["search_document: auth refactor"]]


def test_dimensions_option_is_sent_and_names_the_space(server, key_env) -> None:
    embedder = make(server, dimensions=12)
    assert embedder.dimension == 12 and server.requests == []  # no request needed
    assert embedder.model_id == "openai:stub-embed@12"
    assert embedder.embed(["x y"]).shape == (1, 12)
    assert server.requests[0].body["dimensions"] == 12


def test_model_id_does_not_depend_on_the_host(server, key_env) -> None:
    here = make(server)
    elsewhere = make(server, base_url="http://localhost:9/v1")
    assert here.model_id == elsewhere.model_id == "openai:stub-embed"
    assert make(server, model_id="ollama-box-2:nomic").model_id == "ollama-box-2:nomic"


def test_unknown_model_dimension_costs_one_probe_then_is_cached(server, key_env) -> None:
    embedder = make(server)
    assert server.requests == []  # the constructor is cheap
    assert embedder.dimension == 16
    assert embedder.dimension == 16
    assert len(server.requests) == 1


def test_known_openai_model_needs_no_probe(server, key_env) -> None:
    embedder = make(server, model="text-embedding-3-small")
    assert embedder.dimension == 1536 and server.requests == []
    assert embedder.model_id == "openai:text-embedding-3-small"


def test_server_dimension_disagreeing_with_the_expected_one_is_an_error(key_env) -> None:
    with OpenAIStubServer(model_dimensions={"text-embedding-3-small": 8}) as odd:
        embedder = make(odd, model="text-embedding-3-small")
        with pytest.raises(EmbedderError, match="8-dimensional"):
            embedder.embed(["hello"])


def test_empty_list_and_empty_strings(server, key_env) -> None:
    embedder = make(server, dimensions=8)
    assert embedder.embed([]).shape == (0, 8)
    assert server.requests == []
    vectors = embedder.embed(["", "words"])  # OpenAI rejects "", the adapter sends " "
    assert vectors.shape == (2, 8)
    assert server.requests[0].body["input"] == [" ", "words"]


def test_batching_splits_large_inputs(server, key_env) -> None:
    texts = [f"note number {i} about topic {i % 3}" for i in range(10)]
    batched = make(server, batch_size=3).embed(texts)
    sizes = [len(r.body["input"]) for r in server.requests_to("/embeddings")]
    assert sizes == [3, 3, 3, 1]
    flat = [t for r in server.requests_to("/embeddings") for t in r.body["input"]]
    assert flat == texts  # order preserved across batches
    np.testing.assert_allclose(batched, expected(texts, 16), atol=1e-6)


def test_concurrent_callers_get_their_own_vectors(server, key_env) -> None:
    embedder = make(server, dimensions=8)
    results: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        results[i] = embedder.embed([f"thread {i} text"])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    for i in range(6):
        np.testing.assert_allclose(results[i], expected([f"thread {i} text"], 8), atol=1e-6)


# -- failures --------------------------------------------------------------------------


def test_retry_after_two_500s_succeeds(server, key_env) -> None:
    server.fail_next(2, status=500)
    vectors = make(server, dimensions=8).embed(["resilient"])
    assert vectors.shape == (1, 8)
    assert len(server.requests_to("/embeddings")) == 3


def test_persistent_500_raises_after_the_retries(server, key_env) -> None:
    server.fail_next(10, status=503)
    with pytest.raises(EmbedderError, match=r"after 3 attempts: HTTP 503"):
        make(server, dimensions=8, max_retries=2).embed(["doomed"])
    assert len(server.requests) == 3


def test_429_retry_after_is_honoured(server, key_env) -> None:
    server.fail_next(1, status=429, retry_after=0.4)
    make(server, dimensions=8).embed(["rate limited"])
    first, second = server.requests_to("/embeddings")
    # backoff alone would wait ~10 ms; the server asked for 400 ms
    assert second.received_at - first.received_at >= 0.38


def test_retry_after_beyond_the_cap_fails_at_once(server, key_env) -> None:
    server.fail_next(1, status=429, retry_after=3600)
    with pytest.raises(EmbedderError, match="retry after 3600s"):
        make(server, dimensions=8).embed(["later"])
    assert len(server.requests) == 1


def test_slow_server_gives_embedder_error_in_bounded_time(server, key_env) -> None:
    server.delay_next(5, seconds=10)
    embedder = make(server, dimensions=8, timeout=0.3, max_retries=1)
    started = time.monotonic()
    with pytest.raises(EmbedderError, match="timeout"):
        embedder.embed(["slow"])
    elapsed = time.monotonic() - started
    assert elapsed < 3.0  # 2 attempts x 0.3 s + backoff, far from the 10 s delay
    assert len(server.requests) == 2


def test_garbled_body_is_retried_then_reported(server, key_env) -> None:
    server.garble_next(1)
    assert make(server, dimensions=8).embed(["ok"]).shape == (1, 8)
    server.clear_requests()
    server.garble_next(5)
    with pytest.raises(EmbedderError, match="malformed response"):
        make(server, dimensions=8, max_retries=1).embed(["garbage"])
    assert len(server.requests) == 2


def test_client_errors_are_not_retried(server, key_env) -> None:
    server.fail_next(1, status=404)
    with pytest.raises(EmbedderError, match="HTTP 404"):
        make(server, dimensions=8).embed(["missing model"])
    assert len(server.requests) == 1


def test_bad_input_is_rejected_without_a_request(server, key_env) -> None:
    embedder = make(server, dimensions=8)
    with pytest.raises(EmbedderError):
        embedder.embed("a single string")  # type: ignore[arg-type]
    with pytest.raises(EmbedderError):
        embedder.embed(["fine", 42])  # type: ignore[list-item]
    with pytest.raises(EmbedderError):
        embedder.embed_query(None)  # type: ignore[arg-type]
    assert server.requests == []


# -- keys and configuration ------------------------------------------------------------


def test_key_from_the_environment_is_the_bearer_token(server, key_env) -> None:
    embedder = make(server, dimensions=8)
    embedder.embed(["who am i"])
    assert server.requests[0].bearer == KEY
    assert KEY not in repr(embedder)


def test_server_refusing_the_key_gives_a_clear_error_without_the_key(key_env) -> None:
    with OpenAIStubServer(api_key="sk-other") as strict:
        with pytest.raises(EmbedderError, match="HTTP 401") as info:
            make(strict, dimensions=8).embed(["hi"])
        assert KEY not in str(info.value)
        assert len(strict.requests) == 1


def test_inline_key_is_refused(server) -> None:
    with pytest.raises(SecurityError, match="inline api_key"):
        make(server, api_key="sk-inline")


def test_missing_key_is_an_error_for_remote_servers(monkeypatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ConfigError, match=KEY_ENV):
        create(AdapterContext(), base_url="https://api.example.invalid/v1", api_key_env=KEY_ENV)
    with pytest.raises(ConfigError, match=KEY_ENV):
        create(AdapterContext(), api_key_env=KEY_ENV)  # api.openai.com


def test_missing_key_is_allowed_on_loopback(server, monkeypatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    make(server, dimensions=8).embed(["local"])
    assert server.requests[0].bearer  # a placeholder, not nothing


@pytest.mark.parametrize(
    "options",
    [
        {"batch_size": 0},
        {"dimensions": -1},
        {"dimensions": True},
        {"timeout": 0},
        {"max_retries": -1},
        {"base_url": "ftp://127.0.0.1/v1"},
        {"model": ""},
    ],
)
def test_bad_options_are_config_errors(server, key_env, options) -> None:
    with pytest.raises(ConfigError):
        make(server, **options)


def test_registered_under_its_plugin_name(server, key_env) -> None:
    registry = Registry()
    builtin.tulving_register_adapters(registry=registry)
    embedder = registry.create(
        "embedder",
        "openai",
        AdapterContext(),
        model="stub-embed",
        base_url=server.base_url,
        api_key_env=KEY_ENV,
        dimensions=8,
    )
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.embed(["via registry"]).shape == (1, 8)


# -- the stub server itself ------------------------------------------------------------


def test_stub_stops_promptly_with_a_request_in_flight() -> None:
    import urllib.error
    import urllib.request

    errors: list[BaseException] = []
    with OpenAIStubServer() as stub:
        stub.delay_next(1, seconds=30)

        def call() -> None:
            request = urllib.request.Request(
                f"{stub.base_url}/embeddings",
                data=b'{"model": "m", "input": "x"}',
                headers={"Content-Type": "application/json"},
            )
            try:
                urllib.request.urlopen(request, timeout=10).read()
            except (urllib.error.URLError, ConnectionError, OSError) as exc:
                errors.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        deadline = time.monotonic() + 5
        while not stub.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(stub.requests) == 1
        stopping = time.monotonic()
    caller.join(timeout=10)
    assert time.monotonic() - stopping < 5  # not the 30 s delay
    assert not caller.is_alive() and len(errors) == 1  # the client saw the connection drop
