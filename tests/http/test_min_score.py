"""``min_score`` at the HTTP door (``/v1/search``, issue 40): the library's cut, on a real
server; out of [0, 1] it is refused with 422 before anything runs."""

from __future__ import annotations

import httpx

from tests.e2e.test_min_score_doors import MEMORIES as SHARED
from tests.http.conftest import Server

MEMORIES = SHARED[:5]  # the CLI and MCP test's memories, without the bicycle


def test_search_min_score_keeps_what_scores_at_least_it(server: Server) -> None:
    with httpx.Client(base_url=server.url, headers=server.headers("alice"), timeout=30) as c:
        for text in MEMORIES:
            assert c.post("/v1/store", json={"content": text, "type": "FACT"}).status_code == 200
        query = {"query": "who is vegetarian?", "top_k": 5}
        every = c.post("/v1/search", json=query).json()["results"]
        scores = [r["score"] for r in every]
        assert scores == sorted(scores, reverse=True) and len(scores) == 5
        cut = (scores[1] + scores[2]) / 2
        kept = c.post("/v1/search", json={**query, "min_score": cut})
        assert kept.status_code == 200, kept.text
        assert [r["id"] for r in kept.json()["results"]] == [r["id"] for r in every[:2]]
        for bad in (1.5, -0.1, "lots"):
            refused = c.post("/v1/search", json={**query, "min_score": bad})
            assert refused.status_code == 422 and "min_score" in refused.text, refused.text
