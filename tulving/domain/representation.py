"""What an entry's vector stands for: its content, read in the context it was written in.

A turn like "Yes, it took me two years!" means nothing alone; the two turns written just
before it say what took two years. Each memory's vector therefore leans toward the turns
written just before it in the same event (the same partition and event time): it is the
unit-length sum of its own vector and ``context_weight`` times each of theirs
(:func:`tulving.application.plumbing.representation.mix`): 0.3 for a memory of up to
``CONTEXT_CHARS`` characters, none for a longer one, which stands on its own words. The
stored content never changes, only the vector.

Why a sum of vectors the model has already computed, and not a second model pass over the
context and the memory together (rule 2, the earlier rule): the second pass read the memory
again with up to 600 characters before it, so short turns cost about four times the
model's own embedding (LoCoMo ingest 0.24x the raw model, long texts 0.41x), for recall
the mix keeps within a point on LoCoMo (hybrid R@5 / R@10 / greedy cov@1000, tune | hold:
second pass 68.4/77.9/85.8 | 67.8/74.1/81.9, this mix 67.8/78.1/85.8 | 67.3/73.8/81.0;
``curate()`` at 1,000 tokens 85.3 | 81.3 against 84.6 | 80.6). Weights 0.4, 0.5, (0.4,
0.2) and a window of 3 measured no better on the tuning half.

Why none for a long memory: its neighbours are long too, and a share of two whole
neighbours pulls a long memory's vector toward their topics, while a long memory says what
it is about in its own words (a user's long message after a long assistant answer took the
answer's topic). Only a memory of up to ``CONTEXT_CHARS`` (450) characters takes its
neighbours. Picked on the tuning halves of both dev sets (hybrid R@10 and curate coverage;
held-back halves confirm), against the weight scaled by ``600 / length`` above 600
characters (the rule first kept) and other cut-offs:

| rule | LongMemEval_S hybrid R@10, tune | hold | curate cov@1000, tune | hold | LoCoMo hybrid R@5/R@10/cov@1000, tune | hold |
|---|---|---|---|---|---|---|
| scaled above 600 | 90.3 | 86.8 | 88.7 | 86.1 | 67.8/78.1/85.8 | 67.3/73.9/81.0 |
| none above 300 | 91.4 | 86.8 | 88.7 | 86.8 | 67.2/77.3/85.4 | 67.2/73.8/81.3 |
| none above 400 | 91.4 | 86.8 | 88.7 | 86.1 | | |
| none above 460 | 91.4 | 86.8 | 90.0 | 86.1 | 67.3/78.1/85.8 | 67.3/73.8/81.0 |

With ten LoCoMo turns a memory (about 1,300 characters, so no neighbours at all under
this rule) hybrid R@5/R@10/cov@1000 is 84.2/89.3/74.6 | 83.3/89.9/72.5 against
84.3/89.6/74.7 | 83.8/89.8/72.4 scaled: level. On LongMemEval the dense side alone gains
most (semantic R@10 73.9 scaled, 77.2 with this rule, 76.9 for plain vectors), and the
multi-session questions of the tuning half reach the dense and RRF baselines (87.5).

Only the dense side reads context: indexing the same window lexically measured no better
and lowered multi-hop and open-domain recall (many shared words, little new meaning).
"""

from __future__ import annotations

from tulving.domain.errors import ConfigError

#: Entries written just before an entry (same partition, same event time) whose vectors
#: are mixed into its own. 2 measured best on LoCoMo's tuning half (1 and 3 were worse
#: than 2, with the second pass and with the mix alike); 0 turns the idea off.
CONTEXT_WINDOW = 2
MAX_CONTEXT_WINDOW = 8
#: How much of each predecessor's vector is added to a memory's own (see the docstring).
CONTEXT_WEIGHT = 0.3
#: Up to this length (characters) a memory takes its neighbours at ``CONTEXT_WEIGHT``; a
#: longer one takes none (see the docstring).
CONTEXT_CHARS = 450


def context_weight(length: int) -> float:
    """The share of each predecessor's vector in the vector of a memory ``length``
    characters long (0 or unknown: the full weight)."""
    return CONTEXT_WEIGHT if length <= CONTEXT_CHARS else 0.0


def parse_writing(options: object) -> int:
    """The context window from ``options={"writing": {"context_window": N}}``."""
    if not isinstance(options, dict):
        raise ConfigError("options['writing'] must be a mapping")
    unknown = set(options) - {"context_window"}
    if unknown:
        raise ConfigError(f"unknown writing options: {', '.join(sorted(map(str, unknown)))}")
    window: object = options.get("context_window", CONTEXT_WINDOW)
    if isinstance(window, bool) or not isinstance(window, int) or not (
            0 <= window <= MAX_CONTEXT_WINDOW):
        raise ConfigError(
            f"writing.context_window must be an integer in 0..{MAX_CONTEXT_WINDOW}, "
            f"got {window!r}")
    return window
