"""Running the ``tulving_before_write`` hook chain: every plugin sees every entry.

The built-in policies run first (``tryfirst``), then every other implementation in
pluggy's call order, each seeing the previous one's result
(:class:`tulving.plugins.chain.HookChain`: every call is pluggy's, so an implementation
may take a subset of the arguments); one raising ``PolicyViolation`` rejects the write
before anything is stored.
"""

from __future__ import annotations

from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import TulvingError
from tulving.plugins.chain import PluginHooks
from tulving.plugins.hooks import WriteContext


def apply_before_write(
    hooks: PluginHooks | None, entry: MemoryEntry, context: WriteContext
) -> MemoryEntry:
    if hooks is None:
        return entry
    for step in hooks.before_write.steps():
        result = step(entry=entry, context=context)
        if result is not None:
            if not isinstance(result, MemoryEntry):
                raise TulvingError(
                    f"write hook {step.plugin_name} returned {type(result).__name__}, "
                    "expected a MemoryEntry or None"
                )
            entry = result
    return entry
