"""How ADK's names become Tulving's: identities and keys.

ADK scopes memory by ``(app_name, user_id)``, any strings. Tulving's identities and keys
follow a narrower grammar (letters, digits and a few marks; a key at most 200
characters), so a name that does not fit is escaped: every character outside
``A-Z a-z 0-9 _ - @ +`` (in keys ``A-Z a-z 0-9 _ -``) becomes ``:XX`` per UTF-8 byte, behind a ``0::`` mark (which no
escaped name can contain, so two ADK names never meet in one Tulving name). Names that
already fit, the usual ``user-42`` or ``ann@example.com``, are kept as they are, so
``tulving --user-id ann@example.com`` finds what the ADK app stored for that user.
"""

from __future__ import annotations

import hashlib

from tulving import ValidationError

_IN_KEYS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_KEPT = _IN_KEYS | frozenset("@+")
_PLAIN = _KEPT | frozenset("./:")
#: Tulving's longest identity and key.
MAX_IDENTITY = 256
MAX_KEY = 200
ROOT = "adk"


def tulving_id(name: str) -> str:
    """The Tulving identity (agent or user id) for an ADK ``app_name`` or ``user_id``."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError(f"an ADK app_name or user_id must be a non-empty string, "
                              f"got {name!r}")
    if _fits(name):
        return name
    escaped = "0::" + _escape(name, _KEPT)
    if len(escaped) <= MAX_IDENTITY:
        return escaped
    return "0::h:" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


def event_key(session_id: str, event_id: str) -> str:
    """The Tulving key of one event of one session (``adk/e/<session>/<event>``)."""
    return _key("e", session_id, event_id)


def memory_key(memory_id: str) -> str:
    """The Tulving key of a memory written by ``add_memory`` with an explicit id."""
    return _key("m", memory_id)


def _key(kind: str, *names: str) -> str:
    key = "/".join([ROOT, kind, *(_escape(n, _IN_KEYS) or "." for n in names)])
    if len(key) <= MAX_KEY:
        return key
    digest = hashlib.sha256("\x1f".join(names).encode("utf-8", "surrogatepass")).hexdigest()
    return f"{ROOT}/{kind}/.h/{digest}"


def _fits(name: str) -> bool:
    return (len(name) <= MAX_IDENTITY and name[0].isascii() and name[0].isalnum()
            and all(c in _PLAIN for c in name) and ".." not in name and "//" not in name
            and "::" not in name and not name.endswith("/"))


def _escape(name: str, kept: frozenset[str]) -> str:
    out: list[str] = []
    for ch in name:
        if ch in kept:
            out.append(ch)
        else:
            out.extend(f":{byte:02X}" for byte in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)
