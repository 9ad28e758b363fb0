"""What an entry's vector stands for: its content, read in the context it was written in.

A turn like "Yes, it took me two years!" means nothing alone; the two turns written just
before it say what took two years. Each memory's vector therefore leans toward the turns
written just before it in the same event (the same partition and event time): it is the
unit-length sum of its own vector and ``CONTEXT_WEIGHT`` times each of theirs
(:func:`tulving.application.plumbing.representation.mix`). The stored content never
changes, only the vector.

Why a sum of vectors the model has already computed, and not a second model pass over the
context and the memory together (rule 2, until issue 35): the second pass read the memory
again with up to 600 characters before it, so short turns cost about four times the
model's own embedding (LoCoMo ingest 0.24x the raw model, long texts 0.41x), for recall
the mix keeps within a point on LoCoMo (hybrid R@5 / R@10 / greedy cov@1000, tune | hold:
second pass 68.4/77.9/85.8 | 67.8/74.1/81.9, this mix 67.8/78.1/85.8 | 67.3/73.8/81.0;
``curate()`` at 1,000 tokens 85.3 | 81.3 against 84.6 | 80.6). Weights 0.4, 0.5, (0.4,
0.2) and a window of 3 measured no better on the tuning half.

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
