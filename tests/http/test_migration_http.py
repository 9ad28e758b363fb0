"""``POST /v1/import/<format>`` and ``/v1/export/<format>`` on a real ``tulving serve``:
through httpx and both Python clients, in the token's tenant, refused whole when bad."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from tests.http.conftest import Server
from tulving.client import AsyncTulvingClient, MigrationReport, ServerError, TulvingClient

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "foreign"


def test_import_from_letta_over_http_then_export(server: Server) -> None:
    af = (FIXTURES / "letta_agent.af").read_bytes()
    answer = httpx.post(f"{server.url}/v1/import/letta", content=af,
                        headers=server.headers("alice"), params={"agent_id": "planner"})
    assert answer.status_code == 200, answer.text
    report = answer.json()["report"]
    assert len(report["added"]) == 4 and report["format"] == "letta"
    assert any(d["kind"] == "letta messages" for d in report["dropped"])
    with TulvingClient(server.url, server.tokens["alice"], agent_id="planner") as alice:
        again = alice.import_from(FIXTURES / "letta_agent.af", format="letta")
        assert isinstance(again, MigrationReport)
        assert (len(again.added), len(again.skipped)) == (0, 4)
        assert alice.get("letta/human").content.startswith("Name: Priya")
    exported = httpx.post(f"{server.url}/v1/export/letta", json={"agent_id": "planner"},
                          headers=server.headers("alice"))
    assert exported.status_code == 200, exported.text
    blocks = exported.json()["document"]["blocks"]
    assert {b["label"] for b in blocks} == {"persona", "human", "open_questions"}
    for_bob = httpx.post(f"{server.url}/v1/export/otel", json={"agent_id": "planner"},
                         headers=server.headers("bob"))
    assert for_bob.json()["document"] == []  # the tenant is the token's


def test_bad_files_are_refused_over_http(server: Server) -> None:
    cut = (FIXTURES / "graphiti_graph.json").read_bytes()[:500]
    answer = httpx.post(f"{server.url}/v1/import/zep", content=cut,
                        headers=server.headers("alice"))
    assert answer.status_code == 422
    assert answer.json()["error"]["type"] == "ForeignFormatError"
    unknown = httpx.post(f"{server.url}/v1/import/cognee", content=b"[]",
                         headers=server.headers("alice"))
    assert unknown.status_code == 422
    reader = httpx.post(f"{server.url}/v1/import/otel", content=b'[{"content": "x"}]',
                        headers=server.headers("reader"))
    assert reader.status_code == 403, reader.text
    records = json.dumps([{"id": "async-1", "content": "imported by the async client"}])

    async def run() -> None:
        async with AsyncTulvingClient(server.url, server.tokens["bob"]) as bob:
            first = await bob.import_from(records.encode(), format="otel")
            assert len(first.added) == 1
            try:
                await bob.import_from(b"{", format="otel")
            except ServerError as exc:
                assert exc.status == 422 and exc.kind == "ForeignFormatError"
            else:
                raise AssertionError("a broken file was accepted")

    asyncio.run(run())
