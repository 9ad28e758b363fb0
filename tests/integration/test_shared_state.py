"""State that every process of one memory agrees on, kept in the store: sessions seen the
same by two ``Memory`` objects over one store, and bearer tokens as rows of the store
(older registries moved in, nothing kept beside an encrypted store in clear)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tulving import Memory
from tulving.domain.records import SessionRecord
from tulving.interfaces.auth.bearer_tokens import TokenRegistry, registry_for


def _migration_index(migrations: list[list[str]]) -> int:
    """Where the shared-state migration sits (other branches may append after it)."""
    return next(i for i, m in enumerate(migrations) if any("CREATE TABLE tokens" in s
                                                           for s in m))


OLD_TOKEN = {  # as the JSON registry of an older version held it (secret "s" * 43)
    "id": "0123456789ab", "name": "legacy", "salt": "00" * 16,
    "digest": "", "created_at": "2026-11-01T10:00:00.000001+00:00", "user_id": "u1",
    "workspace_id": None, "agent_id": None, "read_only": False,
}
SECRET = "s" * 43


def _old_token() -> dict[str, Any]:
    import hashlib
    import hmac

    digest = hmac.new(bytes.fromhex(OLD_TOKEN["salt"]), SECRET.encode(), hashlib.sha256)
    return {**OLD_TOKEN, "digest": digest.hexdigest()}


# -- sessions across processes --------------------------------------------------------
@pytest.fixture
def two_pg_memories() -> Iterator[Callable[..., Memory]]:
    from tulving.testing.postgres import drop_schema, new_schema_name, require_server

    url = require_server()
    schema = new_schema_name("sessions")
    opened: list[Memory] = []

    def make(**kwargs: Any) -> Memory:
        memory = Memory(url, embedder="hashing", **{"agent_id": "worker", **kwargs},
                        options={"storage": {"schema": schema, "max_size": 2}})
        opened.append(memory)
        return memory.startup()

    yield make
    for memory in opened:
        memory.close()
    drop_schema(url, schema)


@pytest.mark.postgres
def test_two_processes_of_one_agent_share_its_sessions(two_pg_memories: Any) -> None:
    one, two = two_pg_memories(), two_pg_memories()
    a = one.store("written through the first", type="FACT")
    b = two.store("written through the second", type="FACT")
    assert a.session_id == b.session_id  # one implicit session, whoever writes first
    started = one.start_session("migrate the ledger")
    assert two.session_id == started.id
    inside = two.store("step done", type="OBSERVATION")
    assert inside.session_id == started.id
    ended = two.end_session()
    assert ended is not None and ended.id == started.id and ended.end_reason == "ended"
    assert one.session_id is None and one.end_session() is None
    implicit = one.ctx.storage.get_session(a.session_id)
    assert implicit is not None and implicit.ended_at is not None  # yielded to the explicit


# -- tokens ---------------------------------------------------------------------------
def test_an_older_token_file_moves_into_the_store(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    legacy = tmp_path / "m.db.tokens.json"
    legacy.write_text(json.dumps([_old_token()]), encoding="utf-8")
    with Memory(path, agent_id="a", embedder="hashing", vectors="exact") as memory:
        registry = registry_for(memory)
        assert not legacy.exists()
        assert registry.verify(f"tlv_{OLD_TOKEN['id']}_{SECRET}").user_id == "u1"
        registry.revoke("legacy")
    legacy.write_text(json.dumps([_old_token()]), encoding="utf-8")  # a stale copy
    with TokenRegistry.beside(str(path)) as again:  # a revoked token never comes back
        assert again.records() == [] and not legacy.exists()


def test_an_encrypted_store_keeps_no_token_registry_in_clear(tmp_path: Path) -> None:
    os.environ["TULVING_TEST_TOKEN_KEY"] = "the store's passphrase, not a token"
    try:
        path = tmp_path / "sealed.db"
        with Memory(path, agent_id="a", embedder="hashing", vectors="exact",
                    encryption="env:TULVING_TEST_TOKEN_KEY") as memory:
            record, token = registry_for(memory).create("deploy-bot", user_id="u1")
        for f in tmp_path.iterdir():
            data = f.read_bytes()
            assert b"deploy-bot" not in data and record.digest.encode() not in data, f
        with TokenRegistry.beside(str(path), encryption="env:TULVING_TEST_TOKEN_KEY") as reg:
            assert reg.verify(token).name == "deploy-bot"
    finally:
        del os.environ["TULVING_TEST_TOKEN_KEY"]


def _downgrade_then_reopen(monkeypatch: pytest.MonkeyPatch, module: Any, make: Any,
                           seed: Callable[[Any], None]) -> Any:
    """Open a store at the schema before the shared-state migration, ``seed`` it as an
    older version would have, then open it with every migration."""
    full = list(module.MIGRATIONS)
    monkeypatch.setattr(module, "MIGRATIONS", full[:_migration_index(full)])
    store = make()
    store.open()
    seed(store)
    store.close()
    monkeypatch.setattr(module, "MIGRATIONS", full)
    again = make()
    again.open()
    return again


def _seed(store: Any) -> None:
    store.set_meta("mcp_tokens", json.dumps([_old_token()]))
    at = datetime(2026, 11, 1, tzinfo=UTC)
    for n in range(3):  # an agent whose processes each kept their own implicit session
        store.put_session(SessionRecord(f"s{n}", "a", "t", at.replace(minute=n),
                                        at.replace(minute=n), implicit=True))


def _check_migrated(store: Any) -> None:
    try:
        registry = TokenRegistry(store)
        assert registry.verify(f"tlv_{OLD_TOKEN['id']}_{SECRET}").name == "legacy"
        assert store.get_meta("mcp_tokens") is None
        assert [s.id for s in store.open_sessions("a", "t")] == ["s2"]  # the newest stays
        assert store.get_session("s0").end_reason == "abandoned"
    finally:
        store.close()


def test_sqlite_migration_moves_the_meta_registry_and_ends_duplicate_sessions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tulving.adapters.storage.sqlite import SQLiteStorage
    from tulving.adapters.storage.sqlite import connection as module

    _check_migrated(_downgrade_then_reopen(
        monkeypatch, module, lambda: SQLiteStorage(str(tmp_path / "old.db")), _seed))


@pytest.mark.postgres
def test_postgres_migration_moves_the_meta_registry_and_ends_duplicate_sessions(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from tulving.adapters.storage.postgres import connection as module
    from tulving.adapters.storage.postgres import create
    from tulving.plugins.registry import AdapterContext
    from tulving.testing.postgres import drop_schema, new_schema_name, require_server

    url = require_server()
    schema = new_schema_name("oldschema")
    try:
        _check_migrated(_downgrade_then_reopen(
            monkeypatch, module,
            lambda: create(AdapterContext(location=url), schema=schema, max_size=2), _seed))
    finally:
        drop_schema(url, schema)
