"""Building valid entries for contract tests without going through ``Memory``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tulving.domain.entry import MemoryEntry, content_hash
from tulving.domain.identity import Identity
from tulving.domain.ids import new_id
from tulving.domain.types import MemoryType, Scope

BASE_TIME = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ALICE = Identity(agent_id="agent-a", user_id="alice", workspace_id="ws1")
BOB = Identity(agent_id="agent-b", user_id="bob", workspace_id="ws1")


class Clockwork:
    """Hands out strictly increasing times so ids and created_at sort together."""

    def __init__(self, start: datetime = BASE_TIME) -> None:
        self.now = start

    def tick(self, seconds: float = 1.0) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


def make_entry(
    clock: Clockwork,
    content: str = "the deploy pipeline uses blue-green releases",
    *,
    identity: Identity = ALICE,
    scope: Scope = Scope.AGENT,
    type: MemoryType = MemoryType.FACT,
    session_id: str | None = None,
    **fields: Any,
) -> MemoryEntry:
    at = fields.pop("at", None) or clock.tick()
    return MemoryEntry(
        id=new_id(at),
        content=content,
        type=type,
        agent_id=identity.agent_id,
        user_id=identity.user_id,
        workspace_id=identity.workspace_id,
        scope=scope,
        partition=identity.partition_for(scope, session_id),
        session_id=session_id,
        created_at=at,
        updated_at=at,
        valid_from=fields.pop("valid_from", at),
        last_accessed_at=at,
        content_hash=content_hash(content),
        **fields,
    )
