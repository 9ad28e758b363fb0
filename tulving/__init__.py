"""Tulving: persistent, typed, searchable memory for AI agents, curated into a token budget.

    from tulving import Memory, MemoryType

    with Memory("agent.db", agent_id="coder") as memory:
        memory.store("We deploy with blue-green releases", type=MemoryType.DECISION,
                     key="deploy/strategy")
        memory.search("how do we release?")
"""

from typing import TYPE_CHECKING

from tulving.adapters.detectors import install_default as _install_detectors
from tulving.application.agent_memory.jobs import RememberJob
from tulving.application.memory import Memory
from tulving.application.plumbing.warnings_once import TulvingWarning
from tulving.domain.curated import CuratedContext, CuratedEntry
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import (
    BundleError,
    ConfigError,
    ContentError,
    IntegrityError,
    KeyFormatError,
    LLMError,
    LockError,
    MemoryStoreError,
    ModelMismatchError,
    NotFoundError,
    PolicyViolation,
    ReadOnlyError,
    ScopeError,
    SecurityError,
    StorageError,
    TulvingError,
    UnknownTypeError,
    ValidationError,
    VectorIndexError,
)
from tulving.domain.query import SearchResult
from tulving.domain.redaction import redact
from tulving.domain.tool_items import TOOL_ITEM_TAG
from tulving.domain.types import ArchiveReason, MemoryType, ReviewStatus, Scope, SourceType
from tulving.domain.write_policy import WritePolicy
from tulving.version import __version__

# The rule sets redaction masks with (detect-secrets' plugins, python-stdnum's
# validators) reach the domain as data, loaded on first use.
_install_detectors()

if TYPE_CHECKING:  # type checkers see the real class; at run time it loads on first use
    from tulving.application.async_memory import AsyncMemory

__all__ = [
    "TOOL_ITEM_TAG",
    "ArchiveReason",
    "AsyncMemory",
    "BundleError",
    "ConfigError",
    "ContentError",
    "CuratedContext",
    "CuratedEntry",
    "IntegrityError",
    "KeyFormatError",
    "LLMError",
    "LockError",
    "Memory",
    "MemoryEntry",
    "MemoryStoreError",
    "MemoryType",
    "ModelMismatchError",
    "NotFoundError",
    "PolicyViolation",
    "ReadOnlyError",
    "RememberJob",
    "ReviewStatus",
    "Scope",
    "ScopeError",
    "SearchResult",
    "SecurityError",
    "SourceType",
    "StorageError",
    "TulvingError",
    "TulvingWarning",
    "UnknownTypeError",
    "ValidationError",
    "VectorIndexError",
    "WritePolicy",
    "__version__",
    "redact",
]


def __getattr__(name: str) -> object:
    """``tulving.AsyncMemory`` on first use: ``import tulving`` stays light (no anyio)."""
    if name == "AsyncMemory":
        from tulving.application.async_memory import AsyncMemory

        return AsyncMemory
    raise AttributeError(f"module 'tulving' has no attribute {name!r}")
