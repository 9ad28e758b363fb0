"""Clock port: all time math takes the clock as input, so decay is testable without sleeping."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """The time every decision reads (decay, recency, sessions, audit): ``system`` in
    production, ``manual`` in tests."""

    def now(self) -> datetime:
        """The current time as an aware UTC datetime; never goes backwards within a run."""
        ...
