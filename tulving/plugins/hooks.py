"""Context objects passed to extension hooks (see :mod:`tulving.plugins.hookspecs`)."""

from __future__ import annotations

import attrs

from tulving.domain.write_policy import WritePolicy


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
