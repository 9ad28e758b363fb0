"""Built-in write policies, run through the same ``tulving_before_write`` hook a
third-party policy package implements.

Registered by import (:data:`tulving.plugins.registry.DEFAULT_PLUGINS`) and marked
``tryfirst``, so they run first and a third-party policy sees the already-cleaned entry. The policy values come
from the Memory that writes (``WriteContext.policy``); a caller that builds a context
without one gets the defaults (private sections stripped, low-trust injections held).
"""

from __future__ import annotations

from tulving.domain.entry import MemoryEntry
from tulving.domain.write_policy import WritePolicy, enforce
from tulving.plugins.hooks import WriteContext
from tulving.plugins.hookspecs import hookimpl

_DEFAULT = WritePolicy()


@hookimpl(tryfirst=True)
def tulving_before_write(entry: MemoryEntry, context: WriteContext) -> MemoryEntry | None:
    policy = context.policy if isinstance(context.policy, WritePolicy) else _DEFAULT
    result = enforce(entry, policy)
    return None if result is entry else result
