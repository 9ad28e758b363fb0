"""PostgreSQL (+ pgvector) storage: one memory shared by many agents on many machines.

``storage="postgres"`` with a ``postgresql://`` URL. Needs the ``vector`` extension in
the database (created by the first migration when the user may, else by a superuser).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tulving.domain.errors import ConfigError

if TYPE_CHECKING:
    from tulving.plugins.registry import AdapterContext

_OPTIONS = ("schema", "connect_timeout")


def create(
    context: AdapterContext | None,
    *,
    url: str | None = None,
    min_size: int = 1,
    max_size: int = 8,
    **options: Any,
) -> Any:
    """Build a PostgreSQL store (not yet open: ``open()`` connects and migrates) from ``url`` or the context's location.

    Options: ``schema`` (tables live in this schema, created if missing; default: the
    server's search_path), ``connect_timeout`` (seconds to wait for a pooled connection).
    """
    from tulving.adapters.storage.postgres.store import PostgresStorage

    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ConfigError(
            f"unknown postgres storage options {unknown}; known: url, min_size, max_size, "
            + ", ".join(_OPTIONS)
        )
    target = url or (context.location if context is not None else "")
    if not target.startswith(("postgresql://", "postgres://")):
        raise ConfigError(
            "postgres storage needs a postgresql://user@host:port/db URL "
            f"(got {target.split('@')[-1]!r})"
        )
    if not 1 <= int(min_size) <= int(max_size):
        raise ConfigError(f"need 1 <= min_size <= max_size, got {min_size}, {max_size}")
    return PostgresStorage(
        target,
        schema=options.get("schema"),
        min_size=int(min_size),
        max_size=int(max_size),
        connect_timeout=float(options.get("connect_timeout", 30.0)),
    )
