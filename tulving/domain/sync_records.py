"""The server's sync log as records and rules: a delta's states, the device names a log
accepts, and what adopting a log means for its watermark.

Kept out of the storage port so the port declares and this module decides: every storage
adapter (ours and a third party's), the sync service and the HTTP door check with these
same functions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

import attrs

from tulving.domain.errors import StorageError, ValidationError

DELTA_PENDING = "pending"
"""A plain delta, not merged into the server's store yet."""
DELTA_MERGED = "merged"
"""A plain delta, merged into the server's store."""
DELTA_STORED = "stored"
"""An end to end encrypted delta: kept for devices, never merged (the server has no key)."""
DELTA_QUARANTINED = "quarantined"
"""A delta the server could not merge: kept with a reason, never handed to devices."""
DELTA_STATES = (DELTA_PENDING, DELTA_MERGED, DELTA_STORED, DELTA_QUARANTINED)
"""The states of a delta in a tenant's sync log (``SyncLog``)."""
DEVICE_PATTERN = r"[0-9a-f]{1,64}"
"""A sync device name: 1 to 64 lowercase hex characters, the whole string (a full match:
``re.fullmatch``, so a trailing newline is refused, not slipped through by ``$``)."""


@attrs.frozen
class SyncDelta:
    """One delta of a tenant's sync log; its bytes are read with ``SyncLog.sync_read``."""

    seq: int
    device: str
    delta_id: str
    """The sha256 of the bytes, hex: a push retried by the same device is the same delta."""
    size: int
    e2e: bool
    pushed_at: datetime
    state: str
    reason: str | None = None
    """Why a quarantined delta was not merged (readable by the tenant), else None."""


def check_sync_device(device: object) -> str:
    """``device`` when it is a full match of ``DEVICE_PATTERN``, else ValidationError
    (every adapter and door checks with this one rule)."""
    if not isinstance(device, str) or re.fullmatch(DEVICE_PATTERN, device) is None:
        raise ValidationError(
            f"a sync device name must be 1-64 lowercase hex characters, got {device!r:.80}")
    return device


def check_sync_state(state: object) -> str:
    """``state`` when it is one of ``DELTA_STATES``, else ValidationError."""
    if state not in DELTA_STATES:
        raise ValidationError(f"a delta state is one of {', '.join(DELTA_STATES)}, "
                              f"got {state!r:.40}")
    return str(state)


def checked_adoption(deltas: Sequence[SyncDelta],
                     data: Sequence[bytes]) -> list[tuple[SyncDelta, bytes]]:
    """``SyncLog.sync_adopt``'s input checked once for every adapter (one byte string per
    delta, device names and states by the log's own rules), oldest first."""
    if len(deltas) != len(data):
        raise StorageError("sync_adopt needs one byte string per delta")
    for delta in deltas:
        check_sync_device(delta.device)
        check_sync_state(delta.state)
    return sorted(zip(deltas, data, strict=True), key=lambda pair: pair[0].seq)


def adopted_watermark(deltas: Sequence[SyncDelta]) -> int:
    """The watermark of an adopted log (``SyncLog.sync_adopt``): the last delta of the
    settled run at its start (oldest first)."""
    mark = 0
    for delta in sorted(deltas, key=lambda d: d.seq):
        if delta.state == DELTA_PENDING:
            break
        mark = delta.seq
    return mark
