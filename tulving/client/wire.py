"""How the clients put a caller's values on the wire, so that no value changes the request.

An application often passes a user's text as an id (a key typed in a form, an id read
from a message): whatever it holds, the request goes to the route the method names.

- An id or key is one path segment, percent-encoded whole: ``/`` becomes ``%2F``, so a key
  such as ``deploy/day`` stays one segment and ``x/history`` never names the history
  route; ``?`` and ``#`` cannot start a query or a fragment. The server decodes the
  segment before routing (``tulving.interfaces.http.path_ids``). The empty string,
  ``.`` and ``..`` cannot be a segment (a URL resolves them away), so they are refused.
- Text that is not valid Unicode (a lone surrogate such as ``"\\ud800"``) has no UTF-8
  form, so it cannot be put in a URL: refused before sending. In a JSON body it travels
  as its escape, and the server answers 422 naming the field, as for every client.
- A JSON body is written with ASCII escapes and without NaN or infinities (which are not
  JSON): what the server reads is exactly what the caller gave.

Refusals raise ``ValidationError`` with status 0 (nothing was sent).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from tulving.client.results import ValidationError
from tulving.domain.validation import first_invalid_text

JSON_HEADERS = {"Content-Type": "application/json"}


def refused(message: str) -> ValidationError:
    return ValidationError(0, "ValidationError", message)


def segment(value: object, what: str = "memory_id") -> str:
    """``value`` as one path segment, every reserved character percent-encoded."""
    if not isinstance(value, str):
        raise refused(f"{what} must be a string, not {type(value).__name__}")
    if value in ("", ".", ".."):
        raise refused(f"{what} {value!r} is not an id or a key (a URL cannot carry it as "
                      "a path segment)")
    _valid_text(value, what)
    return quote(value, safe="")


def _valid_text(value: object, what: str) -> None:
    invalid = first_invalid_text(value, what)
    if invalid is not None:
        raise refused(f"{invalid} is not valid Unicode text")


def encoded(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """httpx's keyword arguments of one request with its body and query made safe: a
    ``json`` body as escaped JSON text, the query's values checked."""
    out = dict(kwargs)
    params = out.get("params")
    if params:
        _valid_text(dict(params), "the query")
    if "json" in out:
        try:
            out["content"] = json.dumps(out.pop("json"), allow_nan=False).encode("ascii")
        except (TypeError, ValueError) as exc:
            raise refused(f"the request body is not JSON: {exc}") from None
        out["headers"] = {**JSON_HEADERS, **out.get("headers", {})}
    return out
