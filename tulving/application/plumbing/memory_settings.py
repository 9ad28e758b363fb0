"""What ``Memory(...)`` was given, checked and parsed, before anything opens.

Its own small module (not the bootstrap's) so that the facade can hold its settings
without importing the composition: ``from tulving import Memory`` loads this, and the
bootstrap with every service it composes loads when the Memory starts.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.errors import ConfigError

Progress = Callable[[str, int, int], None]

#: Marker for "use the default for this location".
DEFAULT: Any = "__default__"


@attrs.frozen
class MemorySettings:
    """What ``Memory(...)`` was given, checked and parsed (no I/O: the constructor stays
    cheap): where the store is, the adapter choices (names, instances or ``DEFAULT``)
    with their options, and the settings the services take."""

    location: str
    read_only: bool
    choices: Mapping[str, Any]
    options: Mapping[str, Mapping[str, Any]]
    context_window: int
    llm_expansion: bool
    expansion_weight: float
    progress: Progress | None
    signing_key: bytes | None
    encryption: EncryptionKey | None
    ranker: str = "fused"
    #: the strong tier's encoder (an embedder name or instance; None: no strong tier),
    #: its adapter options and the re-scoring knobs (``SearchOptions.strong_*``)
    strong: Any = None
    strong_options: Mapping[str, Any] = attrs.field(factory=dict)
    strong_knobs: Mapping[str, Any] = attrs.field(factory=dict)


def normalise_location(path: str | os.PathLike[str] | None) -> str:
    """The store's location as the adapters take it: ``""`` for none, a URL or
    ``:memory:`` as given, a folder's ``memory.db``, a path with ``~`` expanded."""
    if path is None:
        return ""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise ConfigError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    if "\x00" in path:
        raise ConfigError("path contains a NUL character")
    if path.startswith(("postgresql://", "postgres://")) or path == ":memory:":
        return path
    if path and os.path.isdir(path):
        return os.path.join(path, "memory.db")
    return os.path.expanduser(path)
