"""The door protocol: one operation, named the way the wire names it, performed for real.

The operations (``Door.call(op, **args)``) and their arguments, as the ``/v1`` API and the
MCP tools name them:

- ``store(content, type, key, tags, metadata, importance, pinned, valid_from, agent_id,
  extra)``: ``extra`` holds names no door knows (an unknown field, option or argument);
- ``get(id_or_key)``, ``forget(id_or_key, hard)``, ``correct(id_or_key, content, reason)``,
  ``history(id_or_key)``, ``audit(id_or_key)``;
- ``search(query, top_k, tags, since, mode)``, ``curate(query, token_budget, mode)``,
  ``list_keys(prefix)``, ``list_entries()``, ``stats()``, ``profile(subject)``;
- ``remember(text)``, ``start_session(goal)``, ``consolidate(apply)``,
  ``import_bundle(data, dry_run)``.

A value is passed as given, wrong types included: each door sends it the way its medium
can (a JSON body, a tool argument, an argv string, a keyword argument) or raises
``Unsupported`` saying why it cannot (argv holds text only; the official MCP client
refuses to serialise a lone surrogate).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.doors.outcome import Outcome, Unsupported


class Door:
    """A door onto one store (``path``, read by the back channel)."""

    name: str = "door"
    #: Operations this door has no way to perform, with the reason (skipped with it).
    missing: ClassVar[dict[str, str]] = {}

    def __init__(self, path: Path) -> None:
        self.path = path

    def call(self, op: str, **args: Any) -> Outcome:
        if op in self.missing:
            raise Unsupported(f"{self.name}: {self.missing[op]}")
        method = getattr(self, f"op_{op}", None)
        if method is None:
            raise Unsupported(f"{self.name} has no operation {op!r}")
        return method(**args)  # type: ignore[no-any-return]

    def close(self) -> None:
        """Stop what the door started (a process, a client)."""

    def __repr__(self) -> str:
        return f"<door {self.name} on {self.path.name}>"


def given(**args: Any) -> dict[str, Any]:
    """The arguments that were given (None means "not given" at every door)."""
    return {k: v for k, v in args.items() if v is not None}


def store_fields(content: Any, type: Any, key: Any = None, tags: Any = None,
                 metadata: Any = None, importance: Any = None, pinned: Any = None,
                 valid_from: Any = None, agent_id: Any = None,
                 extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A store's body as the wire names it (``extra`` merged in as further names)."""
    return {"content": content, "type": type,
            **given(key=key, tags=tags, metadata=metadata, importance=importance,
                    pinned=pinned, valid_from=valid_from, agent_id=agent_id),
            **(extra or {})}


def utf8_or_unsupported(value: Any, why: str) -> None:
    """Unsupported when ``value`` holds text that UTF-8 cannot encode (a lone
    surrogate): the door's own client refuses it before anything is sent."""
    try:
        json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        raise Unsupported(why) from None


def perform(door: Door, op: str, **args: Any) -> Outcome:
    """``door.call``; a door that cannot express the call skips the case with its reason."""
    try:
        return door.call(op, **args)
    except Unsupported as exc:
        pytest.skip(str(exc))
