"""Hash chaining of audit records: each record commits to its predecessor in its tenant.

A modified, removed or reordered record breaks the chain at that point, which
``verify_chain`` reports. Storage computes the hash inside the same transaction that
reads the previous one, so concurrent writers cannot fork the chain.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

GENESIS = "0" * 64


def record_hash(
    prev_hash: str,
    seq: int,
    tenant: str,
    at: datetime,
    actor: str,
    action: str,
    entry_id: str | None,
    input_hash: str,
    details: Mapping[str, Any],
) -> str:
    body = json.dumps(
        [prev_hash, seq, tenant, at.isoformat(), actor, action, entry_id, input_hash, details],
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def verify_chain(records: Iterable[Any]) -> list[str]:
    """Problems found in one tenant's records, given in ``seq`` order; empty if intact."""
    problems: list[str] = []
    prev = GENESIS
    last_seq = 0
    for rec in records:
        if rec.seq <= last_seq:
            problems.append(f"record {rec.seq} is out of order after {last_seq}")
        if rec.prev_hash != prev:
            problems.append(f"record {rec.seq} does not follow its predecessor (removed or reordered)")
        expected = record_hash(
            rec.prev_hash, rec.seq, rec.tenant, rec.at, rec.actor, rec.action,
            rec.entry_id, rec.input_hash, rec.details,
        )
        if expected != rec.hash:
            problems.append(f"record {rec.seq} was modified")
        prev = rec.hash
        last_seq = rec.seq
    return problems
