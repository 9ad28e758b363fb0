"""The Python client at parity with ``/v1`` and with the TypeScript client (issue 41): the
same method names, ``NotFoundError`` for a missing key, keys, entries, sessions,
consolidation and profiles, results shaped as the TypeScript client's, and ``min_score``
passed through to search. Against a real ``tulving serve``, sync and async."""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import Iterator

import pytest

import tulving
from tests.e2e.conftest import ROOT
from tests.http.conftest import Server
from tulving.client import (
    AsyncTulvingClient,
    ConsolidationReport,
    EntryPage,
    NotFoundError,
    Profile,
    ServerError,
    TulvingClient,
)

TS_SOURCE = ROOT / "clients" / "typescript" / "src" / "index.ts"


@pytest.fixture
def alice(server: Server) -> Iterator[TulvingClient]:
    with TulvingClient(server.url, server.tokens["alice"], agent_id="parity") as client:
        yield client


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def test_every_typescript_method_is_a_python_method_of_both_clients() -> None:
    body = TS_SOURCE.read_text().split("export class TulvingClient", 1)[1]
    methods = set(re.findall(r"^  async (\w+)\(", body, re.MULTILINE))
    assert {"listKeys", "listEntries", "startSession", "consolidate"} <= methods
    for name in methods:
        for client in (TulvingClient, AsyncTulvingClient):
            assert callable(getattr(client, _snake(name), None)), (client, _snake(name))


def test_a_missing_memory_raises_not_found(alice: TulvingClient) -> None:
    with pytest.raises(NotFoundError) as caught:
        alice.get("no/such/key")
    error = caught.value
    assert isinstance(error, ServerError) and isinstance(error, tulving.NotFoundError)
    assert (error.status, error.kind) == (404, "NotFoundError")
    for attempt in (lambda: alice.history("no/such/key"), lambda: alice.forget("no/such/key"),
                    lambda: alice.correct("no/such/key", "x")):
        with pytest.raises(NotFoundError):
            attempt()
    with pytest.raises(ServerError) as other:           # other errors stay ServerError
        alice.store("", type="FACT")
    assert other.value.status == 422 and not isinstance(other.value, NotFoundError)


def test_keys_entries_sessions_consolidate_and_profile(alice: TulvingClient) -> None:
    for i in range(5):
        alice.store(f"parity note {i}: the build runs on Fridays", type="FACT",
                    key=f"parity/note-{i}", tags=["parity"])
    assert alice.list_keys("parity/") == [f"parity/note-{i}" for i in range(5)]
    first = alice.list_entries(limit=3, tags=["parity"])
    assert isinstance(first, EntryPage) and len(first.entries) == 3
    assert first.next_cursor is not None
    rest = alice.list_entries(limit=3, cursor=first.next_cursor, tags=["parity"])
    assert [e.key for e in (*first.entries, *rest.entries)] == alice.list_keys("parity/")
    assert rest.next_cursor is None
    alice.forget("parity/note-0")
    assert len(alice.list_entries(tags=["parity"]).entries) == 4
    assert len(alice.list_entries(tags=["parity"], include_archived=True).entries) == 5
    session = alice.start_session("ship the parity work")
    assert session is not None and session.goal == "ship the parity work" and session.id
    ended = alice.end_session()
    assert ended is not None and ended.id == session.id and ended.ended_at is not None
    assert alice.end_session() is None  # none open any more
    dry = alice.consolidate()
    assert dry.applied is False and isinstance(dry.report, ConsolidationReport)
    assert dry.report.dry_run is True
    alice.store("Ann prefers tea", type="PREFERENCE", key="user/drink", entity="user",
                attribute="drink", value="tea")
    profile = alice.profile("user")  # the class Memory.profile returns, read from JSON
    assert isinstance(profile, Profile) and profile.subject == "user"
    assert profile.preferences["drink"].value == "tea" and "tea" in profile.text


def test_results_are_shaped_as_the_typescript_clients(alice: TulvingClient) -> None:
    stored = alice.store("deploys go out on Thursdays", type="DECISION", key="deploy/shape",
                         importance=0.8)
    assert stored.importance == 0.8 and stored.created_at and stored.agent_id == "parity"
    hit = alice.search("when do deploys go out", top_k=1)[0]
    assert (hit.id, hit.content, hit.key) == (stored.id, stored.content, "deploy/shape")
    assert hit.entry.id == stored.id and 0 <= hit.score <= 1 and hit.match_type
    assert hit.relevance is None                         # search has no weighting
    recalled = alice.recall("when do deploys go out", limit=1, recency_weight=0.5)[0]
    assert recalled.relevance is not None and recalled.score != recalled.relevance
    block = alice.curate("deploy day", token_budget=200)
    assert block.token_count <= 200 and block.data["mode"] == "query"
    assert block.entries and block.entries[0]["id"]
    with pytest.raises(AttributeError):
        _ = stored.no_such_field


def test_min_score_is_passed_through(alice: TulvingClient) -> None:
    alice.store("the canary release needs two approvals", type="FACT")
    loose = alice.search("canary release approvals", top_k=10)
    assert loose
    strict = alice.search("canary release approvals", top_k=10, min_score=1.0)
    assert len(strict) < len(loose)
    assert all(h.score >= 1.0 for h in strict)
    with pytest.raises(ServerError) as caught:
        alice.search("canary", min_score=2)
    assert caught.value.status == 422


def test_the_async_client_does_the_same(server: Server) -> None:
    async def run() -> None:
        async with AsyncTulvingClient(server.url, server.tokens["alice"],
                                      agent_id="async-parity") as client:
            await client.store("async parity note", type="FACT", key="ap/one")
            assert await client.list_keys("ap/") == ["ap/one"]
            page = await client.list_entries(limit=10)
            assert [e.key for e in page.entries] == ["ap/one"]
            with pytest.raises(NotFoundError):
                await client.get("ap/two")
            out = io.BytesIO()
            assert await client.export_bundle(out) == 1 and out.getvalue()[:2] == b"PK"
            assert (await client.consolidate())["applied"] is False
            assert (await client.start_session("async"))["goal"] == "async"
            assert (await client.end_session())["goal"] == "async"

    asyncio.run(run())
