"""Context objects passed to extension hooks."""

from __future__ import annotations

import attrs


@attrs.frozen
class WriteContext:
    agent_id: str
    tenant: str
    operation: str  # "store" | "store_many" | "correct" | "remember" | "import"
