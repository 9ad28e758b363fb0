"""Three real ``tulving serve`` replicas over one PostgreSQL schema, for the replicas suite.

Each replica is its own process with its own connection pool, as replicas on different
machines would be; clients reach them over HTTP on 127.0.0.1. The store's tokens are made
in this process through the public token API (the same path ``tulving serve token
create`` takes), one tenant per test so tests never see each other's entries. The
``back`` fixture reads the schema's tables directly with psycopg, behind every replica's
back, so a replica cannot vouch for itself.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import ROOT, clean_env
from tests.http.conftest import free_port, wait_healthy
from tulving.testing.postgres import drop_schema, new_schema_name, require_server

pytestmark = pytest.mark.postgres

REPLICAS = 3
#: Tenants (bound users) with a token each; a test uses its own.
TENANTS = ("dup", "dup16", "idem", "sess", "kill", "tok")


class Replica:
    def __init__(self, index: int, folder: Path, config: Path) -> None:
        self.index, self.folder, self.config = index, folder, config
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = folder / f"replica-{index}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        handle = open(self.log, "ab")  # noqa: SIM115 - the replica's life long
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tulving.interfaces.cli.main", "serve", "--config",
             str(self.config), "--port", str(self.port), "--concurrency", "8"],
            env=clean_env(), cwd=str(ROOT), stdout=handle, stderr=handle)

    def wait_ready(self, timeout: float = 60) -> None:
        assert self.proc is not None
        wait_healthy(self.url, self.proc, self.log.read_text, timeout=timeout,
                     what=f"replica {self.index}")

    def kill(self) -> None:
        """``kill -9``: no shutdown, no flush, connections dropped mid-transaction."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=20)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)


class Cluster:
    def __init__(self, url: str, schema: str, replicas: list[Replica],
                 tokens: dict[str, str]) -> None:
        self.pg_url, self.schema, self.replicas, self.tokens = url, schema, replicas, tokens

    def headers(self, tenant: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[tenant]}"}

    def memory(self, **kwargs: Any) -> Any:
        """A ``Memory`` over the cluster's schema in this process (a fourth writer)."""
        from tulving import Memory

        kwargs.setdefault("agent_id", "test")
        return Memory(self.pg_url, embedder="hashing",
                      options={"storage": {"schema": self.schema, "max_size": 4}}, **kwargs)


class BackChannel:
    """The schema's rows read directly, not through any replica."""

    def __init__(self, url: str, schema: str) -> None:
        self.url, self.schema = url, schema

    def rows(self, query: str, params: Any = ()) -> list[dict[str, Any]]:
        import psycopg
        from psycopg import sql
        from psycopg.rows import dict_row

        with psycopg.connect(self.url, row_factory=dict_row, autocommit=True) as conn:
            conn.execute(sql.SQL("SET search_path TO {}, public").format(
                sql.Identifier(self.schema)))
            return conn.execute(query, params).fetchall()  # type: ignore[arg-type]


def write_config(folder: Path, url: str, schema: str) -> Path:
    """tulving.toml for the replicas: the store, its schema and a fast embedder."""
    config = folder / "tulving.toml"
    config.write_text(
        "[tulving]\n"
        f"path = {url!r}\n"
        "embedder = \"hashing\"\n"
        "[tulving.options.storage]\n"
        f"schema = {schema!r}\n"
        "max_size = 10\n", encoding="utf-8")
    return config


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    url = require_server()
    schema = new_schema_name("replicas")
    folder = tmp_path_factory.mktemp("replicas")
    config = write_config(folder, url, schema)
    from tulving.interfaces.auth.bearer_tokens import registry_for

    tokens: dict[str, str] = {}
    replicas = [Replica(i, folder, config) for i in range(REPLICAS)]
    try:
        holder = Cluster(url, schema, replicas, tokens)
        with holder.memory() as memory:  # migrates the schema before the replicas race
            registry = registry_for(memory)
            for tenant in TENANTS:
                tokens[tenant] = registry.create(f"t-{tenant}", user_id=f"u-{tenant}")[1]
        for replica in replicas:
            replica.start()
        for replica in replicas:
            replica.wait_ready()
        yield holder
    finally:
        for replica in replicas:
            replica.stop()
        drop_schema(url, schema)


@pytest.fixture
def back(cluster: Cluster) -> BackChannel:
    return BackChannel(cluster.pg_url, cluster.schema)


@pytest.fixture
def clients(cluster: Cluster) -> Iterator[Callable[[int], httpx.Client]]:
    """``clients(i)``: an httpx client of replica ``i % n`` (one per replica and thread,
    closed after the test)."""
    made: dict[tuple[int, int], httpx.Client] = {}

    def make(i: int) -> httpx.Client:
        slot = (i % len(cluster.replicas), threading.get_ident())
        if slot not in made:
            made[slot] = httpx.Client(base_url=cluster.replicas[slot[0]].url, timeout=60)
        return made[slot]

    yield make
    for client in made.values():
        client.close()
