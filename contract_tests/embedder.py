"""Contract suite for the ``Embedder`` port (``tulving.ports.embedder``).

Subclass and supply one fixture, ``embedder``, returning a ready embedder (class scope is
fine and saves reloading a model):

    from contract_tests.embedder import EmbedderContract

    class TestMyEmbedder(EmbedderContract):
        @pytest.fixture(scope="class")
        @classmethod
        def embedder(cls):
            return MyEmbedder()

Capability flags a subclass may override:

- ``semantic`` (default True): paraphrases must score above unrelated text. Set False for
  lexical embedders (feature hashing), which still must rank shared words higher.
- ``query_matches_document`` (default True): ``embed_query(t)`` equals ``embed([t])[0]``.
  Set False for models that prefix queries ("query: ..."); then only closeness is checked.
- ``reads_long_text`` (default True): the end of a text longer than the model's window
  still shapes its vector (windows averaged, or a long window). Set False only for a model
  that cannot; search then misses what long memories say past their opening.
- ``paraphrase_margin`` (default 0.2): how much closer a paraphrase must be than an
  unrelated text. A model whose cosines are compressed into a narrow band (e5: unrelated
  pairs ~0.7, paraphrases ~0.9) declares a smaller one; the order must still hold.
- ``batch_tolerance`` (default 1e-4): max abs difference allowed between a text embedded
  alone and inside a padded batch (padding changes float rounding, not meaning).
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import numpy as np
import pytest

from tulving.domain.errors import TulvingError, ValidationError
from tulving.ports.embedder import Embedder

UNIT_TOLERANCE = 1e-4

#: Texts of very different lengths, so an implementation that sorts or buckets by length
#: and forgets to restore the input order is caught.
MIXED_TEXTS = [
    "short",
    "The deployment pipeline failed because the database migration timed out after ten minutes.",
    "Alice prefers dark mode.",
    " ".join(["The service retries failed requests with exponential backoff."] * 6),
    "ok",
    "Decision: we use PostgreSQL for the shared memory store and SQLite for local agents.",
    "🙂",
    "日本語のテキストも埋め込めるべきです。",
    "Remember that the quarterly report is due on Friday and needs the revenue figures.",
    "x",
]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def assert_unit_rows(matrix: np.ndarray, dimension: int, rows: int) -> None:
    assert isinstance(matrix, np.ndarray)
    assert matrix.dtype == np.float32
    assert matrix.shape == (rows, dimension)
    assert np.all(np.isfinite(matrix))
    if rows:
        norms = np.linalg.norm(matrix.astype(np.float64), axis=1)
        assert np.allclose(norms, 1.0, atol=UNIT_TOLERANCE), norms


class EmbedderContract:
    semantic: ClassVar[bool] = True
    query_matches_document: ClassVar[bool] = True
    batch_tolerance: ClassVar[float] = 1e-4
    reads_long_text: ClassVar[bool] = True
    paraphrase_margin: ClassVar[float] = 0.2

    @pytest.fixture
    def embedder(self) -> Any:  # pragma: no cover - the subclass supplies it
        raise NotImplementedError("a contract subclass must supply the `embedder` fixture")

    # -- identity -------------------------------------------------------------------------

    def test_satisfies_the_protocol(self, embedder: Any) -> None:
        assert isinstance(embedder, Embedder)

    def test_model_id_and_dimension_are_stable_attributes(self, embedder: Any) -> None:
        model_id, dimension = embedder.model_id, embedder.dimension
        assert isinstance(model_id, str) and model_id.strip() == model_id and model_id
        assert isinstance(dimension, int) and not isinstance(dimension, bool) and dimension > 0
        embedder.embed(["touch the model so a lazy one loads"])
        assert embedder.model_id == model_id
        assert embedder.dimension == dimension

    # -- shape, dtype, norm -----------------------------------------------------------------

    def test_embed_shape_dtype_and_unit_norm(self, embedder: Any) -> None:
        out = embedder.embed(MIXED_TEXTS)
        assert_unit_rows(out, embedder.dimension, len(MIXED_TEXTS))

    def test_empty_input_gives_zero_rows(self, embedder: Any) -> None:
        assert_unit_rows(embedder.embed([]), embedder.dimension, 0)

    def test_accepts_a_tuple(self, embedder: Any) -> None:
        assert_unit_rows(embedder.embed(("one", "two")), embedder.dimension, 2)

    def test_empty_string_is_a_unit_row_or_a_validation_error(self, embedder: Any) -> None:
        """The port does not define "" ; an embedder may refuse it, but only with a typed error."""
        try:
            out = embedder.embed([""])
        except ValidationError:
            return
        assert_unit_rows(out, embedder.dimension, 1)

    @pytest.mark.parametrize(
        "text",
        [
            "naïve café — déjà vu, Ünïcödé ß",
            "中文文本的嵌入测试，包括标点符号。",
            "한국어 문장도 처리해야 합니다",
            "emoji only 🚀🔥🙂👍🏽 and a flag 🇯🇵",
            "\t  leading and trailing whitespace \n",
            "null-free control chars \x01\x02 and a tab\tinside",
        ],
    )
    def test_unicode_cjk_and_emoji(self, embedder: Any, text: str) -> None:
        assert_unit_rows(embedder.embed([text]), embedder.dimension, 1)

    def test_very_long_text_is_embedded_not_refused(self, embedder: Any) -> None:
        long_text = " ".join(f"word{i % 97} sentence number {i}." for i in range(5000))
        assert len(long_text) > 100_000
        assert_unit_rows(embedder.embed([long_text]), embedder.dimension, 1)

    def test_the_end_of_a_long_text_counts(self, embedder: Any) -> None:
        """A memory of ~900 tokens (a long assistant answer) must be findable by what it
        says at its end: a model with a short window reads it in windows (the local
        MiniLM) or has a long one (API models); cutting it off at the window fails here."""
        if not self.reads_long_text:
            pytest.skip("this embedder declares that it reads only the start of a text")
        opening = " ".join(
            f"Step {i}: the release checklist asks the team to review item {i} carefully."
            for i in range(60))
        parrot, budget = embedder.embed([
            opening + " Finally, the lighthouse keeper adopted a green parrot named Captain.",
            opening + " Finally, the board approved the quarterly budget for the new office.",
        ])
        query = embedder.embed_query("lighthouse keeper green parrot Captain")
        assert _cos(query, parrot) > _cos(query, budget)

    # -- determinism and batching -------------------------------------------------------------

    def test_deterministic_for_the_same_input(self, embedder: Any) -> None:
        first = embedder.embed(MIXED_TEXTS)
        second = embedder.embed(MIXED_TEXTS)
        assert np.allclose(first, second, atol=1e-6)

    def test_batch_rows_equal_single_embeddings_in_input_order(self, embedder: Any) -> None:
        batch = embedder.embed(MIXED_TEXTS)
        for row, text in enumerate(MIXED_TEXTS):
            alone = embedder.embed([text])[0]
            assert np.max(np.abs(batch[row] - alone)) <= self.batch_tolerance, (row, text)

    def test_large_batch_keeps_order(self, embedder: Any) -> None:
        """More texts than any sensible internal batch, of shuffled lengths."""
        rng = np.random.default_rng(7)
        texts = [
            f"note {i}: " + " ".join(["alpha", "beta", "gamma", "delta"][: 1 + i % 4] * (1 + i % 9))
            for i in range(150)
        ]
        order = rng.permutation(len(texts))
        texts = [texts[i] for i in order]
        out = embedder.embed(texts)
        assert_unit_rows(out, embedder.dimension, len(texts))
        for row in (0, 1, 63, 64, 65, 127, 128, 149):
            alone = embedder.embed([texts[row]])[0]
            assert np.max(np.abs(out[row] - alone)) <= self.batch_tolerance, row

    def test_duplicate_texts_give_identical_rows(self, embedder: Any) -> None:
        out = embedder.embed(["same text", "other text", "same text"])
        assert np.allclose(out[0], out[2], atol=self.batch_tolerance)

    def test_concurrent_calls_agree_with_sequential_ones(self, embedder: Any) -> None:
        texts = [f"concurrent text number {i} about topic {i % 5}" for i in range(24)]
        expected = embedder.embed(texts)
        results: dict[int, np.ndarray] = {}
        errors: list[BaseException] = []

        def work(slot: int) -> None:
            try:
                results[slot] = embedder.embed(texts)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not errors, errors
        assert len(results) == 4
        for got in results.values():
            assert np.allclose(got, expected, atol=self.batch_tolerance)

    # -- queries --------------------------------------------------------------------------

    def test_embed_query_is_one_unit_vector(self, embedder: Any) -> None:
        vector = embedder.embed_query("what did we decide about the database?")
        assert isinstance(vector, np.ndarray) and vector.dtype == np.float32
        assert vector.shape == (embedder.dimension,)
        assert abs(float(np.linalg.norm(vector)) - 1.0) <= UNIT_TOLERANCE

    def test_embed_query_matches_document_space(self, embedder: Any) -> None:
        text = "the database migration failed twice"
        query, document = embedder.embed_query(text), embedder.embed([text])[0]
        if self.query_matches_document:
            assert np.allclose(query, document, atol=self.batch_tolerance)
        else:
            assert _cos(query, document) > 0.5

    # -- bad input ------------------------------------------------------------------------

    def test_a_bare_string_is_refused(self, embedder: Any) -> None:
        with pytest.raises(TulvingError):
            embedder.embed("not a list")

    @pytest.mark.parametrize("bad", [[None], ["ok", 3], [b"bytes"]])
    def test_non_string_items_are_refused(self, embedder: Any, bad: list[Any]) -> None:
        with pytest.raises(TulvingError):
            embedder.embed(bad)

    def test_non_string_query_is_refused(self, embedder: Any) -> None:
        with pytest.raises(TulvingError):
            embedder.embed_query(None)

    # -- meaning --------------------------------------------------------------------------

    def test_shared_words_score_higher_than_unrelated_text(self, embedder: Any) -> None:
        anchor, near, far = embedder.embed(
            [
                "the database migration failed during deployment",
                "database migration failed again during the night deployment",
                "my grandmother grows tomatoes in her garden",
            ]
        )
        assert _cos(anchor, near) > _cos(anchor, far) + 0.1

    def test_paraphrases_score_higher_than_unrelated_text(self, embedder: Any) -> None:
        if not self.semantic:
            pytest.skip("lexical embedder: meaning without shared words is not expected")
        pairs = [
            (
                "A cat is sleeping on the sofa.",
                "The kitten naps on the couch.",
                "Interest rates rose by half a percent.",
            ),
            (
                "How do I reset my password?",
                "I forgot my login credentials.",
                "The train to Berlin leaves at noon.",
            ),
            (
                "The server crashed overnight.",
                "Our backend went down during the night.",
                "She painted the fence blue.",
            ),
        ]
        for anchor, paraphrase, unrelated in pairs:
            a, p, u = embedder.embed([anchor, paraphrase, unrelated])
            assert _cos(a, p) > _cos(a, u) + self.paraphrase_margin, (
                anchor, _cos(a, p), _cos(a, u))
