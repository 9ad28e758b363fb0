"""LangGraph's search ``filter`` evaluated on an item's value, as the framework's own
stores evaluate it: a plain value matches by equality (a mapping by nested equality of the
keys it names, a list element by element); a mapping of operators applies each of
``$eq $ne $gt $gte $lt $lte`` (comparisons are numeric, as PostgreSQL's JSONB casts). A
dotted field is a path into nested mappings (``{"user.access-level": "x"}`` reads
``value["user"]["access-level"]``), as ``SqliteStore`` and ``PostgresStore`` read it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_COMPARISONS = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes the filter (None or {} passes everything)."""
    if not flt:
        return True
    return all(_match(_at(value, field), wanted) for field, wanted in flt.items())


def _at(value: Any, field: str) -> Any:
    """The value at a (dotted) field, None where the path leads nowhere."""
    for step in field.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(step)
    return value


def _match(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_operator(actual, op, operand) for op, operand in wanted.items())
        return isinstance(actual, Mapping) and all(
            _match(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (isinstance(actual, list | tuple) and len(actual) == len(wanted)
                and all(_match(a, w) for a, w in zip(actual, wanted, strict=True)))
    return bool(actual == wanted)


def _operator(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    compare = _COMPARISONS.get(op)
    if compare is None:
        raise ValueError(f"Unsupported operator: {op}")
    try:
        return bool(compare(float(actual), float(operand)))
    except (TypeError, ValueError):
        return False
