"""``vector_format="float16"`` (the default of a new store since issue 35): vectors take half
the bytes on disk and read back as float32 close to what was stored; switching formats converts a store in one transaction, and a
SIGKILL in the middle leaves a store that opens in one format or the other, whole."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from tests.faults.sweep import kill_after
from tulving import Memory
from tulving.domain.errors import ConfigError

F16 = {"storage": {"vector_format": "float16"}}
F32 = {"storage": {"vector_format": "float32"}}


def fill(path: Path, n: int, options: dict | None = None) -> None:
    with Memory(path, agent_id="a", embedder="hashing", vectors="hnsw",
                options=options) as memory:
        for start in range(0, n, 2000):
            memory.store_many({"content": f"note {i} about topic {i % 97}", "type": "OBSERVATION"}
                              for i in range(start, min(n, start + 2000)))


def stored(path: Path) -> tuple[str | None, set[int]]:
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT value FROM meta WHERE name = 'vector_format'").fetchone()
        sizes = {r[0] for r in conn.execute("SELECT DISTINCT length(vector) FROM embeddings")}
    return (row[0] if row else None), sizes


def test_float16_halves_the_vectors_and_reads_back_close(tmp_path: Path) -> None:
    plain, half = tmp_path / "plain.db", tmp_path / "half.db"
    fill(plain, 300, F32)
    fill(half, 300)  # a new store's default
    assert stored(plain) == ("float32", {384 * 4}) and stored(half) == ("float16", {384 * 2})
    with Memory(plain, agent_id="a", embedder="hashing") as a, \
            Memory(half, agent_id="a", embedder="hashing") as b:  # no option: kept as is
        ids_a = [e.id for e in a.list_entries(300).entries]
        ids_b = [e.id for e in b.list_entries(300).entries]
        va = a.ctx.storage.vectors_for(ids_a)
        vb = b.ctx.storage.vectors_for(ids_b)
        assert all(vb[i].dtype == np.float32 for i in ids_b)
        worst = max(float(np.abs(va[x] - vb[y]).max()) for x, y in zip(ids_a, ids_b, strict=True))
        assert worst < 2e-3
        for q in ("topic 13", "note 250 about topic 56"):
            top_a = [r.entry.content for r in a.search(q, top_k=5, mode="semantic")]
            top_b = [r.entry.content for r in b.search(q, top_k=5, mode="semantic")]
            # the same best hit; at most one near-tie at the bottom trades places
            assert top_a[0] == top_b[0] and len(set(top_a) & set(top_b)) >= 4
    assert stored(half) == ("float16", {384 * 2})
    fill(half, 10)  # writes keep the format
    assert stored(half) == ("float16", {384 * 2})
    with pytest.raises(ConfigError, match="vector_format"):
        Memory(half, agent_id="a", embedder="hashing",
               options={"storage": {"vector_format": "int4"}}).startup()


def test_switching_converts_both_ways(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    fill(path, 500, F32)
    with sqlite3.connect(path) as conn:
        before = dict(conn.execute("SELECT entry_id, vector FROM embeddings"))
    Memory(path, agent_id="a", embedder="hashing", options=F16).startup().close()
    assert stored(path) == ("float16", {384 * 2})
    Memory(path, agent_id="a", embedder="hashing", options=F32).startup().close()
    assert stored(path) == ("float32", {384 * 4})
    with sqlite3.connect(path) as conn:
        after = dict(conn.execute("SELECT entry_id, vector FROM embeddings"))
    assert after.keys() == before.keys()
    assert all(np.allclose(np.frombuffer(after[k], np.float32),
                           np.frombuffer(before[k], np.float32), atol=2e-3) for k in before)


CONVERT = """
import sys
from tests.faults.sweep import kill_after
from tulving import Memory
Memory(sys.argv[1], agent_id="a", embedder="hashing",
       options={"storage": {"vector_format": "float16"}}).startup()
"""


@pytest.fixture(scope="module")
def big_float32(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed store of 20,000 float32 vectors, filled once and copied for each kill."""
    path = tmp_path_factory.mktemp("big") / "big.db"
    fill(path, 20_000, F32)
    return path


@pytest.mark.parametrize("delay", [0.2, 0.6, 1.0])
def test_a_kill_during_conversion_leaves_one_whole_format(
        tmp_path: Path, big_float32: Path, delay: float) -> None:
    path = tmp_path / "big.db"
    for made in big_float32.parent.iterdir():  # the closed store and its vector cache
        if made.suffix != ".lock":
            shutil.copyfile(made, tmp_path / made.name)
    kill_after(CONVERT, path, delay)
    form, sizes = stored(path)
    assert (form, sizes) in (("float32", {384 * 4}), ("float16", {384 * 2}))
    with Memory(path, agent_id="a", embedder="hashing", options=F16) as memory:
        assert len(memory.search("topic 13", top_k=5, mode="semantic")) == 5
    assert stored(path) == ("float16", {384 * 2})
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 20_000
