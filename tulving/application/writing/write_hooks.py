"""Running the ``tulving_before_write`` hook chain: every plugin sees every entry.

The built-in policies run first, then every other implementation in registration order,
each seeing the previous one's result; one raising ``PolicyViolation`` rejects the write
before anything is stored. Why the order is spelled out here rather than left to pluggy:
pluggy's own call order is last-registered-first, and a third-party policy that ran before
the built-ins would see raw personal data and ``<private>`` text the docs promise it
never sees.
"""

from __future__ import annotations

from typing import Any

from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import TulvingError
from tulving.plugins.hookspecs import BUILTIN_POLICIES


def before_write_order(hook_relay: Any) -> list[Any]:
    """The implementations in the order they run: the built-in policies, then the rest in
    registration order (``get_hookimpls()`` lists them so in pluggy 1.x)."""
    impls = list(hook_relay.tulving_before_write.get_hookimpls())
    return sorted(impls, key=lambda impl: impl.plugin_name != BUILTIN_POLICIES)


def apply_before_write(hook_relay: Any, entry: MemoryEntry, context: Any) -> MemoryEntry:
    if hook_relay is None:
        return entry
    for impl in before_write_order(hook_relay):
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
