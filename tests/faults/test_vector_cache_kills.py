"""The usearch cache (issue 35): a process killed with SIGKILL while it builds the graph,
saves it or opens it must leave a store that opens, with an index that matches the
stored vectors; a cache damaged behind Tulving's back is discarded, never handed to
usearch (which trusts its input); and the writer's cache file lacking recent writes is
caught up from storage's vector change log, by any later opener."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from tests.faults.sweep import kill_after
from tulving import Memory

pytest.importorskip("usearch")

ENTRIES = 12_000


def opened(path: Path, **kw: object) -> Memory:
    return Memory(path, agent_id="a", embedder="hashing", vectors="usearch", **kw)  # type: ignore[arg-type]


def filled(path: Path) -> None:
    """A store with no usearch cache yet (written with the exact index)."""
    with Memory(path, agent_id="a", embedder="hashing", vectors="exact") as memory:
        for start in range(0, ENTRIES, 3000):
            memory.store_many({"content": f"note {i} about topic {i % 97}", "type": "OBSERVATION"}
                              for i in range(start, start + 3000))


def healthy(path: Path) -> None:
    with opened(path) as memory:
        assert len(memory.search("topic 13", top_k=5, mode="semantic")) == 5
        index = memory.maintenance("inspect")["index"]
        assert index["healthy"], index
        assert index["count"] == ENTRIES


BUILD = """
import sys
from tulving import Memory
Memory(sys.argv[1], agent_id="a", embedder="hashing", vectors="usearch").startup().close()
"""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "m.db"
    filled(path)
    return path


def copy_of(template: Path, target: Path) -> Path:
    with sqlite3.connect(template) as source, sqlite3.connect(target) as dest:
        source.backup(dest)
    return target


@pytest.mark.parametrize("delay", [0.4, 1.5, 3.0, 6.0])
def test_a_kill_while_the_graph_is_built_or_saved(template: Path, tmp_path: Path,
                                                  delay: float) -> None:
    path = copy_of(template, tmp_path / "m.db")
    kill_after(BUILD, path, delay)
    healthy(path)


def test_a_kill_while_a_saved_cache_is_opened(template: Path, tmp_path: Path) -> None:
    path = copy_of(template, tmp_path / "m.db")
    with opened(path) as memory:
        memory.flush()
    for delay in (0.2, 0.5, 0.9):
        kill_after(BUILD, path, delay)
        healthy(path)


def test_a_damaged_cache_is_discarded_and_rebuilt(template: Path, tmp_path: Path) -> None:
    path = copy_of(template, tmp_path / "m.db")
    with opened(path) as memory:
        memory.flush()
    graph = Path(str(path) + ".usearch")
    size = graph.stat().st_size
    with graph.open("r+b") as handle:  # same size, garbage in the middle of the graph
        handle.seek(size // 2)
        handle.write(os.urandom(4096))
    healthy(path)
    ids = Path(str(path) + ".usearch.ids.npy")
    ids.write_bytes(b"not an array")
    healthy(path)


def test_writes_the_cache_lacks_are_caught_up_by_the_next_opener(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with opened(path) as memory:
        memory.store_many({"content": f"note {i} about topic {i % 7}", "type": "OBSERVATION"}
                          for i in range(200))
        memory.flush()
    saved = Path(str(path) + ".usearch").stat().st_mtime_ns
    with opened(path) as memory:  # a few writes: the cache file is left as it was
        zebra = memory.store("zebras crossing the river at dawn", type="FACT")
        memory.forget(memory.search("topic 3", top_k=1, mode="lexical")[0].entry.id)
    assert Path(str(path) + ".usearch").stat().st_mtime_ns == saved
    for read_only in (True, False):
        with opened(path, read_only=read_only) as memory:
            hits = memory.search("zebras crossing the river", top_k=1, mode="semantic")
            assert hits[0].entry.id == zebra.id
            assert memory.ctx.vectors is not None and memory.ctx.vectors.count() == 200


BOTH = """
import sys
from tulving import Memory
with Memory(sys.argv[1], agent_id="a", embedder="hashing", vectors="usearch") as first:
    first.store("usearch is loaded in this process now", type="FACT")
with Memory(sys.argv[1] + "-local.db", agent_id="a", vectors="usearch") as second:
    second.store("and the local model runs after it", type="FACT")
    print(second.search("local model", top_k=1)[0].entry.content)
"""


@pytest.mark.model
def test_the_local_model_runs_in_a_process_that_loaded_usearch_first(tmp_path: Path) -> None:
    """usearch loads NumKong into the global symbol scope; onnxruntime then crashed
    (SIGSEGV) creating its first session. The adapter loads onnxruntime first."""
    pytest.importorskip("onnxruntime")
    import subprocess
    import sys

    from tests.faults.sweep import ROOT, env

    proc = subprocess.run([sys.executable, "-c", BOTH, str(tmp_path / "m.db")], cwd=ROOT,
                          env=env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "local model runs" in proc.stdout
