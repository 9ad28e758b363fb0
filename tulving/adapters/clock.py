"""System and manual clocks."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from tulving.domain.errors import ConfigError

if TYPE_CHECKING:
    from tulving.plugins.registry import AdapterContext


class SystemClock:
    """Wall clock in UTC, made monotonic so ids and audit times never go backwards."""

    def __init__(self) -> None:
        self._last = datetime.min.replace(tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            current = datetime.now(UTC)
            if current <= self._last:
                current = self._last + timedelta(microseconds=1)
            self._last = current
            return current


class ManualClock:
    """A clock that moves only when told; every ``now()`` is strictly later than the last
    by one microsecond, so ordering by time stays total as with a real clock."""

    def __init__(self, start: datetime | None = None) -> None:
        start = start or datetime(2026, 1, 1, tzinfo=UTC)
        if start.tzinfo is None:
            raise ConfigError("ManualClock needs an aware datetime")
        self._now = start.astimezone(UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            self._now += timedelta(microseconds=1)
            return self._now

    def advance(self, delta: timedelta | None = None, **kwargs: float) -> datetime:
        with self._lock:
            self._now += delta if delta is not None else timedelta(**kwargs)
            return self._now

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._now = moment.astimezone(UTC)


def create_system(context: AdapterContext | None = None) -> SystemClock:
    return SystemClock()


def create_manual(context: AdapterContext | None = None, start: datetime | None = None) -> ManualClock:
    return ManualClock(start)
