"""The hnsw index is a cache: a bad file on disk is discarded, never trusted or fatal."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("hnswlib")

from contract_tests.vectors import make_ids, random_vectors
from tulving.adapters.vectors.hnsw import HnswIndex, create
from tulving.plugins.registry import AdapterContext

DIM = 32


def persisted(location: Path, n: int = 200) -> tuple[list[str], np.ndarray]:
    ids, vectors = make_ids(n), random_vectors(n, DIM, seed=3)
    index = create(AdapterContext(location=str(location)))
    index.open(DIM)
    index.add(ids, vectors)
    index.persist()
    index.close()
    return ids, vectors


def reopen(location: Path, dimension: int = DIM) -> HnswIndex:
    index = create(AdapterContext(location=str(location)))
    index.open(dimension)
    return index


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def cache(db: Path) -> Path:
    return Path(str(db) + ".hnsw")


def sidecar(db: Path) -> Path:
    return Path(str(db) + ".hnsw.json")


def test_round_trip_writes_both_files(db: Path) -> None:
    ids, vectors = persisted(db)
    assert cache(db).is_file() and sidecar(db).is_file()
    meta = json.loads(sidecar(db).read_text())
    assert meta["dimension"] == DIM and meta["count"] == 200 and meta["checksum"]
    index = reopen(db)
    assert index.ids() == set(ids)
    assert index.query(vectors[42], 1)[0].id == ids[42]


@pytest.mark.parametrize("size", ["same", "other"])
def test_garbage_bytes_open_empty(db: Path, caplog: pytest.LogCaptureFixture, size: str) -> None:
    persisted(db)
    length = cache(db).stat().st_size if size == "same" else 4096
    cache(db).write_bytes(os.urandom(length))
    with caplog.at_level(logging.WARNING):
        index = reopen(db)
    assert index.count() == 0
    assert "discarding the vector cache" in caplog.text


def test_truncated_file_opens_empty(db: Path) -> None:
    persisted(db)
    data = cache(db).read_bytes()
    cache(db).write_bytes(data[: len(data) // 2])
    assert reopen(db).count() == 0


def test_one_flipped_byte_opens_empty(db: Path) -> None:
    persisted(db)
    data = bytearray(cache(db).read_bytes())
    data[len(data) // 3] ^= 0xFF
    cache(db).write_bytes(bytes(data))
    assert reopen(db).count() == 0


def test_missing_sidecar_opens_empty(db: Path) -> None:
    persisted(db)
    sidecar(db).unlink()
    assert reopen(db).count() == 0


def test_missing_index_file_opens_empty(db: Path) -> None:
    persisted(db)
    cache(db).unlink()
    assert reopen(db).count() == 0


def legacy(db: Path) -> tuple[list[str], np.ndarray]:
    """A cache as written before the vectors copy stopped being saved: a ``.vectors``
    file beside the graph, vouched for by the sidecar."""
    ids, vectors = persisted(db)
    index = reopen(db)
    meta = json.loads(sidecar(db).read_text())
    labels = meta["labels"]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = np.zeros((meta["next_label"], DIM), dtype=np.float32)
    for i, item in enumerate(ids):
        rows[labels[item]] = unit[i]
    path = Path(str(db) + ".hnsw.vectors")
    np.save(path.open("wb"), rows, allow_pickle=False)
    import hashlib

    digest = hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()
    sidecar(db).write_text(json.dumps({**meta, "vectors_size": path.stat().st_size,
                                       "vectors_checksum": digest}))
    index.close()
    return ids, vectors


def test_a_legacy_cache_is_read_then_rewritten_without_its_vectors_file(db: Path) -> None:
    ids, vectors = legacy(db)
    index = reopen(db)
    assert index.count() == len(ids) and not index.needs_vectors
    hit = index.query(vectors[5], 1, allow=ids[:10])
    assert hit[0].id == ids[5] and hit[0].score == pytest.approx(1.0, abs=1e-5)
    index.persist()
    assert not Path(str(db) + ".hnsw.vectors").exists()
    assert "vectors_checksum" not in json.loads(sidecar(db).read_text())
    assert reopen(db).count() == len(ids)


def test_a_cache_without_its_vectors_answers_exactly_and_takes_them_from_storage(
        db: Path) -> None:
    ids, vectors = persisted(db)
    index = reopen(db)
    assert index.needs_vectors  # nothing on disk but the graph and the sidecar
    hit = index.query(vectors[7], 3, allow=ids[:20])  # exact scoring, rows from the graph
    assert hit[0].id == ids[7] and hit[0].score == pytest.approx(1.0, abs=1e-5)
    # the 20 rows exact scoring read from the graph are filled already
    assert index.fill_vectors(ids, vectors) == len(ids) - 20
    assert not index.needs_vectors
    assert index.fill_vectors(["not-an-id"], vectors[:1]) == 0
    scores = [h.score for h in index.query(vectors[3], 5, allow=ids[:50])]
    assert scores[0] == pytest.approx(1.0, abs=1e-5) and scores == sorted(scores, reverse=True)
    index.remove(ids[: int(len(ids) * 0.3)])  # compaction reads every live row
    assert index.query(vectors[150], 1)[0].id == ids[150]


@pytest.mark.parametrize("damage", ["missing", "truncated", "garbage"])
def test_damaged_legacy_vectors_file_opens_empty(db: Path, damage: str) -> None:
    legacy(db)
    vectors = Path(str(db) + ".hnsw.vectors")
    if damage == "missing":
        vectors.unlink()
    elif damage == "truncated":
        vectors.write_bytes(vectors.read_bytes()[:100])
    else:
        vectors.write_bytes(os.urandom(vectors.stat().st_size))
    assert reopen(db).count() == 0


@pytest.mark.parametrize(
    "damage",
    [
        lambda meta: "{not json",
        lambda meta: json.dumps([1, 2, 3]),
        lambda meta: json.dumps({**meta, "format": "something-else"}),
        lambda meta: json.dumps({**meta, "count": meta["count"] + 1}),
        lambda meta: json.dumps({**meta, "labels": {**meta["labels"], "extra": 0}}),
        lambda meta: json.dumps({**meta, "labels": dict.fromkeys(meta["labels"], 0)}),
        lambda meta: json.dumps({**meta, "space": "l2"}),
    ],
    ids=["not-json", "not-object", "format", "count", "duplicate-label", "same-labels", "space"],
)
def test_damaged_sidecar_opens_empty(db: Path, damage: object) -> None:
    persisted(db)
    meta = json.loads(sidecar(db).read_text())
    sidecar(db).write_text(damage(meta))  # type: ignore[operator]
    assert reopen(db).count() == 0


def test_dimension_mismatch_opens_empty_and_can_be_rebuilt(db: Path) -> None:
    persisted(db)
    index = reopen(db, dimension=DIM * 2)
    assert index.count() == 0
    ids, vectors = make_ids(30, "w"), random_vectors(30, DIM * 2, seed=4)
    index.rebuild(zip(ids, vectors, strict=True), 30)
    index.persist()
    again = reopen(db, dimension=DIM * 2)
    assert again.ids() == set(ids)


def test_torn_persist_is_never_used(db: Path) -> None:
    """A crash between replacing the index file and the sidecar: checksum no longer matches."""
    persisted(db)
    old_meta = sidecar(db).read_text()
    index = reopen(db)
    index.add(make_ids(50, "more"), random_vectors(50, DIM, seed=8))
    index.persist()
    sidecar(db).write_text(old_meta)  # the new index file with the old sidecar
    assert reopen(db).count() == 0


def test_leftover_temp_files_do_not_break_open_or_persist(db: Path) -> None:
    ids, _ = persisted(db)
    leftovers = [
        Path(str(cache(db)) + ".tmp-999-deadbeef"),
        Path(str(sidecar(db)) + ".tmp-999-deadbeef"),
    ]
    for leftover in leftovers:
        leftover.write_bytes(os.urandom(512))
    index = reopen(db)
    assert index.ids() == set(ids)
    index.add(["one-more"], random_vectors(1, DIM, seed=5))
    index.persist()
    assert reopen(db).count() == 201
    assert all(leftover.exists() for leftover in leftovers)  # young: maybe a live writer's


def test_stale_temp_files_are_removed_on_open(db: Path) -> None:
    persisted(db)
    stale = Path(str(cache(db)) + ".tmp-1-cafebabe")
    stale.write_bytes(b"x" * 100)
    an_hour_ago = time.time() - 3600
    os.utime(stale, (an_hour_ago, an_hour_ago))
    reopen(db)
    assert not stale.exists()


def test_persist_leaves_no_temp_files(db: Path) -> None:
    persisted(db)
    names = sorted(p.name for p in db.parent.iterdir())
    assert names == ["memory.db.hnsw", "memory.db.hnsw.json"]


def test_persist_without_changes_does_not_rewrite(db: Path) -> None:
    persisted(db)
    index = reopen(db)
    before = cache(db).stat().st_mtime_ns
    time.sleep(0.01)
    index.persist()
    assert cache(db).stat().st_mtime_ns == before


def test_compaction_drops_dead_elements_from_the_file(db: Path) -> None:
    ids, vectors = persisted(db, n=1000)
    full_size = cache(db).stat().st_size
    index = reopen(db)
    index.remove(ids[:500])  # 50% dead: over the 20% threshold
    assert index.count() == 500
    index.persist()
    assert cache(db).stat().st_size < full_size * 0.75
    again = reopen(db)
    assert again.ids() == set(ids[500:])
    assert again.query(vectors[700], 1)[0].id == ids[700]


def test_removal_below_threshold_keeps_working_after_reopen(db: Path) -> None:
    ids, vectors = persisted(db, n=1000)
    index = reopen(db)
    index.remove(ids[:100])  # 10%: marked deleted, not compacted
    index.persist()
    again = reopen(db)
    assert again.ids() == set(ids[100:])
    results = again.query(vectors[5], 1000)
    assert len(results) == 900 and not set(ids[:100]) & {r.id for r in results}
    again.add([ids[5]], vectors[5][None, :])
    assert again.query(vectors[5], 1)[0].id == ids[5]


@pytest.mark.parametrize("location", ["", ":memory:"])
def test_memory_locations_never_touch_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, location: str
) -> None:
    monkeypatch.chdir(tmp_path)
    index = create(AdapterContext(location=location))
    index.open(DIM)
    index.add(make_ids(5), random_vectors(5, DIM))
    index.persist()
    assert list(tmp_path.iterdir()) == []
    assert index.cache_path is None


def test_rebuild_reports_progress_in_chunks(db: Path) -> None:
    index = reopen(db)
    ids, vectors = make_ids(3000), random_vectors(3000, DIM, seed=6)
    calls: list[tuple[int, int]] = []
    index.rebuild(zip(ids, vectors, strict=True), 3000, lambda d, t: calls.append((d, t)))
    assert len(calls) >= 3 and calls[-1] == (3000, 3000)
    assert index.count() == 3000


def test_failed_rebuild_keeps_the_previous_content(db: Path) -> None:
    ids, _ = persisted(db)
    index = reopen(db)

    def broken() -> object:
        yield "ok", random_vectors(1, DIM)[0]
        raise RuntimeError("storage went away")

    with pytest.raises(RuntimeError):
        index.rebuild(broken(), 2)  # type: ignore[arg-type]
    assert index.ids() == set(ids)


def test_options_reach_hnswlib_and_bad_ones_are_config_errors(db: Path) -> None:
    from tulving.domain.errors import ConfigError
    from tulving.plugins.registry import Registry

    index = create(AdapterContext(location=str(db)), M=8, ef_construction=50, ef_search=100)
    index.open(DIM)
    index.add(make_ids(10), random_vectors(10, DIM))
    index.persist()
    assert json.loads(sidecar(db).read_text())["M"] == 8
    with pytest.raises(ConfigError):
        create(AdapterContext(location=str(db)), M=0)
    registry = Registry()
    registry.add("vectors", "hnsw", "tulving.adapters.vectors.hnsw:create")
    with pytest.raises(ConfigError):
        registry.create("vectors", "hnsw", AdapterContext(location=str(db)), not_an_option=1)


def test_persist_after_a_discard_replaces_the_bad_files(
    db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    persisted(db)
    cache(db).write_bytes(b"garbage")
    index = reopen(db)
    index.persist()  # nothing was added, yet the bad cache must not survive
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert reopen(db).count() == 0
    assert "discarding" not in caplog.text


def test_a_reopened_store_answers_exactly_without_reading_every_vector(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache records the change-log position it was saved at: a reopen reads no
    stored vector (before, it read all of them, 5.4 s at a million), and rows the exact
    paths need come from the graph."""
    from tulving import Memory
    from tulving.adapters.storage.sqlite import SQLiteStorage

    path = tmp_path / "m.db"
    with Memory(path, agent_id="a", embedder="hashing", vectors="hnsw") as memory:
        memory.store_many({"content": f"note {i} on topic {i % 13}", "type": "FACT"}
                          for i in range(300))
    assert not Path(str(path) + ".hnsw.vectors").exists()
    read = SQLiteStorage.iter_vectors
    with monkeypatch.context() as patch:
        patch.setattr(SQLiteStorage, "iter_vectors",
                      lambda *a, **k: pytest.fail("startup read every stored vector"))
        memory = Memory(path, agent_id="a", embedder="hashing", vectors="hnsw").startup()
    assert SQLiteStorage.iter_vectors is read
    with memory:
        index = memory.ctx.vectors
        assert index.count() == 300
        stored = memory.ctx.storage.vectors_for([memory.list_entries(1).entries[0].id])
        (entry_id, vector), = stored.items()
        top = memory.search("x", top_k=1, mode="semantic")  # answers at all
        assert top and index.query(vector, 1, allow=[entry_id])[0].score == pytest.approx(
            1.0, abs=1e-5)
