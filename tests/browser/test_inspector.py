"""The inspector in a real browser: curate preview equal to the API's ``curate()``, one
memory with its history, forget behind a confirmation, browse, timeline, and tenancy."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import OUTPUT, api, login
from tests.http.conftest import Server

TOPICS = ["deploys go out on Tuesdays after the standup",
          "the staging database lives on db-stage-2",
          "Ann prefers short answers with code first",
          "we chose PostgreSQL for the shared team memory",
          "the build cache is flushed every night at 2am",
          "Lisbon office opens at nine",
          "the API rate limit is 600 requests per minute",
          "rollbacks need two approvals in production"]


@pytest.fixture(scope="module")
def seeded(server: Server) -> dict[str, Any]:
    ids: dict[str, Any] = {}
    for i in range(40):
        topic = TOPICS[i % len(TOPICS)]
        api(server, "alice", "POST", "/store", json={
            "content": f"{topic} (note {i})", "type": ["FACT", "DECISION", "OBSERVATION"][i % 3],
            "tags": [f"t{i % 4}"], "importance": round(0.3 + (i % 5) / 10, 2),
            "valid_from": f"2026-0{1 + i % 9}-1{i % 10}T10:00:00Z"})
    first = api(server, "alice", "POST", "/store", json={
        "content": "the service port is 8000", "type": "FACT", "key": "svc/port"})["stored"]
    second = api(server, "alice", "POST", "/correct", json={
        "memory_id": "svc/port", "content": "the service port is 9000", "reason": "moved"})
    ids["port_old"], ids["port_new"] = first["id"], second["corrected"]["id"]
    ids["doomed"] = api(server, "alice", "POST", "/store", json={
        "content": "the old VPN endpoint is vpn1.example.org", "type": "FACT",
        "key": "net/vpn"})["stored"]["id"]
    api(server, "alice", "POST", "/store", json={
        "content": "ci token is ghp_" + "ab" * 18, "type": "FACT", "key": "ci/token"})
    ids["bob"] = api(server, "bob", "POST", "/store", json={
        "content": "bob's secret plan: migrate deploys to Fridays", "type": "PLAN"})["stored"]["id"]
    return ids


def assert_clean(page: Page) -> None:
    """Nothing the page drew by mistake: stringified lists, absent values."""
    text = page.locator("#main").inner_text()
    assert "[object" not in text and not re.search(r"^(null|undefined)$", text, re.M), text


def curated_text(page: Page) -> str:
    return page.locator("#curated-block").inner_text()


def test_curate_preview_equals_the_api_and_follows_the_budget(
        page: Page, server: Server, seeded: dict[str, Any]) -> None:
    login(page, server, "alice")
    # what is left of the background work, from /v1/stats (every write here embeds inline)
    expect(page.locator("#backlog")).to_have_text("Background work: none left")
    page.fill("#curate-query", "when do deploys go out")
    page.fill("#budget", "300")
    page.click("#curate-form button[type=submit]")
    expect(page.locator("#curated-block")).to_contain_text("## Memory")
    page.wait_for_timeout(400)  # the slider's debounced call may still be on its way
    shown = curated_text(page)
    api_block = api(server, "alice", "POST", "/curate", json={
        "query": "when do deploys go out", "token_budget": 300})["curated"]
    assert shown.strip() == api_block["content"].strip()
    assert "Tuesdays" in shown
    assert_clean(page)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUTPUT / "curate-preview.png"), full_page=False)

    # every candidate is listed with its breakdown, disclosure and cost
    rows = page.locator("#curate-result tbody tr")
    explained = api(server, "alice", "POST", "/curate", json={
        "query": "when do deploys go out", "token_budget": 300, "explain": True})["curated"]
    assert rows.count() == len(explained["candidates"]) > 3
    disclosures = page.locator("#curate-result td.disclosure").all_inner_texts()
    assert any(d.startswith("left out") for d in disclosures)
    assert any(d in ("full", "truncated", "index") for d in disclosures)

    # a smaller budget: the block shrinks and still equals curate() for it
    page.fill("#budget", "100")
    expect(page.locator("#budget-out")).to_have_text("100")
    expect(page.locator("#curate-summary")).to_contain_text("of 100 tokens used")
    small = curated_text(page)
    again = api(server, "alice", "POST", "/curate", json={
        "query": "when do deploys go out", "token_budget": 100})["curated"]
    assert small.strip() == again["content"].strip()
    assert again["token_count"] <= 100 and len(small) < len(shown)

    # orient mode needs no query
    page.select_option("#curate-form select[name=mode]", "orient")
    expect(page.locator("#curated-block")).to_contain_text("## About the user")
    # secrets are masked in the block and the table alike
    assert "ghp_" not in page.content()


def test_one_memory_history_and_forget_behind_a_confirmation(
        page: Page, server: Server, seeded: dict[str, Any]) -> None:
    login(page, server, "alice", f"#/memory/{seeded['port_new']}")
    expect(page.locator("#memory-content")).to_have_text("the service port is 9000")
    expect(page.locator("#memory-fields")).to_contain_text("valid_from")
    assert_clean(page)
    history = page.locator("#history li")
    expect(history).to_have_count(2)
    history.nth(1).locator("a").click()  # the older version, archived by the correction
    expect(page.locator("#memory-content")).to_have_text("the service port is 8000")
    expect(page.locator("#archived-note")).to_contain_text("corrected")
    assert_clean(page)
    expect(page.locator("#forget")).to_have_count(0)  # an archived version has no actions
    page.go_back()
    expect(page.locator("#memory-content")).to_have_text("the service port is 9000")
    expect(page.locator("table").filter(has_text="correct")).to_have_count(1)  # its audit trail

    page.goto(f"{server.url}/ui/#/memory/{seeded['doomed']}")
    expect(page.locator("#memory-content")).to_contain_text("vpn1.example.org")
    page.click("#forget")
    expect(page.locator("#confirm")).to_be_visible()
    page.click("#confirm-cancel")
    expect(page.locator("#status")).to_have_text("Cancelled.")
    assert api(server, "alice", "GET", f"/memory/{seeded['doomed']}")["entry"]["archived_at"] is None
    page.click("#forget")
    page.click("#confirm-ok")
    expect(page.locator("#archived-note")).to_contain_text("forgotten")
    gone = httpx.get(f"{server.url}/v1/memory/{seeded['doomed']}",
                     headers=server.headers("alice"), timeout=10)
    assert gone.status_code == 404


def test_browse_search_modes_filters_and_timeline(
        page: Page, server: Server, seeded: dict[str, Any]) -> None:
    login(page, server, "alice", "#/browse?query=staging+database&mode=lexical")
    expect(page.locator("#browse-result tbody tr").first).to_contain_text("db-stage-2")
    assert "lexical" in page.locator("#browse-result tbody tr").first.inner_text()

    page.goto(f"{server.url}/ui/#/browse?type=DECISION")
    rows = page.locator("#browse-result tbody tr")
    expect(rows.first).to_be_visible()
    assert all("decision" in text for text in rows.all_inner_texts())
    expect(page.locator("#status")).to_contain_text("memories on this page")

    page.goto(f"{server.url}/ui/#/browse?since=2026-03-01&until=2026-03-31")
    expect(rows.first).to_be_visible()
    assert all("2026-03-" in text for text in rows.all_inner_texts())

    page.goto(f"{server.url}/ui/#/timeline")
    groups = page.locator("#timeline section.group h3")
    expect(groups.first).to_be_visible()
    days = [re.match(r"\d{4}-\d{2}-\d{2}", g).group(0)  # type: ignore[union-attr]
            for g in groups.all_inner_texts()]
    assert days == sorted(days, reverse=True) and len(days) >= 9
    assert_clean(page)
    page.goto(f"{server.url}/ui/#/timeline?by=session")
    expect(page.locator("#timeline section.group h3").first).to_contain_text("Session ")
    assert_clean(page)


def test_another_tenant_sees_nothing_of_this_one(
        page: Page, server: Server, seeded: dict[str, Any]) -> None:
    login(page, server, "bob", "#/browse")
    expect(page.locator("#browse-result tbody tr")).to_have_count(1)
    assert "Fridays" in page.locator("#browse-result").inner_text()
    page.goto(f"{server.url}/ui/#/memory/{seeded['port_new']}")
    expect(page.locator("#main .error")).to_be_visible()
    assert "9000" not in page.content()
    page.goto(f"{server.url}/ui/#/curate?query=deploys")
    page.click("#curate-form button[type=submit]")
    expect(page.locator("#curated-block")).to_contain_text("Fridays")
    assert "Tuesdays" not in page.locator("#curate-result").inner_text()


def test_assets_are_local_and_locked_down(server: Server) -> None:
    moved = httpx.get(f"{server.url}/ui", timeout=10)
    assert moved.status_code == 308 and moved.headers["location"] == "/ui/"
    page = httpx.get(f"{server.url}/ui/", timeout=10)
    assert page.status_code == 200 and "Tulving inspector" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for asset in ("inspector.js", "inspector.css"):
        text = httpx.get(f"{server.url}/ui/{asset}", timeout=10).text
        assert not re.search(r"https?://", text), asset  # nothing loads from elsewhere
    assert httpx.get(f"{server.url}/ui/../server.db", timeout=10).status_code == 404
    # the page itself holds no data: without a token the API says 401
    assert httpx.post(f"{server.url}/v1/curate", json={"query": "x"}, timeout=10).status_code == 401


def test_the_profile_view_shows_what_the_api_profile_holds(
        page: Page, server: Server, seeded: dict[str, Any]) -> None:
    api(server, "alice", "POST", "/store", json={
        "content": "The user prefers dark mode in every tool", "type": "PREFERENCE"})
    profile = api(server, "alice", "GET", "/profile")["profile"]
    login(page, server, "alice", "#/profile")
    rows = page.locator("#profile-result tbody tr")
    expect(rows.first).to_be_visible()
    shown = rows.all_inner_texts()
    assert len(shown) == len(profile["items"])
    for row, item in zip(shown, profile["items"], strict=True):
        assert item["id"] in row and item["content"] in row
    assert "Ann prefers short answers" not in page.locator("#main").inner_text()
    assert_clean(page)
