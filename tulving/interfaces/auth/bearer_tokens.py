"""Bearer tokens for the HTTP doors (``tulving serve``, the MCP HTTP transport), stored hashed.

The driving side owns them: they say who may knock, not what memory holds. (Not to be
confused with the token *budget* of curation, which counts tokenizer tokens.)

Several agents can share one memory server over HTTP; each gets its own token, so one
can be revoked without touching the others. Only an HMAC-SHA256 of the secret with a
per-token random salt is kept: a leaked store does not leak usable tokens. A token reads
``tlv_<token id>_<secret>`` so verification finds the record by id and compares one
digest in constant time.

Where they live: as rows of the store itself (``ports.storage.TokenStore``): a table of
the SQLite file, encrypted with it when the store is, or of the PostgreSQL schema. Each
token is created by one insert (a live name is unique in the store) and revoked by one
update, so any number of processes issue and revoke tokens at once and every server
replica sees the same set at its next request (nothing is cached: each request reads its
token's row). A registry an older version kept (``<store>.tokens.json`` beside a file
store, the meta row ``mcp_tokens``) moves into the store when the store is opened (the
meta row by the store's migration, the file by ``token_door.adopt_token_file``) and the
file is deleted. While a server holds a SQLite store's writer lock, ``tulving serve token
...`` reaches the token table through :mod:`tulving.interfaces.auth.token_door`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import UTC, datetime
from typing import Any

from tulving.domain.errors import NotFoundError, SecurityError, StorageError, ValidationError
from tulving.domain.records import SessionRecord, TokenRecord
from tulving.interfaces.auth.token_door import adopt_token_file, open_token_store, token_file_for
from tulving.ports.storage import TokenSessions, TokenStore

__all__ = ["TOKEN_PREFIX", "TokenRecord", "TokenRegistry", "registry_for"]

TOKEN_PREFIX = "tlv_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
_TOKEN = re.compile(r"^tlv_([0-9a-f]{12})_([A-Za-z0-9_-]{20,100})$")


class TokenRegistry:
    """Create, list, revoke and verify bearer tokens kept in a store."""

    def __init__(self, store: TokenStore, *, owned: Any = None) -> None:
        self._store = store
        self._owned = owned  # a store opened for this registry alone, closed with it

    @classmethod
    def beside(cls, location: str, *, encryption: Any = None) -> TokenRegistry:
        """The registry of the SQLite store at ``location``, opened on its own (no
        ``Memory``), also while a server holds the store; ``close()`` it when done."""
        if token_file_for(location) is None:
            raise ValidationError(f"{location!r} is not a file store; use registry_for(memory)")
        store = open_token_store(location, encryption=encryption)
        return cls(store, owned=store)

    def close(self) -> None:
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    def __enter__(self) -> TokenRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def records(self) -> list[TokenRecord]:
        """The live tokens, oldest first."""
        return self._store.live_tokens()

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
        when = now or datetime.now(UTC)
        for _ in range(8):  # a fresh id is taken only by a 48-bit collision
            secret = secrets.token_urlsafe(32)
            salt = secrets.token_hex(16)
            record = TokenRecord(secrets.token_hex(6), name, salt, _digest(salt, secret), when,
                                 user_id, workspace_id, agent_id, read_only)
            if self._store.add_token(record):
                return record, f"{TOKEN_PREFIX}{record.id}_{secret}"
            if any(r.name == name for r in self._store.live_tokens()):
                raise ValidationError(f"a token named {name!r} exists; revoke it first")
        raise StorageError("could not find a free token id")

    def revoke(self, id_or_name: str) -> TokenRecord:
        gone = self._store.revoke_token(id_or_name, datetime.now(UTC))
        if gone is None:
            raise NotFoundError(f"no token with id or name {id_or_name!r}")
        return gone

    def verify(self, token: str) -> TokenRecord:
        """The record of a valid token; SecurityError otherwise (same message for every
        failure, so a caller learns nothing about which part was wrong)."""
        return self.verify_with_sessions(token, None)[0]

    def verify_with_sessions(self, token: str, agent_id: str | None
                             ) -> tuple[TokenRecord, list[SessionRecord] | None]:
        """``verify``, and with ``agent_id`` on a store that reads them together
        (``TokenSessions``), the open sessions of the agent the request acts as (the
        token's bound agent, else ``agent_id``) from the same read; None when not read."""
        match = _TOKEN.match(token or "")
        if match:
            token_id, secret = match.groups()
            sessions: list[SessionRecord] | None = None
            if agent_id is not None and isinstance(self._store, TokenSessions):
                record, sessions = self._store.token_with_sessions(token_id, agent_id)
            else:
                record = self._store.get_token(token_id)
            if record is not None and hmac.compare_digest(
                record.digest, _digest(record.salt, secret)
            ):
                return record, sessions
        raise SecurityError("invalid or revoked token")


def _digest(salt: str, secret: str) -> str:
    return hmac.new(bytes.fromhex(salt), secret.encode("utf-8"), hashlib.sha256).hexdigest()


def registry_for(memory: Any) -> TokenRegistry:
    """The token registry of an open ``Memory``: its store's token table (an older
    registry file beside a file store is moved in first)."""
    storage = memory.token_store()
    adopt_token_file(memory.location, storage)
    return TokenRegistry(storage)
