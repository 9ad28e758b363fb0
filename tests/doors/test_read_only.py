"""Read-only, at every door that reads without writing: every write is refused with the
door's documented error, and the store is as it was.

The doors of ``ReadOnlyWorld`` read one store that another process writes (it holds
SQLite's writer lock the whole time): ``Memory(read_only=True)``, the CLI, ``tulving mcp
--read-only``, ``tulving mcp`` that finds the lock taken and falls back to reading,
``tulving serve --read-only`` reached raw, by the Python client and by the TypeScript
client, and a read-only token of a writable server. Each write (store, forget, correct,
remember, a session, an applied consolidation, an import) must answer ``read_only`` in the
door's terms (``ReadOnlyError``, exit 4, a tool error, 409; 403 for the token), and the
back channel must read the same rows, audit records, access counts and sessions before and
after (a refused write records nothing either). Reads still answer, and record nothing.
Replaces the write halves of ``tests/e2e/test_mcp_read_only.py``,
``tests/e2e/test_cli_read_only.py`` and ``tests/http/test_read_only_server.py``.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest

from tests.doors import back_channel
from tests.doors.door import Door, perform
from tests.doors.worlds import ReadOnlyWorld, World

DOORS = list(ReadOnlyWorld.NAMES)
#: The doors on the read-only store (the token's server writes, and records reads).
ON_THE_STORE = [d for d in DOORS if d != "http-token"]
#: A door's documented refusal of a write, where it is not ``read_only``: the CLI's
#: writing commands open for writing and find the writer's lock (``LockError``, exit 4:
#: "one process writes a SQLite memory at a time", docs/cli.md).
REFUSAL = {"cli": "locked"}
KEY = "infra/staging-db"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A well-formed bundle of one memory, written by the library's export."""
    from tulving import Memory

    out = io.BytesIO()
    with Memory(tmp_path_factory.mktemp("bundle") / "m.db", agent_id="e2e", user_id="u1",
                embedder="hashing", vectors="exact") as memory:
        memory.store("A bundle's memory: the release train leaves on Tuesdays", type="FACT")
        memory.export(out)
    return out.getvalue()


WRITES: dict[str, dict[str, Any]] = {
    "store": {"content": "a reader must not write this", "type": "FACT"},
    "store under a key": {"content": "the staging database moved to Oslo", "type": "FACT",
                          "key": KEY},
    "forget": {"id_or_key": KEY},
    "forget hard": {"id_or_key": KEY, "hard": True},
    "correct": {"id_or_key": KEY, "content": "the staging database moved to Oslo"},
    "remember": {"text": "I moved the staging database to Oslo yesterday."},
    "start_session": {"goal": "write through a reader"},
    "consolidate apply": {"apply": True},
    "import_bundle": {},
}


@pytest.fixture(scope="module")
def read_only_world(tmp_path_factory: pytest.TempPathFactory,
                    world: World) -> Iterator[ReadOnlyWorld]:
    made = ReadOnlyWorld(tmp_path_factory.mktemp("read-only"), world)
    # near-duplicates: what an applied consolidation would merge (with nothing to merge
    # a read-only door refuses it too: tests/e2e/test_truthful_doors.py)
    for content in ("The release train leaves on Tuesdays", "The release train leaves on "
                    "Tuesdays.", "the release train leaves on Tuesdays!"):
        made.writer.store(content)
    yield made
    made.close()


@pytest.fixture
def reader(request: pytest.FixtureRequest, read_only_world: ReadOnlyWorld) -> Door:
    return read_only_world.door(request.param)


@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("reader", DOORS, indirect=True)
def test_every_write_is_refused_and_the_store_is_unchanged(
        reader: Door, write: str, bundle: bytes) -> None:
    args = WRITES[write] if write != "import_bundle" else {"data": bundle}
    before = back_channel.fingerprint(reader.path), back_channel.recorded(reader.path)
    outcome = perform(reader, write.split()[0], **args)
    assert outcome.family == REFUSAL.get(reader.name, "read_only"), outcome
    assert (back_channel.fingerprint(reader.path),
            back_channel.recorded(reader.path)) == before, "the refused write left a trace"


@pytest.mark.parametrize("reader", ON_THE_STORE, indirect=True)
def test_reads_answer_and_record_nothing(reader: Door) -> None:
    before = back_channel.recorded(reader.path), back_channel.files_beside(reader.path)
    got = perform(reader, "get", id_or_key=KEY)
    assert got.ok, got
    assert perform(reader, "search", query="staging database", top_k=5).ok
    assert perform(reader, "list_keys").ok
    assert (back_channel.recorded(reader.path),
            back_channel.files_beside(reader.path)) == before, "a read left a trace"
