"""Model identity and the vector cache: storage is the truth, the hnsw file a cache."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tulving import Memory
from tulving.adapters.embedders.hashing import HashingEmbedder

TEXTS = [f"memory {i}: the {w} service handles {w} requests" for i, w in
         enumerate(["billing", "search", "upload", "auth", "email", "report"] * 5)]


def _open(path: Path, **kwargs: Any) -> Memory:
    kwargs.setdefault("embedder", "hashing")
    kwargs.setdefault("vectors", "hnsw")
    return Memory(path, agent_id="a", **kwargs)


def _fill(path: Path, n: int = len(TEXTS), **kwargs: Any) -> list[str]:
    with _open(path, **kwargs) as m:
        return [e.id for e in m.store_many({"content": t, "type": "FACT"} for t in TEXTS[:n])]


class CountingEmbedder(HashingEmbedder):
    """The real hashing embedder, counting calls (to see batching)."""

    def __init__(self, dimension: int = 384) -> None:
        super().__init__(dimension)
        self.calls: list[int] = []

    def embed(self, texts: Any) -> Any:
        self.calls.append(len(texts))
        return super().embed(texts)


def test_meta_records_model_dimension_and_metric(tmp_path: Path) -> None:
    _fill(tmp_path / "m.db", 3)
    with _open(tmp_path / "m.db") as m:
        storage = m.ctx.storage
        assert storage.get_meta("embedding_model_id") == HashingEmbedder().model_id
        assert storage.get_meta("embedding_dimension") == "384"
        assert storage.get_meta("distance_metric") == "cosine"


def test_other_embedder_reembeds_every_active_entry_with_progress(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ids = _fill(db)
    with _open(db) as m:
        m.forget(ids[0])
    other = CountingEmbedder(dimension=128)
    seen: list[tuple[str, int, int]] = []
    with _open(db, embedder=other, progress=lambda *a: seen.append(a)) as m:
        storage = m.ctx.storage
        assert storage.get_meta("embedding_model_id") == other.model_id
        assert storage.get_meta("embedding_dimension") == "128"
        vectors = storage.vectors_for(ids[1:])
        assert set(vectors) == set(ids[1:])
        assert all(v.shape == (128,) for v in vectors.values())
        assert np.allclose(vectors[ids[1]], other.embed([TEXTS[1]])[0], atol=1e-3)  # float16
        assert m.ctx.vectors is not None and m.ctx.vectors.ids() == set(ids[1:])
        # (not a text's whole "the ... requests" after its "memory N:" label: a memory that
        # is only the query again is left out of search)
        hit = m.search("the upload service handles upload", 1, mode="semantic")
        assert "upload" in hit[0].entry.content
    assert other.calls and max(other.calls) <= 64 and sum(other.calls) >= len(ids) - 1
    assert any(stage == "embedding" and done == total for stage, done, total in seen)


def test_same_model_reopened_is_not_reembedded(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    _fill(db)
    again = CountingEmbedder()
    with _open(db, embedder=again) as m:
        assert m.search("billing", 1)
    assert sum(again.calls) <= 1  # the query only: nothing was re-embedded


def test_moved_store_is_the_same_model_and_keeps_its_cache(tmp_path: Path) -> None:
    db = tmp_path / "a" / "m.db"
    db.parent.mkdir()
    _fill(db)
    moved = tmp_path / "b"
    shutil.move(str(db.parent), str(moved))
    counting = CountingEmbedder()
    with _open(moved / "m.db", embedder=counting) as m:
        assert m.ctx.vectors is not None and m.ctx.vectors.count() == len(TEXTS)
        assert m.search("billing service", 1)[0].entry.content.endswith("billing requests")
    assert sum(counting.calls) <= 1  # the query only


@pytest.mark.parametrize("damage", ["delete", "corrupt", "truncate", "sidecar"])
def test_missing_or_corrupt_hnsw_cache_is_rebuilt(tmp_path: Path, damage: str) -> None:
    db = tmp_path / "m.db"
    ids = _fill(db)
    cache = Path(str(db) + ".hnsw")
    assert cache.exists()
    if damage == "delete":
        cache.unlink()
    elif damage == "corrupt":
        raw = bytearray(cache.read_bytes())
        raw[len(raw) // 2: len(raw) // 2 + 64] = b"\xff" * 64
        cache.write_bytes(bytes(raw))
    elif damage == "truncate":
        cache.write_bytes(cache.read_bytes()[:100])
    else:
        Path(str(cache) + ".json").write_text("{not json", encoding="utf-8")
    with _open(db) as m:
        assert m.ctx.vectors is not None and m.ctx.vectors.ids() == set(ids)
        # (not a text's whole "the ... requests" after its "memory N:" label: a memory that
        # is only the query again is left out of search)
        top = m.search("the auth service handles auth", 3, mode="semantic")
        assert all("auth" in r.entry.content for r in top)


KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys
    from tulving import Memory
    m = Memory(sys.argv[1], agent_id="a", embedder="hashing", vectors="hnsw")
    m.store_many([{"content": "written by the process that died: zebra migration", "type":
                   "FACT"}])
    os.kill(os.getpid(), signal.SIGKILL)  # before close: the index cache is never written
""")


def test_entries_written_by_a_killed_process_are_indexed_at_startup(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ids = _fill(db, 5)
    proc = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(db)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr
    with _open(db) as m:
        assert m.ctx.vectors is not None and m.ctx.vectors.count() == 6
        assert set(ids) < m.ctx.vectors.ids()
        hit = m.search("zebra migration", 1, mode="semantic")
        assert hit and "zebra" in hit[0].entry.content


def test_store_many_embeds_in_batches(tmp_path: Path) -> None:
    # One batch, one event time: one call, each content embedded once; the context comes
    # from the vectors of the entries before each (no second pass), batched inside.
    from datetime import UTC, datetime

    at = datetime(2026, 2, 1, tzinfo=UTC)
    counting = CountingEmbedder()
    with _open(tmp_path / "m.db", embedder=counting) as m:
        m.store_many({"content": f"fact number {i}", "type": "FACT", "valid_from": at}
                     for i in range(150))
    assert counting.calls == [150]
    # a later batch at the same event time in the same process mixes its context from
    # the plain vectors just computed for the two entries before it: one call
    with _open(tmp_path / "m.db", embedder=counting) as m:
        m.store_many({"content": f"later fact {i}", "type": "FACT", "valid_from": at}
                     for i in range(3))
    assert counting.calls[1:] == [3]
    # in a process that never embedded them (the kept vectors forgotten), the two stored
    # entries before the batch are embedded again: one call for the batch, one for those
    from tulving.application.plumbing import representation

    representation._recent_plain.clear()
    with _open(tmp_path / "m.db", embedder=counting) as m:
        m.store_many({"content": f"last fact {i}", "type": "FACT", "valid_from": at}
                     for i in range(3))
    assert counting.calls[2:] == [3, 2]
    plain_only = CountingEmbedder()
    with _open(tmp_path / "p.db", embedder=plain_only,
               options={"writing": {"context_window": 0}}) as m:
        m.store_many({"content": f"fact number {i}", "type": "FACT"} for i in range(150))
    assert plain_only.calls == [150]


@pytest.mark.model
def test_local_model_store_reopened_with_hashing_is_reembedded(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, agent_id="a") as m:
        m.store("I adopted a puppy", type="EPISODE")
        assert m.ctx.storage.get_meta("embedding_dimension") == "384"
    with _open(db) as m:
        assert m.ctx.storage.get_meta("embedding_model_id") == HashingEmbedder().model_id
        assert m.search("puppy", 1, mode="semantic")[0].entry.content == "I adopted a puppy"
