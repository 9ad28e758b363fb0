"""Ids that cannot change the route, at the HTTP doors: whatever an id or key holds, the
request it is put in reaches the handler of the operation asked for, or no handler.

An application often hands a user's text to ``get``/``history``/``forget`` as an id. Each
crafted id below is asked for through the raw wire (the id encoded whole, a lone
surrogate as the bytes it would be), the Python client and the TypeScript client, at
every route that takes an id; the answer must be "not found" or "invalid", the store
unchanged (read with sqlite3), and the server's own access log must show that the only
route the call reached is the operation's (a client's refusal before sending reaches
none). The clients used to put ids into paths unencoded or split on ``/``: ``../keys``
answered the key list, ``route-anchor/history`` the anchor's history. A last test sends
literal paths, as ``curl`` or a proxy may: the id is read from the raw path before
routing, so ``..`` there is an id outside the grammar, not a step up.
"""

from __future__ import annotations

import http.client
import time
import uuid
from urllib.parse import urlsplit

import httpx
import pytest

from tests.doors import back_channel
from tests.doors.door import Door, perform
from tests.doors.worlds import World

DOORS = ["http", "client", "ts"]
ANCHOR = "route-anchor"
#: What a caller's text may hold: a step up, a step up to another route, a query, a
#: fragment, an encoded slash, a lone surrogate, another route's name after a slash.
CRAFTED = ["..", "../keys", "?x=", "#", "%2F", "\udcff", f"{ANCHOR}/history",
           f"{ANCHOR}/audit", "x/../../keys", "..%2Fkeys", "/v1/keys", ""]
#: Operation -> the route template it must reach (and reach alone).
ROUTES = {"get": "/v1/memory/{memory_id}", "history": "/v1/memory/{memory_id}/history",
          "audit": "/v1/memory/{memory_id}/audit", "forget": "/v1/forget/{memory_id}"}


def server_log(world: World) -> object:
    return world.server.path.parent / "server.log"


def reached(world: World, after: int) -> list[str]:
    """The routes the requests logged after byte ``after`` reached, up to a marker
    request sent now (the log line of a request is written once it is answered)."""
    marker = uuid.uuid4().hex
    httpx.get(f"{world.server.url}/v1/stats", headers={
        **world.server.headers("alice"), "X-Request-ID": marker}, timeout=30)
    log = world.server.path.parent / "server.log"
    deadline = time.monotonic() + 10
    while True:
        lines = back_channel.access_lines(log, after)
        ids = [line.get("request_id") for line in lines]
        if marker in ids:
            return [str(line.get("route")) for line in lines[:ids.index(marker)]]
        assert time.monotonic() < deadline, "the marker request was never logged"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def anchored(world: World) -> str:
    """A memory under ``ANCHOR``, with a history and an audit trail: a call routed to
    either would answer it."""
    door = world.door("http")
    for text in ("the route anchor, first", "the route anchor, corrected"):
        assert perform(door, "store", content=text, type="FACT", key=ANCHOR).ok
    return ANCHOR


@pytest.mark.parametrize("crafted", CRAFTED)
@pytest.mark.parametrize("op", list(ROUTES))
@pytest.mark.parametrize("door", DOORS, indirect=True)
def test_a_crafted_id_reaches_no_other_handler(door: Door, world: World, anchored: str,
                                               op: str, crafted: str) -> None:
    before = back_channel.fingerprint(door.path)
    mark = back_channel.log_size(world.server.path.parent / "server.log")
    outcome = perform(door, op, id_or_key=crafted)
    assert outcome.family in ("not_found", "invalid"), outcome
    routes = reached(world, mark)
    if outcome.code == 0:  # refused by the client: nothing was sent
        assert routes == [], routes
    else:
        assert routes == [ROUTES[op]], (routes, outcome)
    assert back_channel.fingerprint(door.path) == before


#: Literal request targets (no client encodes them so) -> the route each must reach.
LITERAL = {
    "/v1/memory/../keys": ROUTES["get"],
    "/v1/memory/%2E%2E/keys": ROUTES["get"],
    f"/v1/memory/{ANCHOR}/../../keys": ROUTES["get"],
    f"/v1/memory/{ANCHOR}%2Fhistory": ROUTES["get"],
    f"/v1/memory/{ANCHOR}%2Fhistory/audit": ROUTES["audit"],
    "/v1/forget/..%2F..%2Fkeys": ROUTES["forget"],
    "/v1/memory/%ED%B3%BF": ROUTES["get"],
}


@pytest.mark.parametrize("target", list(LITERAL))
def test_a_literal_path_is_read_before_routing(world: World, anchored: str,
                                               target: str) -> None:
    """``http.client`` sends the target as written (httpx and browsers resolve dot
    segments first): the server reads the id from the raw path."""
    before = back_channel.fingerprint(world.store("server"))
    mark = back_channel.log_size(world.server.path.parent / "server.log")
    url = urlsplit(world.server.url)
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=30)
    try:
        method = "DELETE" if target.startswith("/v1/forget/") else "GET"
        connection.request(method, target, headers=world.server.headers("alice"))
        response = connection.getresponse()
        answer = response.read()
    finally:
        connection.close()
    assert response.status in (404, 422), (response.status, answer)
    assert reached(world, mark) == [LITERAL[target]]
    assert back_channel.fingerprint(world.store("server")) == before


def test_a_key_with_a_slash_is_one_segment_through_every_client(world: World,
                                                                 anchored: str) -> None:
    """The other side: a key holding ``/`` (and one named like a sub-resource) is read
    and forgotten by every client as the key it is."""
    http_door = world.door("http")
    for key in ("route/deep/key", "route/x/history"):
        stored = perform(http_door, "store", content=f"under {key}", type="FACT", key=key,
                         extra={"scope": "personal"})  # every agent of the tenant
        assert stored.ok, stored
        for name in DOORS:
            got = perform(world.door(name), "get", id_or_key=key)
            assert got.ok and got.payload and key in str(got.payload), (name, got)
        assert perform(http_door, "forget", id_or_key=key).ok  # (its writer)
