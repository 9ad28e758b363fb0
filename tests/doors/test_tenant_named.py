"""A request naming another tenant is refused alike at every route, sync's included.

The tenant comes from the token: a request whose query names another ``user_id`` or
``workspace_id`` gets 403 ``ScopeError`` and the refusal goes in the caller's audit chain.
The sync routes took no such parameter and answered ``GET /v1/sync/deltas?user_id=u2``
with 200 and an empty list, the one route where naming another user looked like
asking about a user with nothing. Each route below is asked through the raw wire for the
other tenant; the answers must be the same as ``/v1/stats``'s (status, type, message
but the route's field), and the back channel must hold one refusal more per request
after the caller's next write.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.doors import back_channel
from tests.doors.worlds import World

#: GET routes that act for the token's tenant (each with what else it needs).
ROUTES: dict[str, dict[str, Any]] = {
    "/v1/stats": {}, "/v1/keys": {}, "/v1/entries": {}, "/v1/profile": {},
    "/v1/audit": {}, "/v1/sync/deltas": {}, "/v1/sync/tenant": {},
    "/v1/sync/quarantine": {}, "/v1/sync/deltas/1": {},
}


def ask(world: World, route: str, **named: str) -> httpx.Response:
    server = world.server
    return httpx.get(f"{server.url}{route}", params={**ROUTES[route], **named},
                     headers=server.headers("alice"), timeout=30)


@pytest.mark.parametrize("field", ["user_id", "workspace_id"])
@pytest.mark.parametrize("route", list(ROUTES))
def test_naming_another_tenant_is_refused_and_audited(world: World, route: str,
                                                      field: str) -> None:
    path = world.store("server")
    before = len(back_channel.refusals(path))
    answer = ask(world, route, **{field: "u2"})
    # refusals are queued like read records and written with the caller's next write
    stored = httpx.post(f"{world.server.url}/v1/store", headers=world.server.headers("alice"),
                        json={"content": f"after naming {field} at {route}", "type": "FACT"},
                        timeout=30)
    assert stored.status_code == 200, stored.text
    assert len(back_channel.refusals(path)) == before + 1, "the refusal is audited"
    reference = ask(world, "/v1/stats", **{field: "u2"})
    assert reference.status_code == 403, reference.text
    assert (answer.status_code, answer.json()["error"]) == (403, reference.json()["error"])


@pytest.mark.parametrize("route", [r for r in ROUTES if r.startswith("/v1/sync")])
def test_naming_the_tokens_own_tenant_is_served(world: World, route: str) -> None:
    answer = ask(world, route, user_id="u1")
    assert answer.status_code in (200, 404), answer.text  # (no delta 1 in this store)
