"""What the typed reports of ``Memory`` share: plain data for the JSON doors, and, for one
release, the dictionary reads they replace.

Why: ``Memory.stats()``, ``purge()``, ``verify()`` and the other reports used to be
``dict[str, Any]``, which ``mypy --strict`` could not check and a caller could only learn
by printing one. Each is now an attrs class with named, typed fields, beside the service
that makes it. Their fields keep the keys the dictionaries had, so ``as_dict()`` gives
the very shape the JSON doors (CLI ``--json``, MCP, HTTP) always sent.

Code that indexed the old dictionaries (``memory.stats()["active"]``) keeps working for
one release: ``report["active"]`` reads the field of that name and warns
(``DeprecationWarning``) to read the attribute instead (``memory.stats().active``); so do
``get``, ``keys`` and ``in``, which also make ``dict(report)`` work; what they return is
the old value itself (a nested report as its dict, a tuple as a list). The reads are typed
``object``, honestly: a caller that type-checks reads the attributes. They go in the
release after the next.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import attrs


def _names(value: object) -> tuple[str, ...]:
    """The field names of an attrs instance, in order."""
    cls: Any = type(value)
    return tuple(f.name for f in attrs.fields(cls))


def plain(value: object) -> object:
    """``value`` as plain Python data: reports and attrs records as dicts (their fields
    by name), mappings as dicts, sequences as lists; the rest (str, numbers, None,
    datetimes, enums) as it is (the doors' renderers make those JSON)."""
    if isinstance(value, Report):
        return value.as_dict()
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if attrs.has(type(value)):
        return {name: plain(getattr(value, name)) for name in _names(value)}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    return value


class Report:
    """The base of every typed report (an attrs class): ``as_dict()``, and the deprecated
    dictionary reads (see the module doc)."""

    __slots__ = ()

    def as_dict(self) -> dict[str, object]:
        """The report as plain data, keyed by field name (what the JSON doors send)."""
        return {name: plain(getattr(self, name)) for name in _names(self)}

    def keys(self) -> list[str]:
        """The field names (deprecated with the dictionary reads: ``as_dict()``)."""
        _deprecated(self, "keys()", "as_dict()")
        return list(_names(self))

    def __getitem__(self, key: str) -> object:
        """``report[name]``: the field ``name`` (deprecated: read ``report.name``)."""
        if not isinstance(key, str) or key not in _names(self):
            raise KeyError(key)
        _deprecated(self, f"[{key!r}]", f".{key}")
        return plain(getattr(self, key))

    def get(self, key: str, default: object = None) -> object:
        """``report.get(name)``: the field ``name`` or ``default`` (deprecated)."""
        if not isinstance(key, str) or key not in _names(self):
            return default
        _deprecated(self, f".get({key!r})", f".{key}")
        return plain(getattr(self, key))

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in _names(self)


def _deprecated(report: Report, read: str, instead: str) -> None:
    name = type(report).__name__
    warnings.warn(f"{name} is a typed report, no longer a dict: {read} is deprecated and "
                  f"goes in the release after the next; read {instead}",
                  DeprecationWarning, stacklevel=3)
