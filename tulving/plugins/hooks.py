"""Context objects passed to extension hooks (see :mod:`tulving.plugins.hookspecs`)."""

from __future__ import annotations

from typing import Protocol

import attrs

from tulving.domain.write_policy import WritePolicy


class AdapterRegistry(Protocol):
    """What ``tulving_register_adapters`` gets: where a plugin names its adapters. The host
    owns naming, aliases and duplicates (``tulving.plugins.registry.Registry``)."""

    def add(self, kind: str, name: str, target: str, *, extra: str | None = None,
            description: str = "", aliases: tuple[str, ...] = (),
            requires: tuple[str, ...] = ()) -> None:
        """Register the factory ``target`` (``"module:attr"``, imported only when the
        adapter is chosen) as the ``kind`` adapter ``name``; ``extra`` names the
        distribution extra that installs what it needs (``requires``: its top-level
        modules)."""
        ...


@attrs.frozen
class WriteContext:
    """Who writes and how, for ``tulving_before_write``."""

    agent_id: str
    tenant: str
    operation: str
    """``"store"``, ``"store_many"``, ``"correct"``, ``"remember"``, ``"import"``, ..."""
    policy: WritePolicy | None = None
    """The writing Memory's write policy (None: the defaults)."""


@attrs.frozen
class CurateContext:
    """What a ``tulving_after_curate`` implementation may need to know about the block it
    post-processes. Its replacement must fit ``token_budget`` (counted by the Memory's
    tokenizer): one that does not is dropped, with a warning, and the block stays as the
    previous step left it."""

    agent_id: str
    tenant: str
    mode: str
    """``"query"`` or ``"orient"``."""
    query: str | None
    token_budget: int
