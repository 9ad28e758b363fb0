"""Broken Unicode in any JSON body, from the server's own OpenAPI document: schemathesis
makes a valid body for every JSON operation, hypothesis poisons one of its strings. (The
run of every check over every operation is ``test_openapi_contract``.)"""

from __future__ import annotations

import json
from typing import Any

import httpx
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.http.conftest import Server

#: A lone surrogate (issue 34): JSON can carry it as the escape "\ud800", and nothing
#: behind the door can store or index it.
SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)


def _string_slots(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to every string of a JSON body, ("key", k) marking a dict key itself."""
    if isinstance(value, str):
        return [path]
    slots: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for k, item in value.items():
            slots += [(*path, ("key", k)), *_string_slots(item, (*path, k))]
    elif isinstance(value, list):
        for i, item in enumerate(value):
            slots += _string_slots(item, (*path, i))
    return slots


def _poison(body: Any, slot: tuple[Any, ...], bad: str) -> Any:
    head, rest = slot[0], slot[1:]
    if isinstance(head, tuple):  # rename the key
        return {(k + bad if k == head[1] else k): v for k, v in body.items()}
    if not rest:
        body[head] = body[head] + bad if isinstance(body[head], str) else bad
        return body
    body[head] = _poison(body[head], rest, bad)
    return body


def test_broken_unicode_in_any_body_string_is_a_422(server: Server) -> None:
    """Schemathesis generates valid bodies for every JSON operation; hypothesis then puts a
    lone surrogate into one of their strings (or a key): always a 422 ValidationError that
    names it, never a 500 or a dropped connection."""
    schema = schemathesis.openapi.from_url(f"{server.url}/v1/openapi.json")
    operations = [r.ok() for r in schema.get_all_operations()]
    # (a file of another system is read by its format's reader, not a schema: refused
    # with the reader's ForeignFormatError, tests/e2e/test_cli_migration.py and the HTTP
    # migration tests)
    with_bodies = [op for op in operations
                   if any(body.media_type == "application/json" for body in op.body)
                   and op.path != "/v1/import/{source_format}"]
    assert len(with_bodies) >= 10
    poisoned: dict[str, int] = {}
    with httpx.Client(base_url=server.url, headers=server.headers("alice"), timeout=30) as client:
        for operation in with_bodies:
            poison_operation(client, operation, poisoned)
        assert client.get("/v1/health").status_code == 200
    assert len(poisoned) == len(with_bodies)


def poison_operation(client: httpx.Client, operation: Any, poisoned: dict[str, int]) -> None:
    label = f"{operation.method.upper()} {operation.path}"

    @settings(max_examples=8, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(), data=st.data(), bad=SURROGATES)
    def fuzz(case: Any, data: Any, bad: str) -> None:
        body = case.body if isinstance(case.body, dict) else {}
        slots = _string_slots(body)
        if slots:
            body = _poison(body, data.draw(st.sampled_from(slots)), bad)
        else:
            body = {**body, "agent_id": "x" + bad}
        # the path as the case filled it (a route's enum path parameter, the import's format)
        response = client.request(operation.method.upper(), case.formatted_path,
                                  content=json.dumps(body),
                                  headers={"content-type": "application/json"})
        assert response.status_code == 422, (label, body, response.text)
        error = response.json()["error"]
        assert error["type"] == "ValidationError" and "Unicode" in error["message"], error
        poisoned[label] = poisoned.get(label, 0) + 1

    fuzz()
