"""Pool, per-thread transactions, migrations and error translation for the PostgreSQL store.

Connections are autocommit by default; an outer ``transaction()`` checks one connection
out of the pool for its thread and every storage call made inside it on that thread joins
it. Work that needs atomicity but runs outside a caller's transaction goes through
``_atomic``, which retries on deadlock/serialisation failures (only then: inside a
caller's transaction the caller owns the retry decision).

``reading()`` (the port's ``ReadTransactions``) keeps one pooled connection for the
thread for a whole request: its reads share one read transaction, begun at the first
read and committed when a write transaction begins on that connection or the scope ends,
so a request costs one transaction (and one pool checkout) however many statements it
reads with, not one per statement. A write never joins it: one-statement writes go
through ``_autocommit`` (committed at once, as outside the scope), others through
``_atomic`` or ``transaction()``. Each statement still reads what was committed when it
started (READ COMMITTED, as in autocommit), so a decision made inside a write transaction
still sees the last writer's commit.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, ParamSpec, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import errors, sql
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from tulving.adapters.storage.postgres.codec import register_vector, vector_oid
from tulving.adapters.storage.postgres.schema import MIGRATIONS
from tulving.domain.errors import StorageError, TulvingError, ValidationError

Conn = psycopg.Connection[dict[str, Any]]
P = ParamSpec("P")
T = TypeVar("T")

_RETRYABLE = (errors.DeadlockDetected, errors.SerializationFailure)
_RETRIES = 8


def redact(url: str) -> str:
    """The URL without its password (in the netloc or as a query parameter)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}@{host}" if user else host
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k != "password"])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def translate_errors(method: Callable[P, T]) -> Callable[P, T]:
    """Engine failures leave as StorageError (typed errors of ours pass through)."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(*args, **kwargs)
        except TulvingError:
            raise
        except errors.DataException as exc:
            raise ValidationError(f"PostgreSQL rejected the data: {exc}") from exc
        except (psycopg.Error, PoolTimeout) as exc:
            raise StorageError(f"PostgreSQL error: {exc}") from exc

    return wrapper


class PgConnections:
    """Owns the pool and the per-thread outer transaction."""

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 8,
        connect_timeout: float = 30.0,
    ) -> None:
        self._url = url
        self._schema = schema
        self._min_size = min_size
        self._max_size = max_size
        self._timeout = connect_timeout
        self._pool: ConnectionPool[Conn] | None = None
        self._vector_oid = 0
        self._local = threading.local()
        self._open_lock = threading.Lock()
        #: Run on an idle connection before a read transaction begins on it (session
        #: settings another adapter needs, e.g. pgvector's search breadth).
        self._idle_setup: list[Callable[[Conn], None]] = []
        self.location = redact(url)

    # -- lifecycle -------------------------------------------------------------------

    def open(self) -> None:
        with self._open_lock:
            if self._pool is not None:
                return
            try:
                with psycopg.connect(self._url, autocommit=True, connect_timeout=10) as conn:
                    self._prepare_schema(conn)
                    self._migrate(conn)
                    self._vector_oid = vector_oid(conn)
            except TulvingError:
                raise
            except psycopg.Error as exc:
                raise StorageError(f"cannot open PostgreSQL store {self.location}: {exc}") from exc
            pool: ConnectionPool[Conn] = ConnectionPool(
                self._url,
                min_size=self._min_size,
                max_size=self._max_size,
                kwargs={"autocommit": True, "row_factory": dict_row},
                configure=self._configure,
                open=False,
                timeout=self._timeout,
                name=f"tulving:{self.location}",
            )
            try:
                pool.open(wait=True, timeout=self._timeout)
            except PoolTimeout as exc:
                pool.close()
                raise StorageError(f"cannot connect to {self.location}: {exc}") from exc
            self._pool = pool

    def close(self) -> None:
        with self._open_lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def _prepare_schema(self, conn: psycopg.Connection[Any]) -> None:
        if self._schema:
            # CREATE SCHEMA IF NOT EXISTS still races between processes (both see it
            # missing, one loses on the catalog's unique index): serialise it.
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext('tulving:create-schema'))")
                conn.execute(
                    sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self._schema))
                )
        self._set_search_path(conn)

    def _set_search_path(self, conn: psycopg.Connection[Any]) -> None:
        if self._schema:
            conn.execute(
                sql.SQL("SET search_path TO {}, public").format(sql.Identifier(self._schema))
            )

    def _configure(self, conn: Conn) -> None:
        self._set_search_path(conn)
        register_vector(conn, self._vector_oid)

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended('tulving-migrate:' || current_schema(), 0))"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            row = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
            version = int(row[0]) if row else 0
            if version > len(MIGRATIONS):
                raise StorageError(
                    f"{self.location} has schema version {version}, newer than this Tulving "
                    f"({len(MIGRATIONS)}); upgrade Tulving"
                )
            for number, statements in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in statements:
                    try:
                        conn.execute(statement)
                    except errors.InsufficientPrivilege as exc:
                        raise StorageError(
                            f"migration {number} needs a privilege the user lacks ({exc}); "
                            "a superuser must run CREATE EXTENSION vector in this database"
                        ) from exc
                conn.execute(
                    "INSERT INTO meta (name, value) VALUES ('schema_version', %s) "
                    "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                    (str(number),),
                )

    # -- connections and transactions -----------------------------------------------

    @property
    def pool(self) -> ConnectionPool[Conn]:
        if self._pool is None:
            raise StorageError(f"PostgreSQL store {self.location} is not open")
        return self._pool

    def _outer(self) -> Conn | None:
        conn: Conn | None = getattr(self._local, "conn", None)
        return conn

    def _reader(self) -> Conn | None:
        conn: Conn | None = getattr(self._local, "reader", None)
        return conn

    def add_idle_setup(self, setup: Callable[[Conn], None]) -> None:
        """Run ``setup`` on a kept connection while it is idle, before each read
        transaction begins on it (idempotent settings: it may run more than once)."""
        if setup not in self._idle_setup:
            self._idle_setup.append(setup)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Reads of this thread share one read transaction on one connection until the
        scope ends (see the module doc); nested in a transaction or another scope, joins."""
        if self._outer() is not None or self._reader() is not None:
            yield
            return
        with self.pool.connection() as conn:
            self._local.reader = conn
            try:
                yield
            finally:
                self._local.reader = None
                _end_read(conn)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A transaction on this thread's connection; nested calls join the outer one.
        Inside ``reading()``, the read transaction is committed first and the write
        transaction runs on the same connection."""
        if self._outer() is not None:
            self._local.depth += 1
            try:
                yield
            finally:
                self._local.depth -= 1
            return
        reader = self._reader()
        with (nullcontext(reader) if reader is not None else self.pool.connection()) as conn:
            if reader is not None:
                _end_read(conn)
            for setup in self._idle_setup:
                setup(conn)
            self._local.conn = conn
            self._local.depth = 1
            try:
                with conn.transaction():
                    yield
            finally:
                self._local.conn = None
                self._local.depth = 0

    @contextmanager
    def _read(self) -> Iterator[Conn]:
        outer = self._outer()
        if outer is not None:
            yield outer
            return
        reader = self._reader()
        if reader is not None:
            if reader.info.transaction_status == TransactionStatus.IDLE:
                for setup in self._idle_setup:
                    setup(reader)
                reader.execute("BEGIN")
            try:
                yield reader
            except BaseException:
                # a failed statement aborts the read transaction: end it, so the next
                # read of the scope starts a fresh one instead of failing too
                if reader.info.transaction_status == TransactionStatus.INERROR:
                    reader.rollback()
                raise
            return
        with self.pool.connection() as conn:
            yield conn

    @contextmanager
    def _autocommit(self) -> Iterator[Conn]:
        """A connection for a write of one statement committed at once (or the caller's
        transaction): never held in a request's read transaction, where its row locks
        would wait for the end of the request while this thread waits for other locks."""
        outer = self._outer()
        if outer is not None:
            yield outer
            return
        with self._own_connection() as conn:  # idle: the statement commits on its own
            yield conn

    @contextmanager
    def _own_connection(self) -> Iterator[Conn]:
        """An idle connection for work that runs its own transaction: the request's kept
        one (its read transaction ended first), else one from the pool."""
        reader = self._reader()
        if reader is not None:
            _end_read(reader)
            yield reader
            return
        with self.pool.connection() as conn:
            yield conn

    def _atomic(self, work: Callable[[Conn], T]) -> T:
        """Run ``work`` in a transaction: the caller's if there is one, else a fresh one,
        retried on deadlock or serialisation failure."""
        outer = self._outer()
        if outer is not None:
            return work(outer)
        reader = self._reader()
        for attempt in range(_RETRIES):
            try:
                if reader is not None:
                    _end_read(reader)
                    with reader.transaction():
                        return work(reader)
                with self.pool.connection() as conn, conn.transaction():
                    return work(conn)
            except _RETRYABLE:
                if attempt == _RETRIES - 1:
                    raise
                time.sleep(random.uniform(0.005, 0.05) * (attempt + 1))
        raise AssertionError("unreachable")


def _end_read(conn: Conn) -> None:
    """Commit a read transaction left open on ``conn`` (roll back a failed one)."""
    status = conn.info.transaction_status
    if status == TransactionStatus.INTRANS:
        conn.commit()
    elif status == TransactionStatus.INERROR:
        conn.rollback()
