"""What the memory knows about the user, over HTTP: the scenario told through the Python
client under a token bound to user ``u1`` (who tells the memory her name is Alice), then
the profile by the client and by a raw ``GET /v1/profile``, and the briefing at 300, 500
and 1,500 tokens. (The TypeScript client's profile is in its own tests.)"""

from __future__ import annotations

import httpx

from tests.http.conftest import Server
from tulving.client import TulvingClient
from tulving.testing.scenarios import (
    USER_FACTS,
    USER_PREFERENCES,
    briefing_problems,
    knowledge_scenario,
)

NAME = "The user's name is Alice"


def test_profile_and_briefings_over_http(server: Server) -> None:
    with TulvingClient(server.url, server.tokens["alice"], agent_id="knows") as alice:
        alice.store(NAME, type="FACT", entity="user", attribute="name", value="Alice")
        knowledge_scenario(alice)
        profile = alice.profile()
        assert [i.content for i in profile.items] == [
            *reversed(USER_PREFERENCES), *reversed(USER_FACTS), NAME]
        assert profile.facts["name"].value == "Alice"
        for budget in (300, 500, 1500):
            block = alice.curate(token_budget=budget)
            assert block.token_count <= budget
            assert briefing_problems(block.content) == [], budget
    raw = httpx.get(f"{server.url}/v1/profile", params={"agent_id": "knows"},
                    headers=server.headers("alice"))
    assert raw.status_code == 200, raw.text
    assert raw.json()["profile"]["text"] == profile.text
    other = httpx.get(f"{server.url}/v1/profile", params={"agent_id": "knows"},
                      headers=server.headers("bob"))
    assert other.json()["profile"]["items"] == []  # another tenant knows nothing of her
