"""A dependency-free token estimate that errs on the high side.

For a model whose tokenizer is not available, the budget must still hold, so this
estimator over-counts rather than under-counts. The base is the usual rule of thumb,
``chars / 3`` for ASCII text (English runs about 4 characters per cl100k token, code about
3). Three corrections cover what that rule misses:

* ASCII "dense" words (hex ids, UUIDs, dates, base64, camelCase) cost one token per run of
  one character class, not per three characters: such a word costs
  ``max(len / 3, runs)``.
  Long words mixing digits and both cases (keys, base64) cost 0.75 token per char.
* One-character words (``a``, ``1``, ``x``) cost a whole token.
* Non-ASCII characters are priced per character by their UTF-8 length: 2-byte
  (accented Latin, Cyrillic, Greek, Arabic, Hebrew) 1.0, 3-byte (CJK, Hangul, Devanagari,
  Thai, symbols) 1.25, 4-byte (emoji, rare CJK) 3.0. So every CJK character counts at
  least one token.

The sum is then scaled up by ``1 + margin`` (default margin 0.2, i.e. 20 %) and rounded up.
On the corpus in ``tests/contract/test_tokenizer_contract.py`` (English prose, Python and
JSON, shell, hex/UUID/dates, CJK, Korean, Cyrillic, Arabic, Hindi, emoji) this stays at or
above the cl100k_base and o200k_base counts; adversarial strings of rare 3-byte characters
can still exceed it.
"""

from __future__ import annotations

import math
import re
from typing import Any

from tulving.domain.errors import ConfigError, ValidationError

DEFAULT_MARGIN = 0.2
_ASCII_CHARS_PER_TOKEN = 3.0
_WEIGHT_2_BYTES = 1.0
_WEIGHT_3_BYTES = 1.25
_WEIGHT_4_BYTES = 3.0

# An ASCII word holding a digit or a lower-to-upper case change: priced per class run.
_DENSE_WORD = re.compile(r"(?<![!-~])[!-~]*?(?:[0-9]|[a-z][A-Z])[!-~]*")
_RUN = re.compile(r"[0-9]{1,3}|[A-Z]?[a-z]{1,3}|[A-Z]{1,3}|[^A-Za-z0-9]")
# Key-, hash- or base64-like words (digits and both cases) run about 0.8 tokens per char.
_RANDOM_LOOKING = re.compile(r"(?=.*[0-9+/=])(?=.*[a-z])(?=.*[A-Z])")
_RANDOM_MIN_LENGTH = 12
_RANDOM_TOKENS_PER_CHAR = 0.75
_SINGLE_CHAR_WORD = re.compile(r"(?<!\S)\S(?!\S)")


class HeuristicTokenizer:
    """Conservative estimate; see the module docstring for the formula."""

    def __init__(self, margin: float = DEFAULT_MARGIN) -> None:
        if isinstance(margin, bool) or not isinstance(margin, int | float):
            raise ConfigError(f"heuristic tokenizer margin must be a number, got {margin!r}")
        if not math.isfinite(margin) or not 0.0 <= margin <= 10.0:
            raise ConfigError(f"heuristic tokenizer margin must be in [0, 10], got {margin!r}")
        self.margin = float(margin)
        self.name = "heuristic" if margin == DEFAULT_MARGIN else f"heuristic(margin={margin:g})"

    def _units(self, text: str) -> float:
        n_chars = len(text)
        n_ascii = len(text.encode("ascii", "ignore"))
        units = n_ascii / _ASCII_CHARS_PER_TOKEN
        if n_ascii < n_chars:
            n_other = n_chars - n_ascii
            extra_bytes = len(text.encode("utf-8")) - n_chars  # n2 + 2*n3 + 3*n4
            n4 = len(text.encode("utf-16-le")) // 2 - n_chars  # surrogate pairs
            n3 = extra_bytes - n_other - 2 * n4
            n2 = n_other - n3 - n4
            units += n2 * _WEIGHT_2_BYTES + n3 * _WEIGHT_3_BYTES + n4 * _WEIGHT_4_BYTES
        for match in _DENSE_WORD.finditer(text):
            word = match.group()
            cost = float(len(_RUN.findall(word)))
            if len(word) >= _RANDOM_MIN_LENGTH and _RANDOM_LOOKING.match(word):
                cost = max(cost, len(word) * _RANDOM_TOKENS_PER_CHAR)
            units += max(0.0, cost - len(word) / _ASCII_CHARS_PER_TOKEN)
        for match in _SINGLE_CHAR_WORD.finditer(text):
            if match.group().isascii():
                units += 1.0 - 1.0 / _ASCII_CHARS_PER_TOKEN
        return units

    def count(self, text: str) -> int:
        if not isinstance(text, str):
            raise ValidationError(f"count() needs a str, got {type(text).__name__}")
        if not text:
            return 0
        return math.ceil(self._units(text) * (1.0 + self.margin) - 1e-9)

    def truncate(self, text: str, max_tokens: int) -> str:
        if not isinstance(text, str):
            raise ValidationError(f"truncate() needs a str, got {type(text).__name__}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            raise ValidationError(f"max_tokens must be an int, got {max_tokens!r}")
        if max_tokens < 0:
            raise ValidationError(f"max_tokens must be >= 0, got {max_tokens}")
        if max_tokens == 0 or not text:
            return ""
        if self.count(text) <= max_tokens:
            return text
        # Invariant: text[:low] fits, text[:high] does not. Every ASCII char costs at
        # least 1/3 token, so no prefix longer than 3 * (max_tokens + 1) chars can fit.
        low, high = 0, min(len(text), 3 * (max_tokens + 1))
        if self.count(text[:high]) <= max_tokens:
            low, high = high, len(text)
        while high - low > 1:
            middle = (low + high) // 2
            if self.count(text[:middle]) <= max_tokens:
                low = middle
            else:
                high = middle
        return text[:low]

    def __repr__(self) -> str:
        return f"HeuristicTokenizer(margin={self.margin!r})"


def create(
    context: object = None, *, margin: float = DEFAULT_MARGIN, **options: Any
) -> HeuristicTokenizer:
    """Factory for ``tokenizer="heuristic"``; ``margin`` is the safety factor over the estimate."""
    if options:
        raise ConfigError(
            f"the heuristic tokenizer takes only 'margin', got: {', '.join(sorted(options))}"
        )
    return HeuristicTokenizer(margin)
