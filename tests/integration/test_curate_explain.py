"""``curate(explain=True)`` and the reads the inspector is built on: the account must be
the decision curate made (same shown set, same order, costs that add up), not a guess."""

from __future__ import annotations

import pytest

from tulving import Memory
from tulving.domain.errors import NotFoundError, ValidationError


@pytest.fixture
def memory() -> Memory:
    m = Memory(None, storage="memory", embedder="hashing", agent_id="a")
    for i in range(30):
        m.store(f"deploys happen on day {i % 7} of the week, note {i}", type="FACT",
                importance=0.2 + (i % 5) / 10)
    m.store("deploys happen on day 3 of the week, note 3", type="DECISION")  # a near-duplicate
    m.store("the staging db password is hunter2", type="FACT", key="db/password")
    m.store("we ship on Fridays", type="DECISION", key="ship/day", scope="shared")
    yield m
    m.close()


def test_the_report_is_the_decision_curate_made(memory: Memory) -> None:
    plain = memory.curate("which day do deploys happen", token_budget=150)
    explained = memory.curate("which day do deploys happen", token_budget=150, explain=True)
    assert plain.candidates == ()
    assert explained.content == plain.content
    shown = [c for c in explained.candidates if c.disclosure != "left out"]
    assert [c.entry_id for c in shown] == [c.entry.id for c in explained.entries]
    assert [c.disclosure for c in shown] == [c.disclosure for c in explained.entries]
    scores = [c.score for c in explained.candidates]
    assert scores == sorted(scores, reverse=True)
    header = memory.count_tokens(explained.content.split("\n", 1)[0])
    footer = explained.content.rsplit("\n", 1)[1]
    footer_cost = memory.count_tokens("\n" + footer) if footer.startswith("(") else 0
    # BPE tokens are not quite additive across line breaks: within a token per line
    parts = header + sum(c.tokens for c in shown) + footer_cost
    assert abs(parts - explained.token_count) <= len(shown) + 1
    left = [c for c in explained.candidates if c.disclosure == "left out"]
    assert left and {c.reason for c in left} <= {"over budget", "near-duplicate"}
    for c in explained.candidates:
        assert 0 <= c.recency <= 1 and 0 <= c.importance <= 1 and 0 <= c.trust <= 1
        assert c.tokens > 0 and c.section == "relevant"


def test_the_report_never_shows_a_secret_and_covers_orient(memory: Memory) -> None:
    report = memory.curate("staging db password", token_budget=400, explain=True).candidates
    assert report and all("hunter2" not in c.preview for c in report)
    orient = memory.curate(mode="orient", token_budget=400, explain=True)
    assert {c.section for c in orient.candidates} >= {"decisions"}
    with pytest.raises(ValidationError):
        memory.curate("x", token_budget=100, explain="yes")  # type: ignore[arg-type]


def test_list_entries_by_scope_pages_without_loss(memory: Memory) -> None:
    shared = memory.list_entries(5, scope="shared")
    assert [e.key for e in shared.entries] == ["ship/day"]
    seen, cursor = [], None
    while True:
        page = memory.list_entries(7, cursor, scope="agent")
        seen += [e.id for e in page.entries]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 32
    with pytest.raises(ValidationError):
        memory.list_entries(5, scope="galaxy")


def test_audit_of_one_memory_and_archived_versions_by_id(memory: Memory) -> None:
    old = memory.get("ship/day")
    new = memory.correct("ship/day", "we ship on Thursdays")
    assert [r.action for r in memory.audit_log(new.id)] == ["correct"]
    assert [r.action for r in memory.audit_log(old.id)] == ["store"]
    assert all(r.entry_id == new.id for r in memory.audit_log("ship/day"))
    with pytest.raises(NotFoundError):
        memory.get(old.id)
    assert memory.get(old.id, include_archived=True).content == "we ship on Fridays"
    with pytest.raises(NotFoundError):
        memory.audit_log("no/such/key")
