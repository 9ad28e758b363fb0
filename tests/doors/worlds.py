"""The stores and processes behind the doors, started once and only when a suite asks for
a door (a module that uses no TypeScript door starts no Node).

``World``: writable doors, each on a store of its own (the three HTTP doors share one
server and act as different agents of the same tenant). Every store is seeded, before
anything serves it, with one memory of another tenant (user ``u2``): what the existence
oracle suite probes for. The doors act as user ``u1``.

``ReadOnlyWorld``: one store that another process writes (it holds SQLite's writer lock
the whole time), and the doors that read it: ``Memory(read_only=True)``, the CLI's
reading commands, ``tulving mcp --read-only``, ``tulving mcp`` falling back to read-only
beside the writer, ``tulving serve --read-only`` (raw, Python client, TypeScript), and a
read-only token of the writable server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.doors.door import Door
from tests.doors.http_doors import ClientDoor, HTTPRawDoor, TSDoor
from tests.doors.local_doors import CLIDoor, LibraryDoor
from tests.doors.mcp_doors import MCPDoor, MCPRawDoor
from tests.e2e.conftest import ROOT, clean_env
from tests.http.conftest import Server, start_server, stop_server

#: What the other tenant (user u2) stored in every store, and where.
FOREIGN = {"content": "u2's launch code is pelican", "key": "launch/code"}


def seed(path: Path, *, user_id: str, agent_id: str, memories: list[dict[str, Any]]) -> list[str]:
    """Write ``memories`` with the library before any door serves ``path``."""
    from tulving import Memory

    path.parent.mkdir(parents=True, exist_ok=True)
    with Memory(path, agent_id=agent_id, user_id=user_id, embedder="hashing",
                vectors="exact") as memory:
        return [memory.store(m["content"], type="FACT", key=m.get("key"),
                             scope="personal").id for m in memories]


class _Doors:
    """Doors made on first use, closed together."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._doors: dict[str, Door] = {}
        self._closers: list[Callable[[], Any]] = []

    def door(self, name: str) -> Door:
        if name not in self._doors:
            self._doors[name] = self._make(name)
        return self._doors[name]

    def _make(self, name: str) -> Door:
        raise NotImplementedError

    def close(self) -> None:
        for door in self._doors.values():
            door.close()
        for close in reversed(self._closers):
            close()


class World(_Doors):
    """Writable doors (see the module doc)."""

    NAMES = ("library", "cli", "cli-text", "mcp", "mcp-raw", "http", "client", "ts")

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.foreign: dict[Path, str] = {}
        self._server: Server | None = None

    def store(self, name: str) -> Path:
        path = self.folder / name / ("server.db" if name == "server" else "memory.db")
        if path not in self.foreign:
            (self.foreign[path],) = seed(path, user_id="u2", agent_id="someone",
                                         memories=[FOREIGN])
        return path

    @property
    def server(self) -> Server:
        if self._server is None:
            self.store("server")
            # every request logged: the route each one reached is read back from it
            self._server = start_server(self.folder / "server", "--access-log", "all")
            self._closers.append(lambda: stop_server(self._server))  # type: ignore[arg-type]
        return self._server

    def _make(self, name: str) -> Door:
        if name == "library":
            return LibraryDoor(self.store("library"))
        if name in ("cli", "cli-text"):
            return CLIDoor(self.store("cli"), text=name == "cli-text")
        if name == "mcp":
            return MCPDoor(self.store("mcp"))
        if name == "mcp-raw":
            return MCPRawDoor(self.store("mcp-raw"))
        server, path = self.server, self.store("server")
        token = server.tokens["alice"]
        if name == "http":
            return HTTPRawDoor(path, server.url, token)
        if name == "client":
            return ClientDoor(path, server.url, token)
        if name == "ts":
            return TSDoor(path, server.url, token)
        if name == "http-other-tenant":  # bob (u2): the foreign memory's own tenant
            return HTTPRawDoor(path, server.url, server.tokens["bob"], agent="someone",
                               name=name)
        raise KeyError(name)


WRITER = """
import json, sys
from tulving import Memory
memory = Memory(sys.argv[1], agent_id=sys.argv[2], user_id="u1", embedder="hashing",
                vectors="exact")
memory.startup()
print("ready", flush=True)
for line in sys.stdin:
    # dedup=False: what it is sent is stored as sent (a restatement would reinforce)
    entry = memory.store(json.loads(line), type="FACT", scope="personal", dedup=False)
    print(entry.id, flush=True)
memory.close()
"""


class Writer:
    """Another process that holds the store's writer lock and stores what it is sent."""

    def __init__(self, path: Path, agent: str = "e2e") -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), agent],
                                     cwd=ROOT,
                                     env=clean_env(), text=True, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ready"

    def store(self, content: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(content) + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


class ReadOnlyWorld(_Doors):
    """Read-only doors beside a writer (see the module doc)."""

    NAMES = ("library", "cli", "mcp", "mcp-fallback", "http", "client", "ts", "http-token")

    def __init__(self, folder: Path, writable: World) -> None:
        super().__init__(folder)
        self.writable = writable
        self.path = folder / "server.db"
        self.seeded = seed(self.path, user_id="u1", agent_id="e2e", memories=[
            {"content": "The staging database moved to Frankfurt", "key": "infra/staging-db"}])
        # the read-only server's tokens are written before the writer takes the lock
        self.server = start_server(folder, "--read-only")
        self._closers.append(lambda: stop_server(self.server))
        self.writer = Writer(self.path)
        self._closers.append(self.writer.close)

    def _make(self, name: str) -> Door:
        if name == "library":
            return LibraryDoor(self.path, read_only=True)
        if name == "cli":
            return CLIDoor(self.path)
        if name == "mcp":
            return MCPDoor(self.path, "--read-only")
        if name == "mcp-fallback":  # no flag: it finds the lock taken and says so
            return MCPDoor(self.path, errors=self.folder / "fallback.err", name=name)
        # the writer's agent: its memories are theirs, so only read-only can refuse a write
        token, agent = self.server.tokens["alice"], "e2e"
        if name == "http":
            return HTTPRawDoor(self.path, self.server.url, token, agent=agent)
        if name == "client":
            return ClientDoor(self.path, self.server.url, token, agent=agent)
        if name == "ts":
            return TSDoor(self.path, self.server.url, token, agent=agent)
        if name == "http-token":  # a read-only token of the writable server
            server = self.writable.server
            return HTTPRawDoor(self.writable.store("server"), server.url,
                               server.tokens["reader"], name=name)
        raise KeyError(name)
