"""What an entry's vector stands for: its content, read in the context it was written in.

A turn like "Yes, it took me two years!" means nothing alone; the two turns written just
before it say what took two years. Embedding each memory together with a short window of
what was written just before it in the same event (contextual retrieval, here without an
LLM) lets the dense engine find it by what it is about. The stored content never changes:
only the vector does, and it stays anchored in the memory's own words: the application
adds the plain vector to the contextual one (the contextual vector alone measured lower
on LoCoMo; :mod:`tulving.application.plumbing.representation`).

Only the dense side reads context: indexing the same window lexically measured no better
and lowered multi-hop and open-domain recall (many shared words, little new meaning).
"""

from __future__ import annotations

from collections.abc import Sequence

from tulving.domain.errors import ConfigError

#: Entries written just before an entry (same partition, same event time) whose text is
#: read with it. 2 measured best on LoCoMo's tuning half (1 and 3 were worse than 2);
#: 0 turns the idea off.
CONTEXT_WINDOW = 2
MAX_CONTEXT_WINDOW = 8


#: At most this many characters of context (about 150 tokens) are read with a memory: the
#: end of what came before, nearest to it. Without a bound, a long entry before it (a long
#: assistant answer) filled the model's 256-token window and the memory's own words were
#: cut off, so its vector stood for its neighbour: with 5 LoCoMo turns a memory, dense R@5
#: fell from 53.2 (no context) to 46.6. 600 was chosen on the tuning half of that 5-turn
#: variant among 300, 600, 1000 and no bound (R@5 57.1, 60.3, 55.7, 55.4); the held-out
#: half and the 10- and 20-turn variants agree or are level within 1.3 points. Turns of
#: ordinary length are untouched (two LoCoMo turns are ~300 characters).
CONTEXT_CHARS = 600


def contextual_text(before: Sequence[str], content: str) -> str:
    """The text embedded for a memory with context: the last ``CONTEXT_CHARS`` characters
    of what came before (cut at a word boundary), then the memory."""
    context = " ".join(before)
    if len(context) > CONTEXT_CHARS:
        tail = context[-CONTEXT_CHARS:]
        space = tail.find(" ")
        context = tail[space + 1 :] if 0 <= space < len(tail) - 1 else tail
    return f"{context} {content}" if context else content


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
