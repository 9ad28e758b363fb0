"""What must hold in the store after replicas raced on it, read through the back channel:
every conflict link two-way, every supersede link two-way, one active entry per key, one
active entry per exact text, one open implicit session per agent."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any


def tenant_entries(back: Any, user_id: str) -> dict[str, dict[str, Any]]:
    rows = back.rows(
        "SELECT id, partition, key, type, content, content_hash, conflict_ids, supersedes, "
        "superseded_by, archived_at, archive_reason, session_id FROM entries "
        "WHERE user_id = %s", (user_id,))
    return {r["id"]: {**r, "conflict_ids": json.loads(r["conflict_ids"])} for r in rows}


def link_problems(entries: dict[str, dict[str, Any]]) -> list[str]:
    problems = []
    for e in entries.values():
        for other in e["conflict_ids"]:
            if other not in entries:
                problems.append(f"{e['id']} flags missing {other}")
            elif e["id"] not in entries[other]["conflict_ids"]:
                problems.append(f"{e['id']} flags {other}, which does not flag it back")
        if e["superseded_by"] is not None:
            after = entries.get(e["superseded_by"])
            if after is None or after["supersedes"] != e["id"]:
                problems.append(f"{e['id']} superseded by {e['superseded_by']}, "
                                "which does not name it")
        if e["supersedes"] is not None:
            before = entries.get(e["supersedes"])
            if before is None or before["superseded_by"] != e["id"]:
                problems.append(f"{e['id']} supersedes {e['supersedes']}, "
                                "which does not name it")
    return problems


def duplicate_actives(entries: dict[str, dict[str, Any]]) -> list[str]:
    """Keys with more than one active entry, and exact texts stored twice as active
    entries of one type in one partition (the second must have been a no-op)."""
    active = [e for e in entries.values() if e["archived_at"] is None]
    keys = Counter((e["partition"], e["key"]) for e in active if e["key"] is not None)
    texts = Counter((e["partition"], e["type"], e["content_hash"]) for e in active
                    if e["type"] in ("FACT", "PREFERENCE", "DECISION"))
    return ([f"key {k[1]!r}: {n} active entries" for k, n in keys.items() if n > 1]
            + [f"text {k[2][:12]}: {n} active entries" for k, n in texts.items() if n > 1])


def open_implicit_sessions(back: Any, agent_id: str) -> list[dict[str, Any]]:
    return back.rows("SELECT id FROM sessions WHERE agent_id = %s AND implicit "
                     "AND ended_at IS NULL", (agent_id,))


def deadlocks(back: Any) -> int:
    row = back.rows("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
    return int(row[0]["deadlocks"])
