"""Running the ``tulving_before_write`` hook chain: every plugin sees every entry.

Implementations run in registration order and each sees the previous one's result; one
raising ``PolicyViolation`` rejects the write before anything is stored.
"""

from __future__ import annotations

from typing import Any

from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import TulvingError


def apply_before_write(hook_relay: Any, entry: MemoryEntry, context: Any) -> MemoryEntry:
    if hook_relay is None:
        return entry
    caller = hook_relay.tulving_before_write
    for impl in reversed(caller.get_hookimpls()):  # pluggy stores LIFO; run FIFO
        try:
            result = impl.function(entry=entry, context=context)
        except TulvingError:
            raise
        if result is not None:
            if not isinstance(result, MemoryEntry):
                raise TulvingError(
                    f"write hook {impl.plugin_name} returned {type(result).__name__}, "
                    "expected a MemoryEntry or None"
                )
            entry = result
    return entry
