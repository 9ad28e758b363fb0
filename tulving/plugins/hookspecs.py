"""pluggy hook specifications of the ``tulving`` project.

Hooks are named ``tulving_*``. Adapter registration follows the ``register_*(registry)``
pattern (the host owns naming, aliases and duplicate handling); built-in adapters use the
very same hook from :mod:`tulving.plugins.builtin`, registered by import (third-party
packages come in through the ``tulving`` entry-point group). pluggy makes every call, so
an implementation may accept a subset of a hook's arguments and specs may grow arguments
later; ``tests/integration/test_hook_subsets.py`` runs one such implementation of every
hook. The write and curate hooks are chains (:mod:`tulving.plugins.chain`): each
implementation sees the previous one's result, in pluggy's order (``tryfirst``, then the
last registered first, then ``trylast``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:  # the host's types, named for readers and type checkers only
    from tulving.domain.entry import MemoryEntry
    from tulving.plugins.hooks import AdapterRegistry, CurateContext, WriteContext

PROJECT = "tulving"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
#: The plugin name under which the host registers the built-in write policies
#: (:mod:`tulving.plugins.policies`); marked ``tryfirst``, they run before any other
#: ``tulving_before_write``, and a plugin ordered ahead of them is refused.
BUILTIN_POLICIES = "tulving-policies"


@hookspec
def tulving_register_adapters(registry: AdapterRegistry) -> None:
    """Add adapter factories with ``registry.add(kind, name, "module:attr", extra=...)``."""


@hookspec
def tulving_before_write(entry: MemoryEntry, context: WriteContext) -> MemoryEntry | None:
    """See every entry before it is written.

    Return ``None`` to leave it unchanged, a new entry (``attrs.evolve``) to transform it,
    or raise ``PolicyViolation`` to reject the write. ``context`` is a
    :class:`tulving.plugins.hooks.WriteContext`. The built-in policies (PII, secrets,
    ``<private>``, size, categories, injection review) always run first (``tryfirst``),
    so an implementation never sees what they remove; the others run in pluggy's order
    (entry points by name; ``trylast`` at the end) and each sees the previous one's
    result. ``tryfirst`` is the built-ins' alone here: a plugin pluggy would call before
    them is a ConfigError.
    """


@hookspec
def tulving_after_curate(content: str, context: CurateContext) -> str | None:
    """Post-process a curated block (``curate()`` in either mode); return replacement
    text or ``None`` to leave it. Implementations run in pluggy's order (``tryfirst``,
    then entry points by name, ``trylast`` at the end), each on the previous one's result. The budget is re-checked after every hook: a replacement that
    costs more than ``context.token_budget`` is dropped with a warning, so a hook cannot
    overflow it. The entries the block lists (``CuratedContext.entries``) are not
    changed."""
