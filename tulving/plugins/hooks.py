"""Context objects passed to extension hooks."""

from __future__ import annotations

from typing import Any

import attrs


@attrs.frozen
class WriteContext:
    agent_id: str
    tenant: str
    operation: str  # "store" | "store_many" | "correct" | "remember" | "import"
    #: The writing Memory's ``tulving.domain.write_policy.WritePolicy`` (None: defaults).
    policy: Any = None
