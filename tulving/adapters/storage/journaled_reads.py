"""What every adapter's read journal (``ports.storage.ReadJournal``) shares: a journaled
read as JSON text, and what a batch of them settles into (audit drafts in journal order,
and per entry how many accesses and the latest moment of one)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from tulving.adapters.storage.rows import parse_ts, ts
from tulving.domain.records import AuditDraft


def drafts_rows(drafts: Sequence[AuditDraft]) -> list[dict[str, Any]]:
    """Audit drafts as JSON-ready rows (their details made JSON as ``append_audit``
    stores them, so the record hashed later is the one the read would have appended)."""
    return [{"tenant": d.tenant, "at": ts(d.at), "actor": d.actor, "action": d.action,
             "entry_id": d.entry_id, "input_hash": d.input_hash,
             "details": json.loads(json.dumps(dict(d.details), default=str))}
            for d in drafts]


def drafts_json(drafts: Sequence[AuditDraft]) -> str:
    return json.dumps(drafts_rows(drafts), sort_keys=True)


def _drafts(rows: Sequence[Mapping[str, Any]]) -> list[AuditDraft]:
    out = []
    for d in rows:
        at = parse_ts(d["at"])
        assert at is not None
        out.append(AuditDraft(tenant=d["tenant"], at=at, actor=d["actor"],
                              action=d["action"], entry_id=d["entry_id"],
                              input_hash=d["input_hash"], details=d["details"]))
    return out


@attrs.define
class Settlement:
    """A batch of journaled reads, ready to be written: the audit drafts in journal
    order, and per touched entry (accesses, the last one's moment)."""

    drafts: list[AuditDraft] = attrs.field(factory=list)
    touched: dict[str, tuple[int, datetime]] = attrs.field(factory=dict)
    reads: int = 0

    def add(self, drafts: str | Sequence[Mapping[str, Any]], touched: Iterable[str],
            at: datetime) -> None:
        """One journaled read: its drafts (JSON text or rows), the entries it returned."""
        self.reads += 1
        self.drafts.extend(_drafts(json.loads(drafts) if isinstance(drafts, str) else drafts))
        for entry_id in touched:
            n, last = self.touched.get(entry_id, (0, at))
            self.touched[entry_id] = (n + 1, max(last, at))
