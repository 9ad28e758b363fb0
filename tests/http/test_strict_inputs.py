"""Strict inputs at the HTTP door (issue 34, finding 4), against a real server: a lone
surrogate in any body field is a 422 ``ValidationError`` and the connection stays usable
(it used to answer 500 and drop it); a string is not a bool, a bool is not a number and a
number is not a time, and nothing is written or applied when they are refused."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.http.conftest import Server

BAD = "a\ud800b"
BODIES: dict[str, tuple[str, dict[str, Any]]] = {
    "store content": ("/v1/store", {"content": BAD, "type": "FACT"}),
    "store metadata": ("/v1/store", {"content": "x", "type": "FACT", "metadata": {"k": BAD}}),
    "store metadata key": ("/v1/store", {"content": "x", "type": "FACT",
                                         "metadata": {BAD: 1}}),
    "store tags": ("/v1/store", {"content": "x", "type": "FACT", "tags": [BAD]}),
    "store key": ("/v1/store", {"content": "x", "type": "FACT", "key": BAD}),
    "store entity": ("/v1/store", {"content": "x", "type": "FACT", "entity": BAD,
                                   "attribute": "a", "value": "v"}),
    "store source_instance": ("/v1/store", {"content": "x", "type": "FACT",
                                            "source_instance": BAD}),
    "remember": ("/v1/remember", {"text": BAD}),
    "recall": ("/v1/recall", {"query": BAD}),
    "search": ("/v1/search", {"query": BAD}),
    "search tags": ("/v1/search", {"query": "x", "tags": [BAD]}),
    "curate": ("/v1/curate", {"query": BAD}),
    "correct": ("/v1/correct", {"memory_id": "k/x", "content": BAD}),
    "correct reason": ("/v1/correct", {"memory_id": "k/x", "content": "y", "reason": BAD}),
    "session goal": ("/v1/sessions/start", {"goal": BAD}),
    "agent id": ("/v1/search", {"query": "x", "agent_id": BAD}),
    "export tags": ("/v1/export", {"tags": [BAD]}),
}


def _count(client: httpx.Client) -> int:
    return len(client.get("/v1/entries", params={"include_archived": True}).json()["entries"])


@pytest.fixture
def alice(server: Server) -> Any:
    with httpx.Client(base_url=server.url, headers=server.headers("alice"), timeout=30) as c:
        yield c


@pytest.mark.parametrize("case", sorted(BODIES))
def test_a_lone_surrogate_in_any_field_is_a_422_and_the_connection_lives(
        alice: httpx.Client, case: str) -> None:
    path, body = BODIES[case]
    before = _count(alice)
    # sent as JSON text with the escape \ud800 (what a client in any language can send)
    response = alice.post(path, content=json.dumps(body),
                          headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["type"] == "ValidationError"
    assert "Unicode" in response.json()["error"]["message"]
    assert alice.get("/v1/health").status_code == 200  # same connection, still served
    assert _count(alice) == before


COERCIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "a string is not a bool (consolidate apply)": ("/v1/consolidate", {"apply": "yes"}),
    "a number is not a bool (consolidate apply)": ("/v1/consolidate", {"apply": 1}),
    "a string is not a bool (store pinned)": ("/v1/store", {"content": "x", "type": "FACT",
                                                            "pinned": "true"}),
    "a bool is not a number (importance)": ("/v1/store", {"content": "x", "type": "FACT",
                                                          "importance": True}),
    "a string is not a number (importance)": ("/v1/store", {"content": "x", "type": "FACT",
                                                            "importance": "0.5"}),
    "a bool is not a count (top_k)": ("/v1/search", {"query": "x", "top_k": True}),
    # (5.0 is the integer 5 to JSON Schema, as the OpenAPI document reads it; a
    # fraction is not)
    "a fraction is not a count (limit)": ("/v1/recall", {"query": "x", "limit": 5.5}),
    "a float is not a time (valid_from)": ("/v1/store", {"content": "x", "type": "FACT",
                                                         "valid_from": 1.5}),
    "an int is not a time (since)": ("/v1/search", {"query": "x", "since": 1700000000}),
    "a numeric string is not a time (as_of)": ("/v1/search", {"query": "x", "as_of": "1.5"}),
    "a number is not text (content)": ("/v1/store", {"content": 5, "type": "FACT"}),
}


@pytest.mark.parametrize("case", sorted(COERCIONS))
def test_no_coercion(alice: httpx.Client, case: str) -> None:
    path, body = COERCIONS[case]
    before = _count(alice)
    response = alice.post(path, json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["type"] == "ValidationError"
    assert _count(alice) == before


def test_a_consolidation_is_not_applied_by_a_string(alice: httpx.Client) -> None:
    for i in range(3):
        assert alice.post("/v1/store", json={"content": "the staging database is db-stage-2",
                                             "type": "FACT", "tags": [f"dup{i}"]}
                          ).status_code == 200
    before = _count(alice)
    assert alice.post("/v1/consolidate", json={"apply": "yes"}).status_code == 422
    assert alice.post("/v1/consolidate", json={"apply": False}).json()["applied"] is False
    assert _count(alice) == before


def test_strict_values_still_accepted(alice: httpx.Client) -> None:
    stored = alice.post("/v1/store", json={
        "content": "strict but fair, with é and 🦉", "type": "FACT", "importance": 1,
        "pinned": True, "valid_from": "2026-01-31T09:00:00Z", "metadata": {"é": ["🦉"]}})
    assert stored.status_code == 200, stored.text
    assert stored.json()["stored"]["importance"] == 1.0
    found = alice.post("/v1/search", json={"query": "strict but fair", "top_k": 3,
                                           "since": "2026-01-01T00:00:00Z", "as_of": None})
    assert found.status_code == 200, found.text
    got = alice.get(f"/v1/memory/{stored.json()['stored']['id']}",
                    params={"as_of": "2099-01-01T00:00:00+00:00"})
    assert got.status_code == 200, got.text
    assert alice.get(f"/v1/memory/{stored.json()['stored']['id']}",
                     params={"as_of": "1.5"}).status_code == 422
