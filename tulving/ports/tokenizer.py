"""Tokenizer port: the curation budget is counted with it, headers and separators included."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from tulving.domain.packing import SplitsAtSpaces

__all__ = ["SplitsAtSpaces", "Tokenizer"]


@runtime_checkable
class Tokenizer(Protocol):
    """Counts and cuts text in the tokens of the model a curated block is written for.

    An adapter may also be :class:`SplitsAtSpaces` (``splits_at_spaces: Literal[True] =
    True``) when every run of characters between ASCII spaces that is not all whitespace
    costs at least one token (true of ``cl100k_base`` and ``o200k_base``): packing then
    rules lines out by their words without counting them. The budget is always checked on
    the final text.
    """

    name: str

    def count(self, text: str) -> int:
        """Tokens in ``text``. Invariant: count(a + b) <= count(a) + count(b) + 1 is NOT assumed;
        callers count the final rendering."""
        ...

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` whose count is <= ``max_tokens`` (empty for 0)."""
        ...
