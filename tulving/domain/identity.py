"""Who is reading or writing, and which partitions that identity may see.

Tenancy is a hard partition: ``(user_id, workspace_id)`` must match exactly. Inside a
tenant, the scope of an entry decides which agents see it. Both are folded into one
string, the entry's *partition*, so every adapter enforces visibility with a single
``partition IN (...)`` test and key uniqueness with one partial unique index over
``(partition, key)``: there is no per-adapter scope logic to get wrong.
"""

from __future__ import annotations

import re

import attrs

from tulving.domain.errors import ValidationError
from tulving.domain.types import Scope

_SEP = "\x1f"


#: An identity is an address, as a key is: letters, digits and ``. _ : / - @ +`` (an
#: e-mail address is a common user id), starting with a letter or digit, at most 256
#: characters, without ``..`` or an empty path segment. No NUL, newline or separator
#: can reach a partition string, a log line or a file name built from it.
IDENTITY_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+\-]{0,255}")


def check_identity(label: str, value: object, *, optional: bool = True) -> None:
    """ValidationError unless ``value`` is a well-formed identity (or None when
    ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{label} must be a non-empty string, got {value!r}")
    if (not IDENTITY_PATTERN.fullmatch(value) or ".." in value or "//" in value
            or value.endswith("/")):
        raise ValidationError(
            f"malformed {label} {value[:80]!r}: use letters, digits and . _ : / - @ + "
            "(max 256), starting with a letter or digit, without empty segments or '..'")


_check_name = check_identity


@attrs.frozen
class Identity:
    """The acting agent and the tenant it works in; bound once at ``Memory(...)``."""

    agent_id: str
    user_id: str | None = None
    workspace_id: str | None = None
    model_id: str | None = None

    def __attrs_post_init__(self) -> None:
        _check_name("agent_id", self.agent_id, optional=False)
        _check_name("user_id", self.user_id, optional=True)
        _check_name("workspace_id", self.workspace_id, optional=True)
        _check_name("model_id", self.model_id, optional=True)

    @property
    def tenant(self) -> str:
        return f"{self.user_id or ''}{_SEP}{self.workspace_id or ''}"

    def partition_for(self, scope: Scope, session_id: str | None = None) -> str:
        """The partition an entry written by this identity in ``scope`` belongs to."""
        owner: str
        if scope is Scope.AGENT:
            owner = self.agent_id
        elif scope is Scope.SESSION:
            if not session_id:
                raise ValidationError("scope 'session' needs an active session")
            owner = f"{self.agent_id}/{session_id}"
        elif scope is Scope.MODEL_SPECIFIC:
            if not self.model_id:
                raise ValidationError("scope 'model_specific' needs Memory(model_id=...)")
            owner = self.model_id
        else:
            owner = ""
        return f"{self.tenant}{_SEP}{scope.value}{_SEP}{owner}"

    def visible_partitions(self, session_id: str | None = None) -> tuple[str, ...]:
        """Every partition this identity may read, in a stable order."""
        parts = [
            self.partition_for(Scope.AGENT),
            self.partition_for(Scope.PERSONAL),
            self.partition_for(Scope.SHARED),
            self.partition_for(Scope.WORKSPACE),
        ]
        if session_id:
            parts.append(self.partition_for(Scope.SESSION, session_id))
        if self.model_id:
            parts.append(self.partition_for(Scope.MODEL_SPECIFIC))
        return tuple(parts)


def tenant_of_partition(partition: str) -> str:
    """The tenant prefix of a partition string (for per-tenant audit chains, erasure)."""
    user, workspace, _rest = partition.split(_SEP, 2)
    return f"{user}{_SEP}{workspace}"


def tenant_key(user_id: str | None, workspace_id: str | None) -> str:
    return f"{user_id or ''}{_SEP}{workspace_id or ''}"
