"""Tool argument schemas as plain JSON Schema: one top-level ``type`` per argument.

Why: pydantic writes an optional argument (``float | None = None``) as ``anyOf [{number},
{null}]`` with ``default: null``. Clients that convert or check arguments by the schema's
top-level ``type`` (the MCP Inspector's CLI before its 0.16 line sends every ``--tool-arg``
as a string unless the argument's schema says ``"type": "number"``; strict validators treat
``anyOf`` as "any") could not set ``importance``, ``pinned``, ``tags``, ``metadata``,
``min_score`` or ``types`` at all. So each optional argument is published as its non-null
branch, with the null default left out: the argument is optional (not ``required``), and
omitting it means what null meant. The server still accepts an explicit null (the
functions keep their ``| None``), so a client that sends one is not refused.
"""

from __future__ import annotations

from typing import Any


def plain_argument(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` of one argument without a nullable ``anyOf``: its non-null branch with
    the argument's own description and title, and no ``default: null``."""
    branches = schema.get("anyOf")
    if not isinstance(branches, list):
        return schema
    kept = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
    if len(kept) != 1 or len(kept) == len(branches) or not isinstance(kept[0], dict):
        return schema
    plain = {**kept[0], **{k: v for k, v in schema.items() if k not in ("anyOf", "default")}}
    if schema.get("default") is not None:
        plain["default"] = schema["default"]
    return plain


def plain_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's input schema with every argument plain (see ``plain_argument``)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    return {**schema, "properties": {name: plain_argument(value) if isinstance(value, dict)
                                     else value for name, value in properties.items()}}
