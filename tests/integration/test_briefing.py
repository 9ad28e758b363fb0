"""The orient briefing (``curate`` without a query): sections, shares that adapt to what
exists, the budget, redaction and tenancy, on a real SQLite store."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tulving.application.curation.briefing import SECTIONS
from tulving.domain.errors import ValidationError
from tulving.domain.query import EntryFilter
from tulving.domain.types import MemoryType
from tulving.testing.scenarios import PORTUGUESE, VEGETARIAN, preference_scenario


def test_both_preferences_are_in_a_300_token_briefing(make_memory: Any) -> None:
    m = make_memory()
    preference_scenario(m)
    block = m.curate(token_budget=300)  # no query: the briefing
    assert block.mode == "orient" and block.token_count <= 300
    assert VEGETARIAN in block.content and PORTUGUESE in block.content
    shown = {e.entry.content: (e.section, e.disclosure) for e in block.entries}
    assert shown[VEGETARIAN] == shown[PORTUGUESE] == ("profile", "full")
    # the preferences come before the small talk, which only fills what is left
    assert block.content.index(VEGETARIAN) < block.content.index("Thanks, you too!")
    assert block.content.startswith("## About the user")


def test_an_empty_section_holds_no_budget(make_memory: Any) -> None:
    m = make_memory()
    facts = [f"The user's project number {i} is called Kestrel-{i} and ships in spring."
             for i in range(40)]
    m.store_many({"content": f, "type": "FACT"} for f in facts)
    block = m.curate(token_budget=600)
    # only the profile has anything: it gets the whole budget, not a 35 % share of it
    assert block.token_count > 0.85 * 600
    assert {e.section for e in block.entries} == {"profile"}
    for heading in ("## Pinned", "## Decisions", "## Active plans", "## Keys"):
        assert heading not in block.content


def test_every_section_and_its_place(make_memory: Any, clock: Any) -> None:
    m = make_memory()
    m.store("Release notes go out every Friday", type="FACT", pinned=True)
    m.store("The user prefers metric units", type="PREFERENCE")
    m.store("We use PostgreSQL 16", type="DECISION", key="db/engine")
    expired = m.store("Freeze merges until the audit ends", type="DECISION",
                      valid_until=clock.now() + timedelta(hours=1))
    m.store("Ship passkeys in the next release", type="PLAN")
    good = m.store("Restart the worker, then clear the queue", type="PROCEDURE")
    bad = m.store("Delete the cache folder by hand", type="PROCEDURE")
    for _ in range(3):
        m.record_outcome(good.id, True)
        m.record_outcome(bad.id, False)
    with m.session(goal="triage the flaky login test"):
        m.store("Login test fails only when the clock skews", type="OBSERVATION")
        m.store("Skew came from the CI runner's NTP", type="OBSERVATION")
    m.remember("user: Morning! Any news on the login test?")
    m.store("An unkeyed note", type="FACT")
    m.store("x" * 10, type="EPISODE", key="raw/log")
    clock.advance(timedelta(hours=2))
    block = m.curate(token_budget=4000, explain=True)
    sections = {e.entry.content: e.section for e in block.entries}
    assert sections["Release notes go out every Friday"] == "pinned"
    assert sections["The user prefers metric units"] == "profile"
    assert sections["We use PostgreSQL 16"] == "decisions"
    assert expired.id not in {e.entry.id for e in block.entries}  # no longer in force
    assert sections["Ship passkeys in the next release"] == "plans"
    assert sections[good.content] == "procedures"
    assert bad.id not in {e.entry.id for e in block.entries}  # it failed every time
    assert any(s == "summaries" for s in sections.values())
    assert sections["user: Morning! Any news on the login test?"] == "recent"
    order = [s.heading for s in SECTIONS if s.heading in block.content]
    assert order == sorted(order, key=block.content.index)  # shown in SECTIONS order
    assert len(block.entries) == len({e.entry.id for e in block.entries})  # one section each
    assert {c.section for c in block.candidates} >= {"profile", "decisions", "recent"}


def test_the_key_index_lists_only_keys_not_shown(make_memory: Any) -> None:
    m = make_memory()
    m.store("We use PostgreSQL 16", type="DECISION", key="db/engine")
    m.store_many({"content": f"Turn {i}: " + "words " * 60, "type": "EPISODE",
                  "key": f"log/{i:02d}"} for i in range(30))
    block = m.curate(token_budget=500)
    assert "PostgreSQL 16" in block.content
    keys = block.content.split("## Keys", 1)[1]
    assert "db/engine" not in keys and "log/" in keys


@pytest.mark.parametrize("budget", [50, 51, 64, 120, 300, 1000, 3000])  # within the limits table
def test_the_budget_is_never_exceeded(make_memory: Any, budget: int) -> None:
    m = make_memory()
    preference_scenario(m)
    m.store("We use PostgreSQL 16", type="DECISION", key="db/engine")
    m.store("Ship passkeys in the next release", type="PLAN", key="auth/passkeys")
    m.store("Always run migrations before deploying", type="PROCEDURE", pinned=True)
    block = m.curate(token_budget=budget)
    assert block.token_count == m.count_tokens(block.content) <= budget


def test_secrets_are_masked_in_the_briefing(make_memory: Any) -> None:
    m = make_memory()
    secret = "sk-proj-Abcdefghijklmnopqrstuvwx1234567890"
    m.store(f"The user's deploy key is {secret}", type="FACT")
    m.store("hunter2", type="FACT", key="db/password")
    block = m.curate(token_budget=400)
    assert secret not in block.content and "hunter2" not in block.content
    assert all(secret not in e.entry.content and "hunter2" not in e.entry.content
               for e in block.entries)


def test_one_users_profile_is_not_in_anothers_briefing(make_memory: Any) -> None:
    ann = make_memory("t.db", user_id="ann")
    ann.store("Ann is allergic to peanuts", type="FACT", scope="personal")
    ann.close()
    bo = make_memory("t.db", user_id="bo")
    bo.store("Bo prefers tea", type="PREFERENCE", scope="personal")
    assert "peanuts" not in bo.curate(token_budget=500).content
    assert "tea" in bo.curate(token_budget=500).content
    bo.close()
    ann = make_memory("t.db", user_id="ann")
    assert "peanuts" in ann.curate(token_budget=500).content
    assert "tea" not in ann.curate(token_budget=500).content


def test_modes_without_a_query(make_memory: Any) -> None:
    m = make_memory()
    preference_scenario(m)
    assert m.curate(token_budget=200).content == m.curate(
        None, token_budget=200, mode="orient").content
    with pytest.raises(ValidationError):
        m.curate(None, token_budget=200, mode="query")  # asks, but says nothing
    assert m.curate("what does the user eat?", token_budget=200).mode == "query"


def test_remembered_self_statements_reach_the_briefing(make_memory: Any) -> None:
    """No LLM: what the user says about themselves inside a long message is restated about
    them and briefed, while the assistant's numbered answer is not the user's procedure."""
    m = make_memory()
    m.remember(
        "user: I'm putting together a packing list for a week in the mountains and want "
        "to travel light this time. By the way, I've been a type 1 diabetic since I was "
        "twelve, so I always carry insulin and a glucose meter. What else should I bring?\n"
        "assistant: Great question! Here is a list:\n1. Layers\n2. Rain jacket\n"
        "3. Insulin cooler\nINFO: weather varies\nE.g.: pack a fleece.")
    m.wait_enriched()  # what is read off the turns is written in the background
    block = m.curate(token_budget=300)
    profile = [e for e in block.entries if e.section == "profile"]
    assert any("type 1 diabetic" in e.entry.content for e in profile)
    assert not [e for e in block.entries if e.entry.type.value == "PROCEDURE"]
    turns = m.ctx.storage.query(EntryFilter(partitions=m.ctx.visible_partitions(),
                                            types=(MemoryType.EPISODE,)))
    assert {e.metadata.get("speaker") for e in turns} == {"user", "assistant"}
    assert len(turns) == 2  # "INFO:" and "E.g.:" inside the answer are not speakers
