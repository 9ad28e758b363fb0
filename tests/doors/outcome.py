"""What a door answered, normalised: ``ok`` with a payload, or a typed error's family.

Every door says "your input was wrong" in its own words: the library raises a
``ValidationError``, the CLI exits 2 with ``{"error": {"type": ...}}`` on stdout, an MCP
tool answers ``is_error`` with the error's type, HTTP answers 422. A door maps its own
signal to one *family* here, and checks that its signal is the one its documentation
promises for that family (the CLI's exit code, the HTTP status): a door that answers the
right type with the wrong code gets the family ``inconsistent`` and fails every case
that expects a typed error. The expectations are written out below, not taken from the
doors' own tables, so a broken table cannot confirm itself.
"""

from __future__ import annotations

from typing import Any

import attrs

from tulving.domain import errors as E

#: Error types of the doors themselves (not TulvingError classes) and their families.
DOOR_KINDS = {
    "ArgumentError": "invalid",  # MCP: arguments the tool's schema refuses
    "UsageError": "invalid",  # CLI: argparse refused the command line
    "LinesRefused": "invalid",  # CLI: `store --jsonl` refused lines (each one's type named)
    "PayloadTooLarge": "invalid",  # HTTP 413
    "ReadOnlyToken": "read_only",  # HTTP 403: a token that may only read
}

#: Most specific first: the first class a kind is a subclass of decides its family.
FAMILIES: tuple[tuple[type[E.TulvingError], str], ...] = (
    (E.ValidationError, "invalid"),
    (E.NotFoundError, "not_found"),
    (E.ReadOnlyError, "read_only"),
    (E.LockError, "locked"),
    (E.ScopeError, "refused"),
    (E.SecurityError, "refused"),
    (E.ConfigError, "config"),
)

#: The CLI's documented exit code per family (docs/cli.md, "Exit codes").
CLI_EXIT = {"invalid": 2, "not_found": 1, "config": 3, "read_only": 4, "locked": 4,
            "refused": 5}
#: The HTTP status per family (docs/server/index.md): a read-only token is 403.
HTTP_STATUS = {"invalid": {422, 413}, "not_found": {404}, "refused": {403},
               "read_only": {409, 403}, "locked": {503}, "config": {503}}
#: A client of the server (Python, TypeScript) may refuse input before sending it, with
#: status 0: what no request can carry (an id that cannot be a path segment, a lone
#: surrogate in a URL; docs/server/index.md, "Clients").
CLIENT_STATUS = {**HTTP_STATUS, "invalid": {422, 413, 0}}


def family_of(kind: str) -> str:
    """The family of an error type's name: ``crash`` for a name that is no typed error
    (a ``TypeError``, an ``InternalError``, a traceback)."""
    if kind in DOOR_KINDS:
        return DOOR_KINDS[kind]
    cls = getattr(E, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, E.TulvingError)):
        return "crash"
    for base, family in FAMILIES:
        if issubclass(cls, base):
            return family
    return "failed"


class Unsupported(Exception):
    """The door cannot express this operation or this input; the message says why (the
    suites skip with it, so no case is left out silently)."""


@attrs.frozen
class Outcome:
    """One operation's answer at one door.

    ``payload``: the answer as data (JSON the door printed or sent; for the library, the
    returned objects' fields). ``shown``: every character the door showed its user
    (stdout and stderr, a tool result's text and structured content, a response body, an
    exception's message), what redaction is checked on. ``kind``: the error's type name.
    ``code``: the door's own signal (exit code, HTTP status, ``"tool error"``).
    """

    door: str
    family: str
    payload: Any = None
    shown: str = ""
    kind: str | None = None
    code: int | str | None = None
    meta: dict[str, Any] = attrs.field(factory=dict)

    @property
    def ok(self) -> bool:
        return self.family == "ok"

    @property
    def ids(self) -> list[str]:
        """The ids of the memories the answer holds, in its order."""
        return [str(e["id"]) for e in entries_of(self.payload)]

    def __str__(self) -> str:
        return (f"{self.door}: {self.family} kind={self.kind} code={self.code} "
                f"shown={self.shown[-600:]!r}")


def entries_of(payload: Any) -> list[dict[str, Any]]:
    """The memory objects in a payload of any door (an entry, a list of them, or an
    object holding them under the names the doors use)."""
    if isinstance(payload, list):
        return [e for e in payload if isinstance(e, dict) and "id" in e]
    if not isinstance(payload, dict):
        return []
    for name in ("stored", "entry", "corrected", "forgotten", "archived", "deleted"):
        if isinstance(payload.get(name), dict):
            return [payload[name]]
    for name in ("results", "entries", "versions"):
        if isinstance(payload.get(name), list):
            return entries_of(payload[name])
    return [payload] if "id" in payload else []


def typed(door: str, kind: str, code: int | str | None, shown: str,
          allowed: dict[str, int] | dict[str, set[int]] | None = None,
          **meta: Any) -> Outcome:
    """An error outcome whose family comes from ``kind``, checked against the code the
    door's documentation gives that family (``allowed``)."""
    family = family_of(kind)
    if kind == "HTTPError" and code == 404:  # the server's router: no such resource
        family = "not_found"
    if allowed is not None and family in allowed:
        expected = allowed[family]
        fits = code in expected if isinstance(expected, set) else code == expected
        if not fits:
            family = f"inconsistent ({family} answered {code})"
    return Outcome(door, family, shown=shown, kind=kind, code=code, meta=meta)
