"""Strict inputs, at every door: bad input gets the door's typed error and writes nothing.

One case list, run at the library, the CLI, MCP (the official client, and raw JSON-RPC for
what it cannot send), HTTP (raw, the Python client, the TypeScript client). Each case must
answer the family ``invalid`` in the door's own terms (a ``ValidationError``, exit 2 with
a JSON error object, a tool error, 422), leave the store as it was (read with sqlite3, not
through the door), and leave a persistent door serving. A door that cannot express a case
(argv holds text only; the official MCP client will not serialise a lone surrogate) skips
it with its reason. Replaces the per-door files of issues 33, 34 and 42
(``tests/e2e/test_mcp_strict_inputs.py``, ``tests/http/test_strict_inputs.py``, the
library's ``test_bad_input`` cases, the CLI's exit-2 cases).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.doors import back_channel
from tests.doors.door import Door, perform
from tests.doors.outcome import Unsupported
from tests.e2e.test_cli_safety import bundle_with_manifest

DOORS = ["library", "cli", "mcp", "mcp-raw", "http", "client", "ts"]
#: Doors that keep one process (or one Memory) for many calls: each case also checks the
#: door still serves after it (a refused surrogate used to drop the HTTP connection).
PERSISTENT = {"library", "mcp", "mcp-raw", "http", "client", "ts"}
#: A lone surrogate: what undecodable bytes in argv become, and JSON's "\udcff".
BAD = "a\udcffb"
HIGH = "a\ud800b"


def deep(depth: int) -> dict[str, Any]:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"d": value}
    return value  # type: ignore[no-any-return]


def store(content: Any = "a well-formed memory", **fields: Any) -> tuple[str, dict[str, Any]]:
    return "store", {"content": content, "type": fields.pop("type", "FACT"), **fields}


ANCHOR = "anchor/strict"
#: name -> (operation, arguments). Every one is refused as invalid input.
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    # content
    "empty content": store(""),
    "whitespace content": store("   \n\t"),
    "content over 100,000 characters": store("x" * 100_001),
    "a NUL in content": store("nul\x00byte"),
    "content is a number": store(5),
    "content is a list": store(["list"]),
    "content is null": store(None),
    # type
    "an unknown type": store(type="GOSSIP"),
    "type is a number": store(type=3),
    # unknown names
    "an unknown field of store": store(extra={"colour": "blue"}),
    "an unknown field of search": ("search", {"query": "x", "extra": {"tpo_k": 3}}),
    # keys (traversal and grammar)
    "a traversal key": store(key="../../etc/passwd"),
    "an absolute key": store(key="/abs"),
    "a key with a space": store(key="has space"),
    "a key over 200 characters": store(key="k" * 201),
    "a key is a number": store(key=7),
    # tags
    "a tag with a comma": store(tags=["a,b"]),
    "a tag over 64 characters": store(tags=["x" * 65]),
    "tags is a string": store(tags="single-string"),
    "40 tags": store(tags=[f"t{i}" for i in range(40)]),
    "a tag is a number": store(tags=[1]),
    # numbers and flags: no coercion
    "importance over 1": store(importance=3),
    "importance is a bool": store(importance=True),
    "importance is a string": store(importance="0.5"),
    "pinned is a string": store(pinned="yes"),
    "top_k is a bool": ("search", {"query": "x", "top_k": True}),
    "top_k is 0": ("search", {"query": "x", "top_k": 0}),
    "top_k is a float": ("search", {"query": "x", "top_k": 2.5}),
    "token_budget is a bool": ("curate", {"query": "x", "token_budget": True}),
    "consolidate apply is a string": ("consolidate", {"apply": "yes"}),
    "consolidate apply is a number": ("consolidate", {"apply": 1}),
    # times
    "valid_from is a number": store(valid_from=1.5),
    "valid_from is a numeric string": store(valid_from="1.5"),
    "since is not a time": ("search", {"query": "x", "since": "yesterday"}),
    # text that is not valid Unicode (a lone surrogate), in every text field
    "a lone surrogate in content": store(BAD),
    "a lone high surrogate in content": store(HIGH),
    "a lone surrogate in a key": store(key=f"k{BAD}"),
    "a lone surrogate in a tag": store(tags=["ok", BAD]),
    "a lone surrogate in a metadata value": store(metadata={"a": {"b": [BAD]}}),
    "a lone surrogate in a metadata key": store(metadata={BAD: 1}),
    "a lone surrogate in a search query": ("search", {"query": BAD}),
    "a lone surrogate in a search tag": ("search", {"query": "x", "tags": [BAD]}),
    "a lone surrogate in a curate query": ("curate", {"query": BAD}),
    "a lone surrogate in an id": ("get", {"id_or_key": BAD}),
    "a lone surrogate in a correction": ("correct", {"id_or_key": ANCHOR, "content": BAD}),
    "a lone surrogate in remembered text": ("remember", {"text": BAD}),
    "a lone surrogate in a session goal": ("start_session", {"goal": BAD}),
    "a lone surrogate in a profile subject": ("profile", {"subject": BAD}),
    # identity fields are validated like keys
    "an agent id that climbs": store(agent_id="../.."),
    "an agent id with a NUL": store(agent_id="a\x00b"),
    "an agent id over 256 characters": store(agent_id="x" * 300),
    # nesting and bundles
    "metadata nested 100 deep": store(metadata=deep(100)),
    "metadata nested 50,000 deep": ("store_deep", {"depth": 50_000}),
    "a bundle manifest nested 50,000 deep": (
        "import_bundle", {"data": bundle_with_manifest(b"[" * 50_000 + b"]" * 50_000)}),
    "a bundle that is not a zip": ("import_bundle", {"data": b"not a bundle"}),
    # a correction is a write too
    "an empty correction": ("correct", {"id_or_key": ANCHOR, "content": ""}),
}


@pytest.fixture(scope="module")
def anchors() -> set[str]:
    return set()


@pytest.fixture
def anchored(door: Door, anchors: set[str]) -> Door:
    """The door with a memory under ``ANCHOR`` and two near-duplicates of it (what a
    consolidation applied by a stray string would merge), written through the door."""
    made = anchors
    if door.name not in made:
        for tags in (None, ["dup1"], ["dup2"]):
            outcome = door.call("store", content="the staging database is db-stage-2",
                                type="FACT", key=None if tags else ANCHOR, tags=tags)
            assert outcome.ok, outcome
        made.add(door.name)
    return door


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("door", DOORS, indirect=True)
def test_bad_input_is_the_doors_typed_error_and_writes_nothing(
        anchored: Door, case: str) -> None:
    door = anchored
    op, args = CASES[case]
    before = back_channel.fingerprint(door.path)
    outcome = perform(door, op, **args)
    assert outcome.family == "invalid", outcome
    assert back_channel.fingerprint(door.path) == before, (case, "something was written")
    if door.name in PERSISTENT:
        assert perform(door, "list_keys").ok, (case, "the door stopped serving")


#: Reading an id that climbs answers "no such memory" (or "invalid") and escapes nowhere.
TRAVERSALS = ["../../etc/passwd", "..", "a/../../b", "%2e%2e/etc"]


@pytest.mark.parametrize("path", TRAVERSALS)
@pytest.mark.parametrize("door", DOORS, indirect=True)
def test_an_id_that_climbs_finds_nothing(door: Door, path: str) -> None:
    before = back_channel.fingerprint(door.path)
    for op in ("get", "forget", "history"):
        try:
            outcome = door.call(op, id_or_key=path)
        except Unsupported:  # (MCP has no history tool)
            continue
        assert outcome.family in ("not_found", "invalid"), (op, outcome)
    assert back_channel.fingerprint(door.path) == before


@pytest.mark.parametrize("door", DOORS, indirect=True)
def test_well_formed_values_are_accepted(door: Door) -> None:
    """The other side of strictness: what the documentation shows is taken as it is
    (non-ASCII text, an int for a number, an ISO time with an offset, nested metadata)."""
    stored = perform(door, "store", content="strict but fair, with é, 漢字 and an owl 🦉",
                     type="FACT", key="strict/fair", importance=1, pinned=True,
                     valid_from="2026-01-31T09:00:00Z", metadata={"é": ["🦉"], **deep(20)})
    assert stored.ok, stored
    found = perform(door, "search", query="strict but fair owl", top_k=3)
    assert found.ok, found
    got = perform(door, "get", id_or_key="strict/fair")
    assert got.ok and "🦉" in got.shown + str(got.payload), got
