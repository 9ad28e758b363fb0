"""The knobs of hybrid retrieval, with the reason each default was kept.

Every idea is an ablation in ``benchmarks/locomo.py --ablation``: it stays on by default
only because switching it off lowered recall there.
"""

from __future__ import annotations

import attrs

from tulving.application.retrieval.ranker import DEFAULT_MODEL
from tulving.domain.errors import ConfigError
from tulving.domain.query_expansion import EXPANSION_WEIGHT
from tulving.domain.rerank import RerankRules

RANKERS = ("learned", "fused")


@attrs.frozen
class SearchOptions:
    """Knobs of hybrid retrieval; the defaults are what measured best (coarse values).

    - ``ranker``: ``"fused"`` (the default) is the hand-tuned fusion below (score
      fusion, boosts, event-time context, neighbours); ``"learned"`` orders the candidate
      pool by a small model fitted on the tuning halves of the dev sets
      (:mod:`tulving.application.retrieval.ranker`; its output, a probability of
      relevance, is the score, comparable across queries). The learned ranker is not the
      default because it does not win on both held-back halves: LoCoMo hold R@10 73.5 ->
      76.3, but LongMemEval_S hold R@10 86.8 -> 84.7 and the whole LongMemEval_S dev set
      loses at every figure (docs/benchmarks.md). ``ranker_model`` names the model file.
      ``lexical_pool``: the learned ranker takes at least this many lexical candidates
      (bm25 still tells evidence apart below the first 50: R@10 1.5 points higher on
      the tuning half than with 50), and only these count as found lexically, so a
      deeper ``top_k`` never changes the best hits' rows.
      The learned ranker reads ``pool``, ``neighbour_depth``, ``fold_derived`` and
      ``mmr``; the boosts are among its features. With LLM query expansion (an expander)
      hybrid search uses the hand-tuned fusion: the model was fitted on the question's
      own two lists, and an expansion's lists are more evidence it has never seen (when the
      model gives no expansion, the learned ranker orders as without an expander).
    - ``pool``: candidates taken from each engine before fusion (more when ``2 * top_k``
      is more), and the depth over which score fusion scales each engine's list. The
      span is fixed so that the order at the top does not depend on how many results
      were asked for (:func:`tulving.domain.fusion.blend`). 50 and 100 measured level on
      LoCoMo's held-out half (100 was 1.7 points of R@10 higher on the tuning half, where
      the other knobs were tuned at that depth) and 50 is ~1 ms cheaper at 100k entries.
    - ``fusion``: ``"rrf"`` (rank fusion) or ``"score"`` (min-max scaled score sum).
    - ``lexical_weight`` / ``semantic_weight``: weights of the two lists.
    - ``rrf_k``: the RRF constant; smaller trusts the top of each list more.
    - ``entity_boost``: a candidate that mentions the names the query names gets its
      score multiplied by ``1 + entity_boost * (share of names mentioned)``.
    - ``temporal_boost``: for "when" questions, candidates that place something in time
      ("last Friday", "two weeks ago") get ``1 + temporal_boost``.
    - ``context_share``: a candidate gains this share of the best score among the other
      candidates recorded at the same event time (``valid_from``): memories written
      together (one conversation session, one task) answer each other.
    - ``rerank_depth``: how many fused candidates the boosts look at.
    - ``neighbour_share`` / ``neighbour_depth``: the entries written just before and
      after each of the ``neighbour_depth`` best candidates at the same event time (the
      turn that asked, the turn that answered) score at least this share of its score,
      fetched if they were not candidates (``Storage.adjacent``).
    - ``fold_derived``: a memory derived from exactly one other (``source_entry_ids``, as
      ``remember()`` links a fact to the turn it was read from) leaves the list while that
      source is visible: the source stands for both at its own rank (one piece of
      evidence, one slot).
    - ``mmr``: maximal marginal relevance over the ``rerank_depth`` best (word overlap;
      :func:`tulving.domain.rerank.diversified`); 1.0 leaves the order alone.
    - ``calibrated`` / ``strong_depth`` / ``strong_compute``: the best ``strong_depth``
      fused candidates are scored by a logistic map of their fused score (over the
      best), their cosine with the query and the head's best cosine
      (:mod:`tulving.domain.strong_fusion`, :mod:`.calibration`): a probability of
      relevance, comparable across queries. Without a strong tier the map reads the fast
      encoder's best cosine only and keeps the fused order; with one
      (``options={"search": {"strong": "mpnet"}}``) each candidate's strong cosine
      enters too and re-orders the head. Of the head, at most ``strong_compute``
      candidates without a stored strong vector are encoded on demand.
    - ``expansion_weight``: used only when the searcher has an expander (an LLM and
      ``search.llm_expansion``; the defaults need no LLM). Hybrid search then also asks
      the model for words a matching memory would use and one memory that would answer
      (:mod:`tulving.domain.query_expansion`): the keywords are one more lexical list,
      the answer one more dense list, each at the engine's weight times this.
    """

    ranker: str = "fused"
    ranker_model: str = DEFAULT_MODEL
    lexical_pool: int = 100
    ranker_neighbour_depth: int = 10
    pool: int = 50
    fusion: str = "score"
    lexical_weight: float = 1.0
    semantic_weight: float = 0.7
    rrf_k: int = 60
    entity_boost: float = 0.3
    temporal_boost: float = 0.3
    context_share: float = 0.3
    rerank_depth: int = 50
    neighbour_share: float = 0.5
    neighbour_depth: int = 10
    fold_derived: bool = True
    expansion_weight: float = EXPANSION_WEIGHT
    mmr: float = 1.0
    calibrated: bool = True
    strong_depth: int = 30
    strong_compute: int = 30

    def __attrs_post_init__(self) -> None:
        if self.ranker not in RANKERS:
            raise ConfigError(f"unknown search ranker {self.ranker!r}; use one of "
                              f"{', '.join(RANKERS)}")

    @property
    def refines(self) -> bool:
        return bool(self.entity_boost or self.temporal_boost or self.context_share
                    or self.fold_derived)

    @classmethod
    def fused(cls) -> SearchOptions:
        """The hand-tuned fusion (the default)."""
        return cls(ranker="fused")

    @classmethod
    def learned(cls) -> SearchOptions:
        """The learned ranker (``search.ranker = "learned"``): scores are probabilities."""
        return cls(ranker="learned")

    @classmethod
    def ablations(cls) -> dict[str, SearchOptions]:
        """The hand-tuned fusion with one idea switched off at a time (for the benchmark)."""
        default = cls.fused()
        return {
            "plain RRF (baseline)": cls.plain(),
            "hand-tuned fusion": default,
            "- score fusion (RRF k=60)": attrs.evolve(default, fusion="rrf"),
            "- lexical weighting (1:1)": attrs.evolve(default, semantic_weight=1.0),
            "- entity boost": attrs.evolve(default, entity_boost=0.0),
            "- temporal boost": attrs.evolve(default, temporal_boost=0.0),
            "- event-time context": attrs.evolve(default, context_share=0.0),
            "- neighbours": attrs.evolve(default, neighbour_share=0.0),
        }

    @classmethod
    def plain(cls) -> SearchOptions:
        """Unweighted RRF (k=60) of the two engines, nothing else: the baseline."""
        return cls(ranker="fused", pool=50, fusion="rrf", lexical_weight=1.0, semantic_weight=1.0, rrf_k=60,
                   entity_boost=0.0, temporal_boost=0.0, context_share=0.0,
                   neighbour_share=0.0, fold_derived=False)

    @property
    def rerank_rules(self) -> RerankRules:
        return RerankRules(entity_boost=self.entity_boost, temporal_boost=self.temporal_boost,
                           context_share=self.context_share)
