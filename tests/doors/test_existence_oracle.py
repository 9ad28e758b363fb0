"""No existence oracle, at every door: another tenant's memory answers as one nobody has.

Every store of the writable world holds one memory of another tenant (user ``u2``, written
before any door served it); the doors act as user ``u1``. Each operation that takes an id
or a key is asked about that memory and about an id (or key) nobody has: both answers
must be "not found", the same at that door once the id is masked (family, error type,
exit code or status, every character shown), and neither may show the other tenant's text.
The back channel then reads the memory as it was and nothing written, and, after the
door's next write, the refusal in the audit chain (what an operator sees, not the caller).
Replaces the per-door files of issue 34, finding 6
(``tests/e2e/test_mcp_no_existence_oracle.py`` and ``tests/http/test_no_existence_oracle.py``
but its timing check).

The store's owner is told the truth: the library and the CLI hold the file anyway, and
answer another tenant's id with ``NotVisibleError`` (a ``ScopeError``; exit 5 at the CLI),
at every operation alike (docs/operations/governance.md). The CLI's ``get`` used to answer
``ReadOnlyError`` (exit 4): its read-only open queued the refusal's audit record and failed
writing it on close.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.doors import back_channel
from tests.doors.door import Door, perform
from tests.doors.outcome import Outcome
from tests.doors.worlds import FOREIGN, World
from tulving.domain.ids import new_id

DOORS = ["library", "cli", "mcp", "mcp-raw", "http", "client", "ts"]
#: Doors of the store's owner: another tenant's id is refused as such, not hidden.
OWNERS = {"library", "cli"}

#: Operation -> its arguments for an id or key (the write ones would change the memory).
PROBES: dict[str, Callable[[str], dict[str, Any]]] = {
    "get": lambda i: {"id_or_key": i},
    "history": lambda i: {"id_or_key": i},
    "audit": lambda i: {"id_or_key": i},
    "forget": lambda i: {"id_or_key": i},
    "forget hard": lambda i: {"id_or_key": i, "hard": True},
    "correct": lambda i: {"id_or_key": i, "content": "hijacked", "reason": "why"},
}


def seen(outcome: Outcome, probed: str) -> tuple[Any, ...]:
    """Everything a caller learns from an answer, the probed id or key masked."""
    return (outcome.family, outcome.kind, outcome.code,
            outcome.shown.replace(probed, "<id>"),
            json.dumps(outcome.payload, default=str).replace(probed, "<id>"))


def probe(door: Door, probe_name: str, theirs: str, nobody: str) -> Outcome:
    op = probe_name.split()[0]
    foreign = perform(door, op, **PROBES[probe_name](theirs))
    absent = perform(door, op, **PROBES[probe_name](nobody))
    assert "pelican" not in foreign.shown + json.dumps(foreign.payload, default=str)
    assert absent.family == "not_found", absent
    # (history reads a key's versions: an id there is a key nobody has, at every door)
    if door.name in OWNERS and theirs != FOREIGN["key"] and op != "history":
        assert (foreign.family, foreign.kind) == ("refused", "NotVisibleError"), foreign
    else:
        assert seen(foreign, theirs) == seen(absent, nobody), (foreign, absent)
    return foreign


@pytest.mark.parametrize("probe_name", list(PROBES))
@pytest.mark.parametrize("door", DOORS, indirect=True)
def test_another_tenants_id_answers_as_an_unknown_one(
        door: Door, world: World, probe_name: str) -> None:
    foreign = world.foreign[door.path]
    before = back_channel.fingerprint(door.path)
    probe(door, probe_name, foreign, new_id(datetime.now(UTC)))
    assert back_channel.fingerprint(door.path) == before
    assert back_channel.stored(door.path, foreign) == FOREIGN["content"]
    if door.name in OWNERS:  # (the CLI's reading commands open read-only: no audit)
        return
    # refusals are queued like read records (a write on the caller's path would time
    # apart the two answers) and appended with the door's next write
    assert perform(door, "store", content=f"after probing {probe_name}", type="FACT").ok
    assert any(foreign in refused for refused in back_channel.refusals(door.path)), \
        "the refusal is audited"


@pytest.mark.parametrize("door", DOORS, indirect=True)
def test_another_tenants_key_answers_as_an_unknown_one(door: Door) -> None:
    before = back_channel.fingerprint(door.path)
    for probe_name in ("get", "history", "forget"):
        probe(door, probe_name, FOREIGN["key"], "launch/nobodys")
    assert back_channel.fingerprint(door.path) == before


def test_a_read_only_open_refuses_another_tenants_id_and_closes(world: World) -> None:
    """The library's side of the CLI's ``get``: refused as such, and the close that used
    to raise ``ReadOnlyError`` (the refusal's audit record, queued by a reader) is clean."""
    from tulving import Memory
    from tulving.domain.errors import NotVisibleError

    path = world.store("read-only-owner")
    before = back_channel.recorded(path)
    memory = Memory(path, agent_id="e2e", user_id="u1", embedder="hashing", vectors="exact",
                    read_only=True).startup()
    try:
        with pytest.raises(NotVisibleError):
            memory.get(world.foreign[path])
    finally:
        memory.close()
    assert back_channel.recorded(path) == before
