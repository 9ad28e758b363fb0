"""Redaction at the HTTP door (issue 34, finding 1), against a real server: the secrets and
the SSN that the recall used to show unmasked are masked by recall, search, curate, get,
entries and history."""

from __future__ import annotations

import httpx

from tests.e2e.test_redaction_doors import MEMORIES, assert_masked
from tests.http.conftest import Server


def test_every_read_endpoint_masks_every_value(server: Server) -> None:
    with httpx.Client(base_url=server.url, headers=server.headers("alice"), timeout=30) as c:
        ids = []
        for i, content in enumerate(MEMORIES):
            stored = c.post("/v1/store", json={"content": content, "type": "FACT",
                                               "key": f"ops/cred{i}"})
            assert stored.status_code == 200, stored.text
            ids.append(stored.json()["stored"]["id"])
            assert_masked(stored.text, "store's answer")
        query = {"query": "harbor ops credential"}
        answers = {
            "recall": c.post("/v1/recall", json={**query, "limit": 20}),
            "search": c.post("/v1/search", json={**query, "top_k": 20}),
            "curate": c.post("/v1/curate", json={**query, "token_budget": 2000}),
            "curate explain": c.post("/v1/curate", json={**query, "token_budget": 2000,
                                                         "explain": True}),
            "entries": c.get("/v1/entries"),
        }
        for door, response in answers.items():
            assert response.status_code == 200, (door, response.text)
            assert_masked(response.text, door)
        shown = "".join(c.get(f"/v1/memory/{i}").text + c.get(f"/v1/memory/{i}/history").text
                        for i in ids)
        assert_masked(shown, "get and history")
