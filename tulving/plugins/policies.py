"""Built-in write policies, run through the same ``tulving_before_write`` hook a
third-party policy package implements.

Registered by :mod:`tulving.plugins.builtin` (the package's own entry point), so they run
first and a third-party policy sees the already-cleaned entry. The policy values come
from the Memory that writes (``WriteContext.policy``); a caller that builds a context
without one gets the defaults (private sections stripped, low-trust injections held).
"""

from __future__ import annotations

from typing import Any

from tulving.domain.entry import MemoryEntry
from tulving.domain.write_policy import WritePolicy, enforce
from tulving.plugins.hookspecs import hookimpl

_DEFAULT = WritePolicy()


@hookimpl
def tulving_before_write(entry: MemoryEntry, context: Any) -> MemoryEntry | None:
    policy = getattr(context, "policy", None)
    if not isinstance(policy, WritePolicy):
        policy = _DEFAULT
    result = enforce(entry, policy)
    return None if result is entry else result
