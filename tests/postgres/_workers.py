"""Process bodies for the concurrency tests (importable by multiprocessing's spawn)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

from tulving.domain.entry import MemoryEntry, content_hash
from tulving.domain.identity import Identity
from tulving.domain.ids import new_id
from tulving.domain.records import AuditDraft
from tulving.domain.types import MemoryType, Scope

IDENTITY = Identity(agent_id="racer", user_id="u", workspace_id="w")
PARTITION = IDENTITY.partition_for(Scope.SHARED, None)


def entry(content: str, key: str | None, agent: str) -> MemoryEntry:
    at = datetime.now(UTC)
    return MemoryEntry(
        id=new_id(at),
        content=content,
        type=MemoryType.FACT,
        agent_id=agent,
        user_id=IDENTITY.user_id,
        workspace_id=IDENTITY.workspace_id,
        scope=Scope.SHARED,
        partition=PARTITION,
        key=key,
        created_at=at,
        updated_at=at,
        valid_from=at,
        last_accessed_at=at,
        content_hash=content_hash(content),
    )


def race(
    url: str,
    schema: str,
    worker: int,
    writes: int,
    keys: list[str],
    touch_ids: list[str],
    touches: int,
    audits: int,
    results: Any,
) -> None:
    """Interleave keyed writes, touches (ids in shuffled order) and audit appends."""
    from tulving.adapters.storage.postgres import create
    from tulving.plugins.registry import AdapterContext

    rng = random.Random(worker)
    try:
        store = create(AdapterContext(location=url), schema=schema, max_size=2)
        store.open()
        written: list[str] = []
        plan = (["w"] * writes) + (["t"] * touches) + (["a"] * audits)
        rng.shuffle(plan)
        for step, kind in enumerate(plan):
            if kind == "w":
                key = keys[rng.randrange(len(keys))]
                out = store.write(
                    entry(f"worker {worker} step {step} for {key}", key, f"w{worker}")
                )
                written.append(out.entry.id)
            elif kind == "t":
                ids = touch_ids[:]
                rng.shuffle(ids)
                store.touch(ids, datetime.now(UTC))
            else:
                store.append_audit(
                    [
                        AuditDraft(
                            "tenant-x",
                            datetime.now(UTC),
                            f"w{worker}",
                            "store",
                            None,
                            str(step),
                            {"w": worker},
                        )
                    ]
                )
        store.close()
        results.put((worker, "ok", written))
    except BaseException as exc:  # reported to the parent, which fails the test
        results.put((worker, "error", repr(exc)))
