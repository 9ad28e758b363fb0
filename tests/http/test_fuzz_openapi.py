"""Property-based run of every ``/v1`` operation against the server's own OpenAPI
document (schemathesis strategies, driven by hypothesis): generated bodies, paths and
queries, valid and not, sent by a real client to a real ``tulving serve``. No response may
be a 500, every documented response must match its schema, and every error must be the
typed JSON error."""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks

from tests.http.conftest import Server

EXAMPLES = 25


def test_no_operation_fails_or_breaks_its_schema(server: Server) -> None:
    schema = schemathesis.openapi.from_url(f"{server.url}/v1/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 20
    tried: dict[str, int] = {}
    for operation in operations:
        fuzz_operation(server, operation, tried)
    assert len(tried) == len(operations) and sum(tried.values()) >= 5 * len(operations)


def fuzz_operation(server: Server, operation: Any, tried: dict[str, int]) -> None:
    label = f"{operation.method.upper()} {operation.path}"

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy())
    def fuzz(case: Any) -> None:
        response = case.call(base_url=server.url, headers=server.headers("alice"),
                             timeout=30)
        tried[label] = tried.get(label, 0) + 1
        case.validate_response(response, checks=[checks.not_a_server_error,
                                                 checks.response_schema_conformance])
        if response.status_code >= 400:
            error = response.json()["error"]
            assert error["type"] and isinstance(error["message"], str), label
            assert "Traceback" not in response.text, label

    fuzz()
