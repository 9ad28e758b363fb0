"""Tulving: persistent, typed, searchable memory for AI agents, curated into a token budget.

    from tulving import Memory, MemoryType

    with Memory("agent.db", agent_id="coder") as memory:
        memory.store("We deploy with blue-green releases", type=MemoryType.DECISION,
                     key="deploy/strategy")
        memory.search("how do we release?")
"""

from typing import TYPE_CHECKING

from tulving.version import __version__

#: Where each public name lives. ``import tulving`` loads none of them: each is imported on
#: first use (PEP 562), so a command line that only prints its help, or a program that
#: only catches ``tulving.TulvingError``, pays for what it touches and nothing else.
_EXPORTS: dict[str, str] = {
    "Memory": "tulving.application.memory",
    "AsyncMemory": "tulving.application.async_memory",
    "RememberJob": "tulving.application.agent_memory.jobs",
    "TulvingWarning": "tulving.application.plumbing.warnings_once",
    "redact": "tulving.application.plumbing.rule_set_source",
    "CuratedContext": "tulving.domain.curated",
    "CuratedEntry": "tulving.domain.curated",
    "MemoryEntry": "tulving.domain.entry",
    "SearchResult": "tulving.domain.query",
    "WritePolicy": "tulving.domain.write_policy",
    "TOOL_ITEM_TAG": "tulving.domain.tool_items",
    **{name: "tulving.domain.types" for name in (
        "ArchiveReason", "MemoryType", "ReviewStatus", "Scope", "SourceType")},
    **{name: "tulving.domain.errors" for name in (
        "BundleError",
        "ConfigError",
        "ContentError",
        "IntegrityError",
        "KeyFormatError",
        "LLMError",
        "LockError",
        "MemoryStoreError",
        "ModelMismatchError",
        "NotFoundError",
        "PolicyViolation",
        "ReadOnlyError",
        "ScopeError",
        "SecurityError",
        "StorageError",
        "TulvingError",
        "UnknownTypeError",
        "ValidationError",
        "VectorIndexError",
    )},
}

if TYPE_CHECKING:  # type checkers see the real names; at run time each loads on first use
    from tulving.application.agent_memory.jobs import RememberJob
    from tulving.application.async_memory import AsyncMemory
    from tulving.application.memory import Memory
    from tulving.application.plumbing.rule_set_source import redact
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
    from tulving.domain.tool_items import TOOL_ITEM_TAG
    from tulving.domain.types import ArchiveReason, MemoryType, ReviewStatus, Scope, SourceType
    from tulving.domain.write_policy import WritePolicy

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
    """A public name, imported from its module on first use and kept here after."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tulving' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
