"""The features of the learned ranker: one row per candidate of a hybrid pool.

Every number here is something search computes anyway (the engines' scores and ranks,
their agreement, the hand-tuned fused score, who was recorded with whom) or costs a pass
over the candidates' text (query words covered, names, time words, length). The same
function builds the rows the training script dumps (``benchmarks/train_ranker.py``) and the
rows search scores, so the model sees at serve time exactly what it was fitted on (a test
checks it on a real store).

Query-level columns (how flat the lexical list is, how many memories matched its words,
how close the best vector is) are the same for every candidate of a query: alone they only
move a query's probabilities together, which is what makes scores comparable across
queries; multiplied with a candidate's own scores (the ``x_`` columns) they let one model
trust the lexical list less when its words are common or its scores flat, instead of a
separate gate.

``FEATURES`` is the fixed, ordered list a model file must name; ``GROUPS`` partitions it
for the ablation table.
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import attrs
import numpy as np

from tulving.domain.entry import Brief
from tulving.domain.query import ScoredId
from tulving.domain.query_analysis import QueryAnalysis
from tulving.domain.temporal import mentions_relative_time

#: Feature groups, in column order (a model file lists the names it was fitted on).
GROUPS: dict[str, tuple[str, ...]] = {
    "lexical": ("lex_in", "lex_ratio"),
    "dense": ("cos", "cos_gap", "cos_ratio"),
    "agreement": ("both", "evidence"),
    "query": ("q_terms", "q_lex_flat", "q_lex_top", "q_cos_top", "q_cos_flat",
              "x_lex_flat", "x_lex_top", "x_dense_flat", "x_cos_top"),
    "words": ("coverage", "rare_coverage"),
    "names": ("names", "names_missed"),
    "time": ("q_when", "when_match", "recency"),
    "session": ("same_time_best", "same_time_count", "follows_hit", "precedes_hit",
                "added"),
    "length": ("length", "length_rel", "asks", "q_pool_length", "x_asks_long",
               "x_length_long"),
}
FEATURES: tuple[str, ...] = tuple(name for group in GROUPS.values() for name in group)
_COLUMN = {name: i for i, name in enumerate(FEATURES)}
_SUFFIXES = ("ing", "ed", "es", "s", "ly")
#: The core's median length column (log of characters / 10) above which a pool counts
#: as one of long memories (~250 characters), for the ``x_..._long`` columns.
LONG_POOL = 0.55
#: Memories whose words (and time words) are remembered between queries.
TEXTS_KEPT = 4096
#: Punctuation (apostrophes included: "caroline's" holds "caroline") read as spaces.
_SPACES = str.maketrans({c: " " for c in string.punctuation + "’‘“”…–—"})


@attrs.frozen
class Pool:
    """A query's candidates (fused order, then neighbours brought along) and their rows."""

    ids: tuple[str, ...]
    matrix: Any  # numpy float64, len(ids) x len(FEATURES)
    fused: Mapping[str, float]
    cosines: Mapping[str, float]

    def column(self, name: str) -> Any:
        return self.matrix[:, _COLUMN[name]]


def stem(word: str) -> str:
    """A light suffix strip so "painted" meets "paint" (the engines stem alike)."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=TEXTS_KEPT)
def _words_of(content: str) -> str:
    """A memory's distinct lower-cased words, each between newlines (``"\nword\n"``
    finds a word, ``"\nprefix"`` a word that starts so: substring tests in C);
    remembered by content, since the same memories come back query after query."""
    return "\n" + "\n".join(set(content.casefold().translate(_SPACES).split())) + "\n"


@lru_cache(maxsize=TEXTS_KEPT)
def _says_when(content: str) -> bool:
    return mentions_relative_time(content)


def _starts_of(texts: Sequence[str], prefixes: Sequence[str], whole: bool = False) -> Any:
    """A 0/1 matrix: does text i hold a word that starts with prefix j (``whole``: that
    is prefix j)?"""
    held = [_words_of(t) for t in texts]
    found = np.zeros((len(texts), len(prefixes)), dtype=np.float64)
    for j, prefix in enumerate(prefixes):
        probe = "\n" + prefix + ("\n" if whole else "")
        found[:, j] = [probe in words_of for words_of in held]
    return found


def _flatness(hits: Sequence[ScoredId], at: int = 10) -> float:
    """Score at ``at`` over the top score: 1 when the list is flat, 0 when one hit stands
    out (or the list is empty)."""
    if not hits or hits[0].score <= 0:
        return 0.0
    deep = hits[min(at, len(hits)) - 1].score
    return max(0.0, min(1.0, deep / hits[0].score))


def query_level(
    terms: Sequence[str], lexical: Sequence[ScoredId], semantic: Sequence[ScoredId],
    top_cosine: float,
) -> dict[str, float]:
    lex_flat = _flatness(lexical)
    top = lexical[0].score if lexical else 0.0
    cos_flat = _flatness(semantic)
    return {
        "q_terms": math.log1p(len(terms)),
        "q_lex_flat": lex_flat,
        # bm25 of the best hit per query word: high when the words are rare in the store
        "q_lex_top": math.log1p(max(0.0, top) / max(1, len(terms))),
        "q_cos_top": top_cosine,
        "q_cos_flat": cos_flat,
    }


def build(
    terms: Sequence[str],
    analysis: QueryAnalysis,
    lexical: Sequence[ScoredId],
    semantic: Sequence[ScoredId],
    fused: Sequence[ScoredId],
    added: Sequence[str],
    cosines: Mapping[str, float],
    briefs: Mapping[str, Brief],
    around: Mapping[str, Sequence[str]],
    span: int,
    lexical_span: int,
) -> Pool:
    """The rows of the candidates ``fused`` (best first by the hand-tuned score) plus
    ``added`` (neighbours of the best, not found by either engine).

    What a row says about the pool (the best cosine, how rare a query word is among the
    candidates, the oldest and newest event time, who else was recorded at a candidate's
    time) is counted over the *core*: the dense engine's first ``span`` hits, the
    lexical engine's first ``lexical_span`` (its scores reach deeper usefully) and the
    neighbours of the best; a hit deeper in an engine's list counts as not found by it.
    Asking for more results then adds rows at the bottom without changing the rows, or
    the scores, of the best.

    ``cosines``: the query's cosine with each candidate's stored vector (candidates
    without one fall back to the index's score, else 0); ``briefs``: the candidates'
    text and event time (a candidate missing here is gone: it gets no text features);
    ``around``: for the best few fused hits, the entries written just before and after.
    """
    ids = [h.id for h in fused] + list(added)
    fused_score = {h.id: h.score for h in fused}
    index_cos = {h.id: h.score for h in semantic}
    cos = np.array([cosines.get(i, index_cos.get(i, 0.0)) for i in ids], dtype=np.float64)
    # only each engine's first ``span`` hits count as found by it: deeper hits (a larger
    # top_k, curate's wider pool) get the rows they would get if not asked for
    lex_raw = {h.id: h.score for h in lexical[:lexical_span]}
    dense_found = {h.id for h in semantic[:span]}
    near = {i for others in around.values() for i in others}
    core = np.array([i in lex_raw or i in dense_found or i in near for i in ids], dtype=bool)
    top_cos = float(cos[core].max()) if core.any() else 0.0
    lex_top = lexical[0].score if lexical else 0.0
    rows = np.zeros((len(ids), len(FEATURES)), dtype=np.float64)

    def put(name: str, values: Any) -> None:
        rows[:, _COLUMN[name]] = values

    q = query_level(terms, lexical, semantic, top_cos)
    for name, value in q.items():
        put(name, value)
    # Each engine's score over its best: unlike min-max scaling, the weakest of two
    # equal matches is not pushed to 0, and the column means the same in any pool.
    lex_in = np.array([i in lex_raw for i in ids], dtype=np.float64)
    lex_ratio = np.array([max(0.0, lex_raw.get(i, 0.0) / lex_top) if lex_top > 0 else 0.0
                          for i in ids])
    cos_ratio = np.minimum(np.maximum(cos, 0.0) / top_cos, 1.0) if top_cos > 0 else (
        np.zeros(len(ids)))
    evidence = 0.5 * (lex_ratio + cos_ratio)
    put("lex_in", lex_in)
    put("lex_ratio", lex_ratio)
    put("cos", cos)
    put("cos_gap", np.minimum(cos - top_cos, 0.0))
    put("cos_ratio", cos_ratio)
    put("both", lex_in * np.array([i in dense_found for i in ids], dtype=np.float64))
    put("evidence", evidence)
    put("x_lex_flat", lex_ratio * q["q_lex_flat"])
    put("x_lex_top", lex_ratio * q["q_lex_top"])
    put("x_dense_flat", cos_ratio * q["q_cos_flat"])
    put("x_cos_top", np.minimum(cos - top_cos, 0.0) * q["q_cos_top"])
    put("q_when", float(analysis.asks_when))
    put("added", [float(i in near and i not in lex_raw and i not in dense_found)
                  for i in ids])
    # the best hit written just before a candidate (it may have asked what the candidate
    # answers), and just after it; ids sort in write order
    strength = dict(zip(ids, evidence.tolist(), strict=True))
    after_hit: dict[str, float] = {}
    before_hit: dict[str, float] = {}
    for lender, others in around.items():
        for other in others:
            side = after_hit if other > lender else before_hit
            side[other] = max(side.get(other, 0.0), strength.get(lender, 0.0))
    put("follows_hit", [after_hit.get(i, 0.0) for i in ids])
    put("precedes_hit", [before_hit.get(i, 0.0) for i in ids])

    # text columns: a candidate missing from ``briefs`` (gone since found) keeps zeros
    have = [r for r, i in enumerate(ids) if i in briefs]
    if not have:
        return Pool(tuple(ids), rows, fused_score, dict(zip(ids, cos.tolist(), strict=True)))
    texts = [briefs[ids[r]].content for r in have]
    # query words covered, each weighted by how rare it is among the candidates
    in_core = core[have]
    present = _starts_of(texts, [stem(t) for t in terms])
    if terms:
        rarity = np.log1p(in_core.sum() / (1.0 + present[in_core].sum(axis=0)))
        rows[have, _COLUMN["coverage"]] = present.mean(axis=1)
        rows[have, _COLUMN["rare_coverage"]] = present @ rarity / (rarity.sum() or 1.0)
    if analysis.entities:
        # the share of the names the query gives that the memory mentions, and the rest
        share = _starts_of(texts, analysis.entities, whole=True).mean(axis=1)
        rows[have, _COLUMN["names"]] = share
        rows[have, _COLUMN["names_missed"]] = 1.0 - share
    if analysis.asks_when:
        rows[have, _COLUMN["when_match"]] = [float(_says_when(t)) for t in texts]
    rows[have, _COLUMN["asks"]] = [float("?" in t) for t in texts]
    length = np.array([math.log1p(len(t)) / 10.0 for t in texts])
    rows[have, _COLUMN["length"]] = length
    # against the core's median: in a history of long answers and short questions a
    # long memory is the usual one, among short turns the unusual one
    pool_length = float(np.median(length[in_core] if in_core.any() else length))
    rows[have, _COLUMN["length_rel"]] = length - pool_length
    # the store's kind, read off the core's typical length (0.49, ~130 characters, on
    # LoCoMo's conversation turns; 0.67, ~800, among LongMemEval's long answers):
    # whether a question or a long memory holds the answer differs between the two,
    # and these columns let one model say so (0 for pools of short memories)
    long_pool = max(0.0, pool_length - LONG_POOL) * 5.0
    rows[:, _COLUMN["q_pool_length"]] = pool_length
    rows[have, _COLUMN["x_asks_long"]] = rows[have, _COLUMN["asks"]] * long_pool
    rows[have, _COLUMN["x_length_long"]] = length * long_pool
    times = [briefs[ids[r]].valid_from.timestamp() for r in have]
    stamps = np.array(times)
    core_stamps = stamps[in_core] if in_core.any() else stamps
    oldest, width = float(core_stamps.min()), float(core_stamps.max() - core_stamps.min())
    rows[have, _COLUMN["recency"]] = (np.clip((stamps - oldest) / width, 0.0, 1.0)
                                      if width > 0 else 1.0)
    # the best evidence among the *other* core candidates recorded at the same time, and
    # how many there are: per event time, the best two core candidates and their count
    groups: dict[float, list[Any]] = {}
    for r, at, c in zip(have, times, in_core, strict=True):
        if c:
            group = groups.setdefault(at, [-1.0, -1, -1.0, 0])  # best, its row, second, n
            e = float(evidence[r])
            if e > group[0]:
                group[0], group[1], group[2] = e, r, group[0]
            elif e > group[2]:
                group[2] = e
            group[3] += 1
    best, count = [], []
    for r, at, c in zip(have, times, in_core, strict=True):
        mates = groups.get(at)
        if mates is None:
            best.append(0.0)
            count.append(0)
            continue
        top = mates[2] if mates[1] == r else mates[0]
        best.append(max(0.0, top))
        count.append(mates[3] - 1 if c else mates[3])
    rows[have, _COLUMN["same_time_best"]] = best
    rows[have, _COLUMN["same_time_count"]] = np.log1p(np.array(count, dtype=np.float64)) / 5.0
    return Pool(tuple(ids), rows, fused_score, dict(zip(ids, cos.tolist(), strict=True)))
