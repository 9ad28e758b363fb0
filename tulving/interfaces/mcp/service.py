"""The one Memory an MCP server serves, and the discipline for touching it.

Memory calls block (SQLite, the embedding model), so they run on worker threads, one at
a time (a capacity limiter of one): the event loop keeps answering ``initialize``, pings
and cancellations while a search runs, and the store sees one caller at a time. The
Memory starts in the background as soon as the server does — loading the embedding model
takes longer than a client waits for ``initialize`` — and the first tool call simply
waits for it. Shutdown waits for the running call, then closes the Memory (flushing
access statistics and persisting the vector index).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from tulving.domain.errors import ConfigError
from tulving.domain.log_masking import masked_logger

T = TypeVar("T")
log = masked_logger("tulving.mcp")


class MemoryService:
    def __init__(self, open_memory: Callable[[], Any]) -> None:
        self._open_memory = open_memory
        self._memory: Any = None
        self._limiter = anyio.CapacityLimiter(1)
        self._ready = anyio.Event()
        self._failure: BaseException | None = None
        self._closed = False
        self.startup_seconds: float | None = None

    async def start(self) -> None:
        """Build and start the Memory off the loop; remember a failure for every caller."""
        began = time.perf_counter()
        try:
            self._memory = await anyio.to_thread.run_sync(self._build, limiter=self._limiter)
            self.startup_seconds = time.perf_counter() - began
            log.info("memory ready in %.2f s", self.startup_seconds)
        except BaseException as exc:  # shown to each tool call; the server keeps serving
            self._failure = exc
            log.error("memory failed to start: %s", exc)
            if not isinstance(exc, Exception):
                raise
        finally:
            self._ready.set()

    def _build(self) -> Any:
        memory = self._open_memory()
        memory.startup()
        # Warm a lazily loaded model now, in the background, not in the first tool call.
        memory.warm_up()
        return memory

    async def call(self, fn: Callable[[Any], T]) -> T:
        """Run ``fn(memory)`` on a worker thread once the Memory is ready."""
        await self._ready.wait()
        if self._failure is not None:
            raise ConfigError(f"the memory could not be opened: {self._failure}")
        if self._closed or self._memory is None:
            raise ConfigError("the memory server is shutting down")
        memory = self._memory
        return await anyio.to_thread.run_sync(lambda: fn(memory), limiter=self._limiter)

    async def close(self) -> None:
        """Close once: waits for a call in progress (never interrupts a write)."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            await self._ready.wait()
            if self._memory is not None:
                memory = self._memory
                await anyio.to_thread.run_sync(_end_and_close, memory, limiter=self._limiter)
                log.info("memory closed")


def _end_and_close(memory: Any) -> None:
    """The server's session ends with reason ``shutdown`` (summarised), then the memory
    closes; a failure to summarise never keeps the store from closing. A read-only
    memory (``tulving mcp --read-only``, or beside a writer) has no session to end."""
    try:
        if not memory.read_only:
            memory.shutdown_session()
    except Exception:  # the store must still close cleanly
        log.exception("ending the MCP session failed")
    finally:
        memory.close()
