"""Tokenizer port: the curation budget is counted with it, headers and separators included."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Tokenizer(Protocol):
    name: str

    def count(self, text: str) -> int:
        """Tokens in ``text``. Invariant: count(a + b) <= count(a) + count(b) + 1 is NOT assumed;
        callers count the final rendering."""
        ...

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` whose count is <= ``max_tokens`` (empty for 0)."""
        ...
