"""A validator for the small JSON-Schema subset Tulving's prompts use.

Why not ``jsonschema``: it is not a dependency of the ``openai`` extra, and the subset we
ask models for is tiny. Supported keywords: ``type`` (object, array, string, number,
integer, boolean, null, or a list of them), ``properties``, ``required``, ``items``,
``enum``, ``additionalProperties`` (bool or a schema). Anything else is ignored, as a
permissive validator would. Errors name the JSON path so they can be fed back to the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")


class SchemaMismatch(ValueError):
    """The value does not match the schema; ``str()`` is a one-line reason with a path."""


def _is_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, int | float)
    raise SchemaMismatch(f"unsupported type {name!r} in schema")


def validate(value: Any, schema: Mapping[str, Any], path: str = "$") -> None:
    """Raise ``SchemaMismatch`` at the first place ``value`` breaks ``schema``."""
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        if not any(_is_type(value, n) for n in names):
            raise SchemaMismatch(f"{path}: expected {' or '.join(names)}, got {_describe(value)}")
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaMismatch(f"{path}: {value!r} is not one of {list(schema['enum'])!r}")
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties") or {}
        for name in schema.get("required") or ():
            if name not in value:
                raise SchemaMismatch(f"{path}: missing required property {name!r}")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in properties:
                validate(item, properties[name], f"{path}.{name}")
            elif extra is False:
                raise SchemaMismatch(f"{path}: unexpected property {name!r}")
            elif isinstance(extra, Mapping):
                validate(item, extra, f"{path}.{name}")
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            validate(item, schema["items"], f"{path}[{index}]")


def check_schema(schema: Any) -> None:
    """Reject schemas this validator would misread (a typo'd type, a non-dict)."""
    if not isinstance(schema, Mapping):
        raise SchemaMismatch("a JSON schema must be a mapping")
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else expected
        if not isinstance(names, list) or any(n not in _TYPES for n in names):
            raise SchemaMismatch(f"unsupported schema type {expected!r}")
    for sub in (schema.get("properties") or {}).values():
        check_schema(sub)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            check_schema(schema[key])


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__
