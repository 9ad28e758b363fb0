"""How long writes hold their tenant's write lock, measured inside a ``tulving serve``.

``python benchmarks/_lock_hold.py OUT serve ...`` runs the CLI (``tulving serve ...``) in
this process with timers added around the write path. A write planned before the lock
(``commit_planned``, one message) reports the hold as the server timed it, from taking
the lock to its last statement before ``COMMIT``. A write under the lock in several round
trips is timed here: from its ``lock_tenant_writes`` returning (the lock is held from
then) to the end of its transaction (committed or rolled back: the lock is released). On
exit (SIGTERM included) the hold times go to ``OUT`` as JSON: [epoch when taken, seconds,
1.0 when committed planned]. The library is
not changed: the timers wrap the storage class's method and the writer's ``writing``.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

#: (epoch when taken, seconds held, 1.0 when committed planned in one message else 0.0)
_held: list[tuple[float, float, float]] = []
_acquired = threading.local()


def patch(held: list[tuple[float, float, float]]) -> None:
    """Time every write's hold of its tenant lock into ``held`` (epoch taken, seconds,
    1.0 for a planned commit, 0.0 for a write under the lock in several round trips)."""
    from tulving.adapters.storage.postgres.store import PostgresStorage
    from tulving.application.writing import writer as writer_module

    plain_lock = PostgresStorage.lock_tenant_writes
    plain_writing = writer_module.writing

    def lock_tenant_writes(self: Any, tenant: str) -> None:
        plain_lock(self, tenant)
        if getattr(_acquired, "at", None) is None:  # re-entrant: the first one counts
            _acquired.at = time.perf_counter()
            _acquired.epoch = time.time()

    @contextlib.contextmanager
    def writing(ctx: Any) -> Iterator[None]:
        outer = getattr(_acquired, "depth", 0) == 0
        _acquired.depth = getattr(_acquired, "depth", 0) + 1
        try:
            with plain_writing(ctx):
                yield
        finally:
            _acquired.depth -= 1
            at = getattr(_acquired, "at", None)
            if outer and at is not None:
                held.append((_acquired.epoch, time.perf_counter() - at, 0.0))
                _acquired.at = None

    plain_commit = getattr(PostgresStorage, "commit_planned", None)  # None: before issue 44

    def commit_planned(self: Any, *args: Any, **kwargs: Any) -> Any:
        began = time.time()
        assert plain_commit is not None
        done = plain_commit(self, *args, **kwargs)
        if done is not None:  # held as the server measured it: no round trip inside
            held.append((began, done.held, 1.0))
        return done

    PostgresStorage.lock_tenant_writes = lock_tenant_writes  # type: ignore[method-assign]
    if plain_commit is not None:
        PostgresStorage.commit_planned = commit_planned  # type: ignore[method-assign]
    writer_module.writing = writing  # type: ignore[assignment]


def install(out: str) -> None:
    patch(_held)

    def dump() -> None:
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(_held, handle)

    atexit.register(dump)
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum: int, frame: Any) -> None:
        dump()
        if callable(previous):
            previous(signum, frame)
        else:
            raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_term)


def read(path: str) -> list[tuple[float, float, float]]:
    try:
        with open(path, encoding="utf-8") as handle:
            return [(float(at), float(held), float(planned))
                    for at, held, planned in json.load(handle)]
    except (OSError, ValueError):
        return []


if __name__ == "__main__":
    install(sys.argv[1])
    from tulving.interfaces.cli.main import main

    sys.argv = ["tulving", *sys.argv[2:]]
    sys.exit(main())
