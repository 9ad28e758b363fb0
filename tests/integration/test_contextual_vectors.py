"""An entry's vector leans toward the entries written just before it (same partition, same
event time), whichever path embeds it: a write, a later single write, re-embedding after a
model change, an import that re-embeds. Stored content never changes; each content goes
through the model once (rule 3: the predecessors' own vectors are mixed in)."""

from __future__ import annotations

import sqlite3
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tulving import Memory
from tulving.adapters.embedders.hashing import HashingEmbedder
from tulving.application.plumbing.representation import mix, representation_id
from tulving.application.plumbing.warnings_once import TulvingWarning, reset_warnings
from tulving.domain.errors import ConfigError

SESSION = datetime(2026, 2, 14, 18, 0, tzinfo=UTC)
TURNS = [
    "Caroline: I finally finished the pottery course!",
    "Melanie: That's amazing, how long did it take you?",
    "Caroline: Two years, one evening a week.",
    "Melanie: Worth every minute then.",
]


def expected(texts: list[str], index: int, window: int = 2) -> np.ndarray:
    """What the write path must have stored for ``texts[index]``."""
    embedder = HashingEmbedder()
    plain = np.asarray(embedder.embed(texts), dtype=np.float32)
    before = list(plain[max(0, index - window):index])
    if not before:
        return plain[index]
    return mix(plain[index], before)


def stored(memory: Memory, ids: list[str]) -> list[np.ndarray]:
    vectors = memory.ctx.storage.vectors_for(ids)
    return [np.asarray(vectors[i], dtype=np.float32) for i in ids]


def turns(texts: list[str], at: datetime = SESSION) -> list[dict[str, Any]]:
    return [{"content": t, "type": "EPISODE", "valid_from": at} for t in texts]


def test_a_batch_reads_each_turn_with_the_two_before_it(
        make_memory: Callable[..., Memory]) -> None:
    memory = make_memory()
    ids = [e.id for e in memory.store_many(turns(TURNS))]
    for i, vector in enumerate(stored(memory, ids)):
        assert np.allclose(vector, expected(TURNS, i), atol=1e-3), i
    # the first turn has nothing before it: its plain vector, exactly
    first = np.asarray(HashingEmbedder().embed([TURNS[0]]), dtype=np.float32)[0]
    assert np.allclose(stored(memory, ids[:1])[0], first, atol=1e-3)
    # content is stored as written
    assert [memory.get(i).content for i in ids] == TURNS  # type: ignore[union-attr]


def test_single_writes_read_the_stored_turns_before_them(
        make_memory: Callable[..., Memory]) -> None:
    memory = make_memory()
    ids = [memory.store(t, type="EPISODE", valid_from=SESSION).id for t in TURNS]
    for i, vector in enumerate(stored(memory, ids)):
        assert np.allclose(vector, expected(TURNS, i), atol=1e-3), i


def test_other_event_times_and_other_agents_are_not_context(
        make_memory: Callable[..., Memory]) -> None:
    other_agent = make_memory(agent_id="agent-b")
    other_agent.store_many(turns(["Bob: secret plans for the launch", "Bob: tell no one"]))
    other_agent.close()
    memory = make_memory()
    memory.store_many(turns(["Caroline: an earlier evening"],
                            at=datetime(2026, 2, 13, 18, 0, tzinfo=UTC)))
    ids = [e.id for e in memory.store_many(turns(TURNS[:2]))]
    plain = np.asarray(HashingEmbedder().embed([TURNS[0]]), dtype=np.float32)[0]
    vectors = stored(memory, ids)
    assert np.allclose(vectors[0], plain, atol=1e-3)  # neither Bob nor another evening
    assert np.allclose(vectors[1], expected(TURNS, 1), atol=1e-3)


def test_window_zero_stores_plain_vectors(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory(options={"writing": {"context_window": 0}})
    ids = [e.id for e in memory.store_many(turns(TURNS))]
    plain = np.asarray(HashingEmbedder().embed(TURNS), dtype=np.float32)
    assert np.allclose(np.stack(stored(memory, ids)), plain, atol=1e-3)


def test_window_one_reads_one_turn(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory(options={"writing": {"context_window": 1}})
    ids = [e.id for e in memory.store_many(turns(TURNS))]
    for i, vector in enumerate(stored(memory, ids)):
        assert np.allclose(vector, expected(TURNS, i, window=1), atol=1e-3), i


@pytest.mark.parametrize("bad", [{"context_window": -1}, {"context_window": "2"},
                                 {"contextwindow": 2}])
def test_bad_writing_options_fail_before_anything_opens(tmp_path: Path,
                                                         bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        Memory(tmp_path / "m.db", agent_id="a", embedder="hashing", options={"writing": bad})
    assert not (tmp_path / "m.db").exists()


def test_reembedding_after_a_model_change_rebuilds_the_same_vectors(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(path, agent_id="a", embedder="hashing", vectors="exact") as memory:
        ids = [e.id for e in memory.store_many(turns(TURNS))]
        written = stored(memory, ids)
        memory.ctx.storage.set_meta("embedding_model_id", "some-older-model")
    with Memory(path, agent_id="a", embedder="hashing", vectors="exact") as memory:
        memory.startup()  # a different recorded model: every entry is re-embedded
        for before, after in zip(written, stored(memory, ids), strict=True):
            assert np.allclose(before, after, atol=1e-3)


def _warned(record: pytest.WarningsRecorder) -> list[str]:
    return [str(w.message) for w in record if "re-embedded" in str(w.message)]


def test_a_store_records_what_built_its_vectors_and_reembeds_on_request(
        tmp_path: Path) -> None:
    reset_warnings()
    path = tmp_path / "m.db"
    with Memory(path, agent_id="a", embedder="hashing", vectors="exact",
                options={"writing": {"context_window": 0}}) as memory:
        ids = [e.id for e in memory.store_many(turns(TURNS))]
        assert memory.maintenance("inspect")["vector_representation"] == (
            representation_id(0))
        plain = stored(memory, ids)
    with pytest.warns(TulvingWarning, match="maintenance\\('reembed'\\)"):
        memory = Memory(path, agent_id="a", embedder="hashing", vectors="exact").startup()
    with memory:
        # the old vectors stay until asked: a later write uses the new rule
        assert all(np.allclose(a, b) for a, b in zip(plain, stored(memory, ids),
                                                     strict=True))
        report = memory.maintenance("reembed")
        assert report.as_dict() == {"action": "reembed", "embedded": len(TURNS),
                          "vector_representation": representation_id(2)}
        for i, vector in enumerate(stored(memory, ids)):
            assert np.allclose(vector, expected(TURNS, i), atol=1e-3), i
        top = memory.search("how long did the pottery course take", top_k=1)
        assert top and top[0].entry.id in ids
    reset_warnings()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        Memory(path, agent_id="a", embedder="hashing", vectors="exact").startup().close()
    assert _warned(record) == []


def test_a_store_from_before_the_record_is_flagged(tmp_path: Path) -> None:
    reset_warnings()
    path = tmp_path / "m.db"
    with Memory(path, agent_id="a", embedder="hashing", vectors="exact") as memory:
        memory.store_many(turns(TURNS))
    with sqlite3.connect(path) as db:  # what a store written by an older version holds
        db.execute("DELETE FROM meta WHERE name = 'vector_representation'")
    with pytest.warns(TulvingWarning, match="an older rule"):
        Memory(path, agent_id="a", embedder="hashing", vectors="exact").startup().close()


def test_a_reembed_cut_short_is_finished_by_the_next_startup(tmp_path: Path) -> None:
    """The crash point of ``reembed_all``: old vectors dropped and the rule recorded,
    nothing embedded yet. The next startup embeds every entry by the recorded rule."""
    reset_warnings()
    path = tmp_path / "m.db"
    with Memory(path, agent_id="a", embedder="hashing", vectors="exact",
                options={"writing": {"context_window": 0}}) as memory:
        ids = [e.id for e in memory.store_many(turns(TURNS))]
    memory = Memory(path, agent_id="a", embedder="hashing", vectors="exact")
    with pytest.warns(TulvingWarning):
        memory.startup()
    storage = memory.ctx.storage
    with storage.transaction():
        storage.clear_vectors()
        storage.set_meta("vector_representation", representation_id(2))
    storage.close()  # the process dies here: no embedding, no index written
    reset_warnings()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with Memory(path, agent_id="a", embedder="hashing", vectors="exact") as memory:
            for i, vector in enumerate(stored(memory, ids)):
                assert np.allclose(vector, expected(TURNS, i), atol=1e-3), i
            assert memory.maintenance("inspect")["index"]["healthy"]
    assert _warned(record) == []


def test_an_import_that_reembeds_rebuilds_the_same_vectors(tmp_path: Path) -> None:
    with Memory(tmp_path / "a.db", agent_id="a", embedder="hashing", vectors="exact") as a:
        ids = [e.id for e in a.store_many(turns(TURNS))]
        written = stored(a, ids)
        a.export(tmp_path / "bundle.zip")
    with Memory(tmp_path / "b.db", agent_id="a", embedder="hashing", vectors="exact") as b:
        report = b.import_bundle(tmp_path / "bundle.zip", reembedding="drop")
        assert report.reembedded == len(TURNS)
        for before, after in zip(written, stored(b, ids), strict=True):
            assert np.allclose(before, after, atol=1e-3)


@pytest.mark.model
def test_a_long_entry_before_a_turn_does_not_push_the_turn_out_of_its_vector(
        tmp_path: Path) -> None:
    """With the local model, a long assistant answer before a turn leaves the turn's vector
    about the turn (it adds a third of its own, whatever its length), so semantic search
    finds the turn by what it says."""
    pytest.importorskip("onnxruntime")
    answer = "Assistant: " + " ".join(
        f"For the sourdough, step {i} is to fold the dough and let it rest in a warm place."
        for i in range(40))
    turn = "User: I adopted a grey cat named Oliver yesterday."
    with Memory(tmp_path / "m.db", agent_id="a") as memory:
        ids = [e.id for e in memory.store_many(turns(["User: how do I bake bread?", answer,
                                                      turn]))]
        memory.store_many(turns([f"User: note {i} about the garden fence and the paint."
                                 for i in range(20)], at=datetime(2026, 3, 1, tzinfo=UTC)))
        embedder = memory.ctx.embedder
        assert embedder is not None
        plain = np.asarray(embedder.embed([turn]), dtype=np.float32)[0]
        vector = stored(memory, ids[2:])[0]
        assert float(vector @ plain) > 0.85
        hits = memory.search("grey cat named Oliver", 1, mode="semantic")
        assert hits[0].entry.id == ids[2]


class CountingEmbedder(HashingEmbedder):
    """The hashing model, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts: Any) -> Any:
        self.texts.extend(texts)
        return super().embed(texts)


def test_a_session_in_two_batches_runs_each_text_through_the_model_once(
        tmp_path: Path) -> None:
    """remember() stores a session's turns, then what the rules read off them: the
    second batch's context comes from the vectors the first just computed (before, the
    two last turns went through the model again, the longest texts of a session), and
    what is stored is the same vector as from one batch."""
    from tulving.application.plumbing import representation

    with representation._plain_lock:
        representation._recent_plain.clear()
    counting = CountingEmbedder()
    with Memory(tmp_path / "m.db", agent_id="a", embedder=counting, vectors="exact") as memory:
        first = memory.store_many(turns(TURNS[:2]))
        second = memory.store_many(turns(TURNS[2:]))
        got = stored(memory, [e.id for e in (*first, *second)])
    assert sorted(counting.texts) == sorted(TURNS)  # nothing embedded twice
    for i, vector in enumerate(got):
        assert np.allclose(vector, expected(TURNS, i), atol=1e-3), i
