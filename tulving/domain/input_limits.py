"""The input limits of the agent-facing calls: one table every door checks against.

A request at any door (the library's ``Memory``, the CLI, an MCP tool, the HTTP API)
takes the same ranges for the same inputs and refuses a value outside them with its
typed error for invalid input (a ``ValidationError``; the CLI's exit 2; an MCP tool
error; HTTP 422). The doors' schemas read their bounds from here (``ge``/``le``,
``max_length``) and the documentation's table is :func:`markdown_table` of this one
(``tests/doors/test_input_limits.py`` checks both). Why these bounds: a result list an
agent reads (100), a question rather than a document (4,000 characters; a long text is
``remember``'s), a score that lives in [0, 1] in every mode, and a context block between
a line or two and a long prompt's worth (50..200,000 tokens).

The services below the doors keep wider internal bounds (curation asks search for a pool
of up to 600 candidates, for instance); only what a caller passes is checked here.
"""

from __future__ import annotations

import math

import attrs

from tulving.domain.errors import ValidationError


@attrs.frozen
class InputLimit:
    """One input's bounds: ``low..high`` inclusive, of its value (``kind`` "int" or
    "number") or of its length in characters (``kind`` "text")."""

    name: str
    calls: tuple[str, ...]
    kind: str
    low: int | float
    high: int | float
    what: str

    def bounds_text(self) -> str:
        unit = " characters" if self.kind == "text" else ""
        return f"{_num(self.low)}..{_num(self.high)}{unit}"

    def check(self, value: object) -> None:
        """Raise ``ValidationError`` naming the input and its bounds when ``value`` is
        outside them (or of another type); None passes (the call's default applies)."""
        if value is None:
            return
        if self.kind == "text":
            if isinstance(value, str) and self.low <= len(value) <= self.high:
                return
            got = f"{len(value)} characters" if isinstance(value, str) else repr(value)
        else:
            number = (not isinstance(value, bool) and isinstance(value, int)) or (
                self.kind == "number" and isinstance(value, float) and math.isfinite(value))
            if number and self.low <= value <= self.high:  # type: ignore[operator]
                return
            got = repr(value)
        kind = {"int": "an integer", "number": "a number", "text": "text of"}[self.kind]
        raise ValidationError(f"{self.name} must be {kind} {self.bounds_text()}, got {got}")


def _num(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


QUERY = InputLimit("query", ("search", "curate"), "text", 1, 4000,
                   "the question searched for (curate's is optional)")
TOP_K = InputLimit("top_k", ("search",), "int", 1, 100, "how many results")
MIN_SCORE = InputLimit("min_score", ("search",), "number", 0, 1,
                       "only results scoring at least this")
TOKEN_BUDGET = InputLimit("token_budget", ("curate",), "int", 50, 200_000,
                          "the curated context's hard cap, in tokens")

#: The table, in the order the documentation shows it.
INPUT_LIMITS: tuple[InputLimit, ...] = (QUERY, TOP_K, MIN_SCORE, TOKEN_BUDGET)


def check_search_limits(query: object, top_k: object, min_score: object) -> None:
    """A search's inputs against the table (``ValidationError`` for the first outside)."""
    QUERY.check(query)
    TOP_K.check(top_k)
    MIN_SCORE.check(min_score)


def markdown_table() -> str:
    """The table as the documentation prints it (docs/reference/limits.md)."""
    rows = ["| input | calls | bounds | what |", "|---|---|---|---|"]
    for limit in INPUT_LIMITS:
        rows.append(f"| `{limit.name}` | {', '.join(limit.calls)} | "
                    f"{limit.bounds_text()} | {limit.what} |")
    return "\n".join(rows) + "\n"
