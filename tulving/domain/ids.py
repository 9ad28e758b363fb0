"""Time-sortable entry ids (ULID layout: 48-bit milliseconds + 80 random bits).

Sorting ids sorts by creation time, which keeps "newest first" cheap on every adapter.
The timestamp is an argument, so the domain never reads a clock.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


_lock = threading.Lock()
_last = 0


def new_id(at: datetime) -> str:
    """Monotonic within a process: ids made in the same millisecond (a ``store_many``
    batch) increase, so id order is write order there too."""
    global _last
    millis = int(at.timestamp() * 1000) & ((1 << 48) - 1)
    value = (millis << 80) | int.from_bytes(os.urandom(10), "big")
    with _lock:
        if value <= _last and (_last >> 80) >= millis:
            value = _last + 1
        _last = value
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def looks_like_id(text: str) -> bool:
    return len(text) == 26 and all(c in _ALPHABET for c in text)
