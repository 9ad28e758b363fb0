"""What a sync server answers a device (``/v1/sync``), as typed records: the device side
(``application.portability.sync``) reads these, whichever client brought them
(``tulving.client.TulvingClient`` parses the server's JSON into them)."""

from __future__ import annotations

import attrs

from tulving.domain.reports import Report


@attrs.frozen
class PushAnswer(Report):
    """A pushed delta as the server logged it: its sequence number and id, whether it was
    new (a retried push is the delta logged then), and its state (``merged``, ``stored``,
    ``quarantined`` with the ``reason``, or ``pending`` while the server merges it)."""

    seq: int
    delta_id: str
    new: bool
    state: str
    merged: bool
    reason: str | None = None


@attrs.frozen
class ListedDelta(Report):
    """One delta of the tenant's log a device may pull: fetch its bytes by ``seq``."""

    seq: int
    device: str
    delta_id: str
    size: int


@attrs.frozen
class TenantAnswer(Report):
    """The tenant the device's token acts for."""

    user_id: str | None
    workspace_id: str | None
