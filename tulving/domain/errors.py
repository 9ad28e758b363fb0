"""The error hierarchy.

Every error Tulving raises on purpose derives from ``TulvingError``, so a caller can
catch one base class. Names never shadow builtins (no ``MemoryError``/``IndexError``): an
``except MemoryError`` in user code must keep meaning "out of RAM".
"""

from __future__ import annotations


class TulvingError(Exception):
    """Base of every error raised deliberately by Tulving."""


class ValidationError(TulvingError, ValueError):
    """Input rejected before anything was written (content, key, importance, tags, ...)."""


class StateConflict(ValidationError):
    """A well-formed call the memory's state refuses now (a session is already active):
    the caller's to resolve, as any invalid input; a door says "conflict" (HTTP 409)."""


class ContentError(ValidationError):
    """Content is empty, not a string, or over the size limit."""


class KeyFormatError(ValidationError):
    """A key does not follow the documented grammar."""


class BundleError(ValidationError):
    """A portability bundle was refused before anything was written: malformed, truncated,
    tampered (digest mismatch), too large, of an unknown schema version, or holding
    entries this Memory may not write."""


class ForeignFormatError(BundleError):
    """A file of another memory system (a Mem0 export, a Zep/Graphiti graph, a Letta
    agent file, OpenTelemetry memory records) was refused before anything was written:
    not that format, broken or truncated JSON, too large or too deep, or records of the
    wrong shape (each named by where it sits in the file)."""


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


class ReadOnlyError(StorageError):
    """A Memory opened read-only (``read_only=True``) was asked to write, or cannot open
    a store without writing to it (a schema migration it needs, a store that is not there)."""


class VectorIndexError(TulvingError):
    """The vector index failed or does not match the embedder."""


class EmbedderError(TulvingError):
    """The embedder could not produce vectors."""


class LLMError(TulvingError):
    """The LLM failed, timed out, returned malformed output or ran out of budget."""


class ConfigError(TulvingError):
    """Configuration is invalid: an unknown adapter name, a bad option, a missing key."""


class ModelMismatchError(ConfigError):
    """A read-only Memory was opened with another embedding model than the one the store
    was embedded with: it never re-embeds (``maintenance("reembed")`` does, on purpose)."""


class SecurityError(TulvingError):
    """A request was refused for security reasons (traversal path, bad token, policy, an
    inline secret such as an API or signing key in code or a config file)."""


class PolicyViolation(SecurityError):
    """A write policy rejected an entry (PII in reject mode, forbidden category, size)."""


class ScopeError(TulvingError):
    """The entry belongs to a tenant or scope this Memory may not see, or is another
    agent's shared entry it may not change. Not a SecurityError (seed 000): crossing a
    scope is an addressing mistake an agent can correct, not an attack to alert on."""


class NotVisibleError(ScopeError):
    """An id that names an entry outside this identity's partitions. In Python (the
    store's owner, who holds the file anyway) it is a ScopeError that says so; the doors
    a caller reaches over a wire (HTTP, MCP) answer it exactly as they answer a missing
    id, with ``as_missing`` as the message, and audit the refusal: a token must not be
    able to probe which ids exist in other tenants."""

    def __init__(self, message: str, *, entry_id: str, as_missing: str) -> None:
        super().__init__(message)
        self.entry_id = entry_id
        self.as_missing = as_missing

    def __reduce__(self) -> tuple[object, ...]:
        return (_not_visible, (str(self), self.entry_id, self.as_missing))


def _not_visible(message: str, entry_id: str, as_missing: str) -> NotVisibleError:
    return NotVisibleError(message, entry_id=entry_id, as_missing=as_missing)


class IntegrityError(TulvingError):
    """Stored data failed verification (audit chain, signature)."""


class EncryptionError(SecurityError):
    """Encryption at rest or of a bundle cannot be applied as asked: a plain store opened
    with a key, a key source that is not allowed, a missing ``encryption`` extra."""


class EncryptionKeyError(EncryptionError):
    """The key is missing, unreadable, too short, or does not open this store or bundle
    (a wrong key and tampered ciphertext look the same to authenticated encryption)."""


class DeadlineExceeded(TulvingError):
    """A call ran past the time its caller gave it (a server's ``--timeout``): it stopped
    at the next safe point and wrote nothing."""
