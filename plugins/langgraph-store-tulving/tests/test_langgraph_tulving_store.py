"""What the store adds over a key-value store: hybrid ranking inside a namespace prefix,
versions kept by key, as-of reads, curation into a budget, TTL on Tulving's access times,
identities, and bad input refused with nothing written."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp
from langgraph.store.tulving import TulvingStore, keys, memory_key

from tulving import ValidationError

FACTS = {
    "diet": "Ann is vegetarian and avoids fish",
    "city": "Ann lives in Lisbon near the river",
    "job": "Ann works as a structural engineer",
    "pet": "Ann has a grey cat called Miso",
}


def test_query_search_ranks_inside_the_prefix_only(store: Any) -> None:
    for key, text in FACTS.items():
        store.put(("memories", "ann"), key, {"text": text})
    store.put(("memories", "bob"), "city", {"text": "Bob lives in Lisbon too"})
    store.put(("notes",), "city", {"text": "Lisbon city guide: where to live"})
    hits = store.search(("memories", "ann"), query="where does she live?", limit=2)
    assert hits[0].key == "city" and hits[0].namespace == ("memories", "ann")
    assert all(h.namespace == ("memories", "ann") for h in hits)
    assert all(-1.0 <= h.score <= 1.0 for h in hits)      # the cosine similarity
    wide = store.search(("memories",), query="lives in Lisbon", limit=10)
    assert {(h.namespace, h.key) for h in wide[:2]} == {(("memories", "ann"), "city"),
                                                        (("memories", "bob"), "city")}
    assert ("notes",) not in {h.namespace for h in wide}


def test_query_search_applies_the_filter_and_puts_unindexed_items_last(store: Any) -> None:
    for i, (key, text) in enumerate(FACTS.items()):
        store.put(("m",), key, {"text": text, "rank": i})
    store.put(("m",), "raw", {"text": "Ann lives in Lisbon (unindexed copy)", "rank": 9},
              index=False)
    hits = store.search(("m",), query="Lisbon", filter={"rank": {"$gte": 1}}, limit=10)
    assert hits[0].key == "city"
    assert {h.key for h in hits} == {"city", "job", "pet", "raw"}
    assert hits[-1].key == "raw" and hits[-1].score is None


def test_the_index_config_and_per_item_index_choose_the_searchable_text(memory: Any) -> None:
    store = TulvingStore(memory, index={"fields": ["summary"]})
    store.put(("d",), "a", {"summary": "quarterly revenue grew", "body": "zebra"})
    store.put(("d",), "b", {"summary": "office move", "body": "revenue zebra"},
              index=["body"])
    assert [h.key for h in store.search(("d",), query="zebra", limit=1)] == ["b"]
    assert memory.get(memory_key(("d",), "a")).content == "quarterly revenue grew"


def test_put_supersedes_and_the_old_versions_stay_readable(store: Any) -> None:
    ns = ("memories", "ann")
    store.put(ns, "city", {"text": "Ann lives in Porto"})
    first = store.get(ns, "city")
    moment = store._now()
    store.put(ns, "city", {"text": "Ann lives in Lisbon"})
    now = store.get(ns, "city")
    assert now.value == {"text": "Ann lives in Lisbon"}
    assert now.created_at == first.created_at            # the item was created once
    assert now.updated_at > first.updated_at
    assert [i.value["text"] for i in store.history(ns, "city")] == [
        "Ann lives in Lisbon", "Ann lives in Porto"]
    assert store.get_as_of(ns, "city", moment).value == {"text": "Ann lives in Porto"}
    assert [h.value["text"] for h in store.search(ns, query="Porto")] == ["Ann lives in Lisbon"]
    store.delete(ns, "city")
    assert store.get(ns, "city") is None
    assert len(store.history(ns, "city")) == 2            # archived, not erased


def test_hard_delete_erases(memory: Any) -> None:
    store = TulvingStore(memory, hard_delete=True)
    store.put(("n",), "k", {"text": "secret plan"})
    store.delete(("n",), "k")
    assert store.get(("n",), "k") is None
    assert memory.list_entries(include_archived=True).entries == ()


def test_curate_fits_the_budget_and_keeps_to_the_prefix(store: Any) -> None:
    for key, text in FACTS.items():
        store.put(("memories", "ann"), key, {"text": text})
    store.put(("memories", "bob"), "diet", {"text": "Bob eats fish every day"})
    store.memory.store("Ann's birthday is in May", type="FACT", key="people/ann/birthday")
    block = store.curate(("memories", "ann"), "what should I cook for Ann?", token_budget=60)
    assert 0 < block.token_count <= 60
    assert store.memory.count_tokens(block.content) <= 60
    assert "vegetarian" in block.content
    assert "Bob" not in block.content and "birthday" not in block.content
    everything = store.curate(None, "Ann", token_budget=400).content
    assert "birthday" in everything                        # None: the whole memory
    briefing = store.curate(("memories",), token_budget=200)   # no query: orient mode
    assert briefing.mode == "orient" and briefing.token_count <= 200
    assert "birthday" not in briefing.content              # only what is under the prefix


def test_curate_without_a_query_shows_the_items(store: Any) -> None:
    import uuid

    for text in FACTS.values():
        store.put(("memories", "ann"), str(uuid.uuid4()), {"text": text})
    store.put(("memories", "bob"), str(uuid.uuid4()), {"text": "Bob eats fish every day"})
    # 400 tokens: since the 'knows' briefing, facts not about the user go under
    # '## Facts' (share 0.06) beside '## Keys' (0.05) of what it could not show, and
    # each line's label names the item's long key (four items in full: ~220 tokens)
    briefing = store.curate(("memories", "ann"), token_budget=400)
    assert all(f in briefing.content for f in FACTS.values())               # the items,
    assert "## Keys" not in briefing.content               # not a list of their UUID keys
    assert "Bob" not in briefing.content


def test_identities_keep_their_items_apart(make_memory: Any) -> None:
    base = make_memory()
    ann = TulvingStore(base.view(agent_id="assistant", user_id="ann"))
    bob = TulvingStore(base.view(agent_id="assistant", user_id="bob"))
    ann.put(("memories",), "city", {"text": "Lisbon"})
    bob.put(("memories",), "city", {"text": "Porto"})
    assert ann.get(("memories",), "city").value == {"text": "Lisbon"}
    assert bob.get(("memories",), "city").value == {"text": "Porto"}
    assert [h.value for h in ann.search(("memories",), query="Porto")] == [{"text": "Lisbon"}]
    bob.memory.erase(user_id="bob")                    # Tulving's erasure, per user
    assert bob.get(("memories",), "city") is None
    assert ann.get(("memories",), "city") is not None


def test_a_bad_batch_writes_nothing(store: Any) -> None:
    store.put(("n",), "kept", {"text": "before"})
    with pytest.raises(ValidationError):
        store.batch([PutOp(("n",), "a", {"text": "fine"}), PutOp(("n",), "b", ["not a map"])])
    with pytest.raises(InvalidNamespaceError):             # past the batch's own checks
        store.batch([PutOp(("n",), "a", {"text": "fine"}), GetOp(("bad.label",), "k")])
    assert store.memory.list_keys() == [memory_key(("n",), "kept")]
    with pytest.raises(InvalidNamespaceError):
        store.put(tuple(f"l{i}" for i in range(keys.MAX_DEPTH + 1)), "k", {"text": "deep"})


labels = st.text(min_size=1, max_size=40).filter(lambda s: "." not in s and "\x00" not in s)


@settings(max_examples=200, deadline=None)
@given(namespace=st.lists(labels, min_size=1, max_size=6), key=st.text(max_size=60))
def test_the_key_mapping_is_valid_and_reversible(namespace: list[str], key: str) -> None:
    tulving_key = memory_key(namespace, key)
    assert len(tulving_key) <= keys.MAX_KEY
    assert "//" not in tulving_key and ".." not in tulving_key
    assert tulving_key.startswith("langgraph/") and not tulving_key.endswith("/")
    parsed = keys.parse_memory_key(tulving_key)
    if parsed is not None:
        assert parsed == (tuple(namespace), key)
    else:
        assert tulving_key.startswith("langgraph/.h/")


def test_long_addresses_round_trip_through_the_metadata(store: Any) -> None:
    ns = ("très", "long " * 30, "ünïcode/with:colons")
    store.put(ns, "k" * 150, {"text": "far away"})
    assert keys.parse_memory_key(memory_key(ns, "k" * 150)) is None
    assert store.get(ns, "k" * 150).value == {"text": "far away"}
    assert store.list_namespaces(prefix=("très",)) == [ns]
    assert store.search(("très",), query="far away")[0].namespace == ns


# TTL on Tulving's own clock and access times --------------------------------------------
@pytest.fixture
def clocked(make_memory: Any) -> tuple[Any, Any]:
    from tulving.adapters.clock import ManualClock

    clock = ManualClock()
    memory = make_memory(clock=clock)
    return TulvingStore(memory, index={"fields": ["text"]},
                        ttl={"refresh_on_read": True}), clock


def test_ttl_expires_items_a_read_keeps_alive(clocked: tuple[Any, Any]) -> None:
    store, clock = clocked
    assert store.supports_ttl
    store.put(("s",), "short", {"text": "a short-lived note"}, ttl=10)
    store.put(("s",), "kept", {"text": "a lasting note"})
    clock.advance(minutes=8)
    assert store.get(("s",), "short") is not None           # a read refreshes the TTL
    store.memory.flush()
    clock.advance(minutes=8)
    assert store.get(("s",), "short", refresh_ttl=False) is not None
    assert [h.key for h in store.search(("s",), query="short-lived note", limit=1,
                                        refresh_ttl=False)] == ["short"]
    store.memory.flush()
    clock.advance(minutes=3)                                 # 11 minutes since the read
    assert store.get(("s",), "short") is None
    assert [h.key for h in store.search(("s",), query="note")] == ["kept"]
    assert [h.key for h in store.search(("s",))] == ["kept"]
    assert store.sweep_ttl() == 1
    assert [e.key for e in store.history(("s",), "short")] == ["short"]   # archived
    assert store.sweep_ttl() == 0


def test_the_ttl_config_gives_a_default(make_memory: Any) -> None:
    from tulving.adapters.clock import ManualClock

    clock = ManualClock()
    store = TulvingStore(make_memory(clock=clock), ttl={"default_ttl": 1})
    store.put(("s",), "k", {"text": "x"})
    store.put(("s",), "forever", {"text": "y"}, ttl=None)
    clock.advance(minutes=2)
    assert store.get(("s",), "k") is None and store.get(("s",), "forever") is not None
    store.start_ttl_sweeper(sweep_interval_minutes=0.001)
    try:
        import time
        deadline = time.monotonic() + 10
        while store.memory.list_keys() != [memory_key(("s",), "forever")]:
            assert time.monotonic() < deadline, "the sweeper did not sweep"
            time.sleep(0.05)
    finally:
        assert store.stop_ttl_sweeper(timeout=5)


def test_items_hold_their_value_verbatim(store: Any) -> None:
    value = {"text": "x", "nested": {"list": [1, 2.5, None, True, "ü"]}, "empty": {}}
    store.put(("v",), "k", value)
    assert store.get(("v",), "k").value == value
    raw = store.memory.get(memory_key(("v",), "k")).metadata["langgraph"]["value"]
    assert json.dumps(raw, sort_keys=True) == json.dumps(value, sort_keys=True)
    assert timedelta(0) <= store.get(("v",), "k").updated_at - store.get(("v",), "k").created_at


def test_a_personal_scope_shares_items_with_the_users_other_agents(make_memory: Any) -> None:
    base = make_memory()
    planner = TulvingStore(base.view(agent_id="planner", user_id="ann"), scope="personal")
    private = TulvingStore(base.view(agent_id="planner", user_id="ann"))
    writer = TulvingStore(base.view(agent_id="writer", user_id="ann"))
    planner.put(("prefs",), "tone", {"text": "Ann prefers short answers"})
    private.put(("prefs",), "draft", {"text": "planner's own scratch note"})
    assert writer.get(("prefs",), "tone").value == {"text": "Ann prefers short answers"}
    assert writer.get(("prefs",), "draft") is None
    assert [h.key for h in writer.search(("prefs",), query="answers")] == ["tone"]


def test_from_path_opens_and_closes_its_memory(tmp_path: Any) -> None:
    path = str(tmp_path / "own.db")
    with TulvingStore.from_path(path, agent_id="g", embedder="hashing", vectors="exact",
                                store_options={"index": {"fields": ["text"]}}) as store:
        store.put(("n",), "k", {"text": "kept on disk", "other": "not indexed"})
        assert store.memory.get(memory_key(("n",), "k")).content == "kept on disk"
    with TulvingStore.from_path(path, agent_id="g", embedder="hashing",
                                vectors="exact") as again:
        assert again.get(("n",), "k").value["text"] == "kept on disk"
    with pytest.raises(ValidationError):
        TulvingStore("agent.db")  # type: ignore[arg-type]


@pytest.mark.parametrize("pii", ["reject", "redact"])
def test_the_memorys_write_policy_governs_items(make_memory: Any, pii: str) -> None:
    from tulving import PolicyViolation

    store = TulvingStore(make_memory(policy={"pii": pii}), index={"fields": ["text"]})
    value = {"text": "write to ann@example.com", "email": "ann@example.com"}
    if pii == "reject":
        with pytest.raises(PolicyViolation):
            store.put(("u",), "k", value)
        assert store.get(("u",), "k") is None
    else:
        store.put(("u",), "k", value)
        assert store.get(("u",), "k").value == {"text": "write to [REDACTED:email]",
                                                "email": "[REDACTED:email]"}
