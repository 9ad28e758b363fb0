"""Checking LLM replies against the JSON Schema their prompt asked for, with
``jsonschema`` (the maintained implementation; this module was a hand-written subset).

Errors name the JSON path of the first problem so they can be fed back to the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError, best_match

Validator = jsonschema.Draft202012Validator


class SchemaMismatch(ValueError):
    """The value does not match the schema; ``str()`` is a one-line reason with a path."""


def _path(parts: Any) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def validate(value: Any, schema: Mapping[str, Any]) -> None:
    """Raise ``SchemaMismatch`` naming the most relevant place ``value`` breaks ``schema``."""
    error = best_match(Validator(schema).iter_errors(value))
    if error is not None:
        raise SchemaMismatch(f"{_path(error.absolute_path)}: {error.message[:300]}")


def check_schema(schema: Any) -> None:
    """Reject a schema that is not valid JSON Schema (a typo'd type, a non-object)."""
    if not isinstance(schema, Mapping):
        raise SchemaMismatch("a JSON schema must be a mapping")
    try:
        Validator.check_schema(schema)
    except SchemaError as exc:
        raise SchemaMismatch(f"invalid JSON schema: {exc.message[:300]}") from exc
