"""The error hierarchy.

Every error Tulving raises on purpose derives from :class:`TulvingError`, so a caller can
catch one base class. Names never shadow builtins (no ``MemoryError``/``IndexError``): an
``except MemoryError`` in user code must keep meaning "out of RAM".
"""

from __future__ import annotations


class TulvingError(Exception):
    """Base of every error raised deliberately by Tulving."""


class ValidationError(TulvingError, ValueError):
    """Input rejected before anything was written (content, key, importance, tags, ...)."""


class ContentError(ValidationError):
    """Content is empty, not a string, or over the size limit."""


class KeyFormatError(ValidationError):
    """A key does not follow the documented grammar."""


class UnknownTypeError(ValidationError):
    """A memory type that is neither a MemoryType nor its exact name."""


class MemoryStoreError(TulvingError):
    """A memory operation failed for a reason that is not the caller's input."""


class NotFoundError(MemoryStoreError, LookupError):
    """No visible entry has this id or key."""


class StorageError(MemoryStoreError):
    """The storage engine failed (I/O, corruption, migration)."""


class LockError(StorageError):
    """Another live process holds the single-writer lock of a store."""


class VectorIndexError(TulvingError):
    """The vector index failed or does not match the embedder."""


class EmbedderError(TulvingError):
    """The embedder could not produce vectors."""


class LLMError(TulvingError):
    """The LLM failed, timed out, returned malformed output or ran out of budget."""


class ConfigError(TulvingError):
    """Configuration is invalid: an unknown adapter name, a bad option, an inline secret."""


class SecurityError(TulvingError):
    """A request was refused for security reasons (traversal path, bad token, policy)."""


class PolicyViolation(SecurityError):
    """A write policy rejected an entry (PII in reject mode, forbidden category, size)."""


class ScopeError(SecurityError):
    """The entry exists but belongs to a tenant or scope this Memory may not see."""


class IntegrityError(TulvingError):
    """Stored data failed verification (audit chain, signature)."""
