"""Bearer tokens for the HTTP doors (the MCP HTTP transport), stored hashed.

The driving side owns them: they say who may knock, not what memory holds. (Not to be
confused with the token *budget* of curation, which counts tokenizer tokens.)

Several agents can share one memory server over HTTP; each gets its own token, so one
can be revoked without touching the others. Only an HMAC-SHA256 of the secret with a
per-token random salt is kept: a leaked token file does not leak usable tokens. A token
reads ``tlv_<token id>_<secret>`` so verification finds the record by id and compares
one digest in constant time.

For a store that is a file, the records live in ``<store>.tokens.json`` beside it (mode
0600) rather than in the database: ``tulving mcp token create`` must work while a running
server holds the database's single-writer lock. Other stores keep them in their meta
table under ``mcp_tokens``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

import attrs

from tulving.domain.errors import NotFoundError, SecurityError, StorageError, ValidationError

TOKEN_PREFIX = "tlv_"
META_NAME = "mcp_tokens"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
_TOKEN = re.compile(r"^tlv_([0-9a-f]{12})_([A-Za-z0-9_-]{20,100})$")


@attrs.frozen
class TokenRecord:
    """What is kept about a token: never the secret itself."""

    id: str
    name: str
    salt: str
    digest: str
    created_at: str
    # What the HTTP server lets the bearer be: a tenant, optionally one agent, and
    # read-only or not. None means "the server's own" (MCP tokens predate tenancy).
    user_id: str | None = None
    workspace_id: str | None = None
    agent_id: str | None = None
    read_only: bool = False


class _Backend(Protocol):
    def load(self) -> list[dict[str, Any]]: ...

    def save(self, records: list[dict[str, Any]]) -> None: ...


class FileBackend:
    """``<store>.tokens.json``, replaced atomically, readable by the owner only."""

    def __init__(self, path: str) -> None:
        self.path = path

    def load(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise StorageError(f"cannot read token file {self.path}: {exc}") from exc
        if not isinstance(data, list):
            raise StorageError(f"token file {self.path} is not a JSON list")
        return data

    def save(self, records: list[dict[str, Any]]) -> None:
        folder = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tokens-", dir=folder)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(records, handle, indent=1)
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


class MetaBackend:
    """The store's meta table (PostgreSQL, in-memory stores)."""

    def __init__(
        self, get_meta: Callable[[str], str | None], set_meta: Callable[[str, str], None]
    ) -> None:
        self._get, self._set = get_meta, set_meta

    def load(self) -> list[dict[str, Any]]:
        raw = self._get(META_NAME)
        data = json.loads(raw) if raw else []
        return data if isinstance(data, list) else []

    def save(self, records: list[dict[str, Any]]) -> None:
        self._set(META_NAME, json.dumps(records))


def token_file_for(location: str) -> str | None:
    """Where a file store keeps its tokens, or None for stores that are not files."""
    if not location or location == ":memory:" or "://" in location:
        return None
    return location + ".tokens.json"


class TokenRegistry:
    """Create, list, revoke and verify bearer tokens."""

    def __init__(self, backend: _Backend) -> None:
        self._backend = backend

    @classmethod
    def beside(cls, location: str) -> TokenRegistry:
        path = token_file_for(location)
        if path is None:
            raise ValidationError(f"{location!r} is not a file store; use registry_for(memory)")
        return cls(FileBackend(path))

    def records(self) -> list[TokenRecord]:
        out = []
        for raw in self._backend.load():
            try:
                out.append(TokenRecord(**raw))
            except TypeError as exc:
                raise StorageError(f"malformed token record: {exc}") from exc
        return out

    def create(
        self, name: str, now: datetime | None = None, *, user_id: str | None = None,
        workspace_id: str | None = None, agent_id: str | None = None, read_only: bool = False,
    ) -> tuple[TokenRecord, str]:
        """A new token for ``name``, bound to a tenant (and optionally an agent and
        read-only); the secret is returned once and never stored."""
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValidationError(
                "token name must be 1-64 characters: letters, digits, '_', '.', '@', '-'"
            )
        for label, value in (("user_id", user_id), ("workspace_id", workspace_id),
                             ("agent_id", agent_id)):
            if value is not None and (not isinstance(value, str) or not _NAME.match(value)):
                raise ValidationError(f"{label} must be 1-64 characters: letters, digits, "
                                      "'_', '.', '@', '-'")
        if not isinstance(read_only, bool):
            raise ValidationError("read_only must be True or False")
        records = self.records()
        if any(r.name == name for r in records):
            raise ValidationError(f"a token named {name!r} exists; revoke it first")
        token_id = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_hex(16)
        when = (now or datetime.now(UTC)).isoformat()
        record = TokenRecord(token_id, name, salt, _digest(salt, secret), when, user_id,
                             workspace_id, agent_id, read_only)
        self._backend.save([*(attrs.asdict(r) for r in records), attrs.asdict(record)])
        return record, f"{TOKEN_PREFIX}{token_id}_{secret}"

    def revoke(self, id_or_name: str) -> TokenRecord:
        records = self.records()
        keep = [r for r in records if id_or_name not in (r.id, r.name)]
        gone = [r for r in records if id_or_name in (r.id, r.name)]
        if not gone:
            raise NotFoundError(f"no token with id or name {id_or_name!r}")
        self._backend.save([attrs.asdict(r) for r in keep])
        return gone[0]

    def verify(self, token: str) -> TokenRecord:
        """The record of a valid token; SecurityError otherwise (same message for every
        failure, so a caller learns nothing about which part was wrong)."""
        match = _TOKEN.match(token or "")
        if match:
            token_id, secret = match.groups()
            for record in self.records():
                if record.id == token_id and hmac.compare_digest(
                    record.digest, _digest(record.salt, secret)
                ):
                    return record
        raise SecurityError("invalid or revoked token")


def _digest(salt: str, secret: str) -> str:
    return hmac.new(bytes.fromhex(salt), secret.encode("utf-8"), hashlib.sha256).hexdigest()


def registry_for(memory: Any) -> TokenRegistry:
    """The token registry of an open ``Memory``: the file beside a file store, else the
    store's meta table (PostgreSQL)."""
    path = token_file_for(memory.location)
    if path is not None:
        return TokenRegistry(FileBackend(path))
    storage = memory.ctx.storage
    return TokenRegistry(MetaBackend(storage.get_meta, storage.set_meta))
