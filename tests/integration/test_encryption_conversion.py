"""``tulving encrypt`` / ``rekey`` / ``decrypt`` underneath: converting a store in place.

The crash tests run the conversion in a child process and kill it with SIGKILL at spread
out moments of its run; afterwards exactly one key (the old or the new) opens the store,
and it holds everything. Running the conversion again finishes the job.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tulving import LockError, Memory
from tulving.adapters.storage.sqlite import SQLiteStorage
from tulving.application.bootstrap import change_encryption
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.errors import ConfigError, EncryptionError, EncryptionKeyError
from tulving.domain.query import EntryFilter

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sqlcipher3") is None or importlib.util.find_spec("hnswlib") is None,
    reason="the encryption and hnsw extras are needed",
)

OLD = EncryptionKey(b"the old passphrase, long enough", source="test old")
NEW = EncryptionKey(b"the new passphrase, long enough", source="test new")
MARKER = "qqconvertmarker"
ROOT = Path(__file__).resolve().parents[2]


def make_store(path: Path, key: EncryptionKey | None, n: int = 60) -> list[str]:
    with Memory(path, agent_id="a", embedder="hashing", encryption=key) as memory:
        memory.store(f"{MARKER} first", type="FACT", key="k/one", tags=[MARKER])
        memory.store(f"{MARKER} second", type="FACT", key="k/one", metadata={"m": MARKER})
        memory.store_many([{"content": f"note {i} about {MARKER} things", "type": "FACT"}
                           for i in range(n)])
        return sorted(e.id for e in memory.ctx.storage.query(EntryFilter(None, include_archived=True)))


def entry_ids(path: Path, key: EncryptionKey | None) -> list[str] | None:
    """The ids in the store if ``key`` opens it, else None (read straight from storage)."""
    storage = SQLiteStorage(str(path), encryption=key, lock=False)
    try:
        storage.open()
    except (EncryptionError, EncryptionKeyError):
        return None
    try:
        return sorted(e.id for e in storage.query(EntryFilter(None, include_archived=True)))
    finally:
        storage.close()


def test_encrypt_then_rekey_then_decrypt_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    ids = make_store(path, None)
    with Memory(path, agent_id="a", embedder="hashing", vectors="hnsw"):
        pass  # an hnsw cache beside the usearch one (the default's): both must go
    plain_caches = [Path(str(path) + suffix) for suffix in (
        ".usearch", ".usearch.json", ".usearch.ids.npy", ".usearch.order.npy", ".hnsw",
        ".hnsw.json")]
    assert all(p.exists() for p in plain_caches)
    result = change_encryption(str(path), None, NEW)
    assert result.encrypted_after and result.entries == len(ids)
    assert not any(p.exists() for p in plain_caches)  # the plain caches went first
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("m.db.conv")] == []
    assert not any(MARKER.encode() in p.read_bytes() for p in tmp_path.iterdir())
    assert entry_ids(path, None) is None and entry_ids(path, NEW) == ids
    with Memory(path, agent_id="a", embedder="hashing", encryption=NEW) as memory:
        assert len(memory.history("k/one")) == 2
        assert memory.verify_audit()["problems"] == []
    sealed = Path(str(path) + ".hnsw.sealed")
    assert sealed.exists()

    change_encryption(str(path), NEW, OLD)  # rekey
    assert entry_ids(path, NEW) is None and entry_ids(path, OLD) == ids
    resealed = sealed.read_bytes()
    with Memory(path, agent_id="a", embedder="hashing", encryption=OLD) as memory:
        assert memory.search(MARKER)
    assert sealed.read_bytes() == resealed  # opened under the new key, not rebuilt

    change_encryption(str(path), OLD, None)  # decrypt
    assert path.read_bytes().startswith(b"SQLite format 3")
    assert not sealed.exists()
    assert entry_ids(path, None) == ids


def test_a_wrong_old_key_converts_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    make_store(path, OLD)
    before = path.read_bytes()
    with pytest.raises(EncryptionKeyError):
        change_encryption(str(path), NEW, OLD)
    with pytest.raises(EncryptionKeyError, match="is encrypted"):
        change_encryption(str(path), None, NEW)  # "encrypt" an encrypted store
    with pytest.raises(ConfigError, match="same"):
        change_encryption(str(path), OLD, EncryptionKey(OLD.secret))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "m.db", "m.db.hnsw.sealed", "m.db.lock"]


def test_a_plain_store_given_an_old_key_converts_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    make_store(path, None)
    before = path.read_bytes()
    with pytest.raises(EncryptionError, match="not encrypted"):
        change_encryption(str(path), OLD, NEW)
    assert path.read_bytes() == before


def test_an_open_store_is_not_converted(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    make_store(path, None)
    with Memory(path, agent_id="a", embedder="hashing") as memory:
        memory.store("held open", type="FACT")
        with pytest.raises(LockError):
            change_encryption(str(path), None, NEW)
    assert entry_ids(path, None) is not None


def test_no_store_no_conversion(tmp_path: Path) -> None:
    from tulving.domain.errors import StorageError

    with pytest.raises(StorageError, match="no store"):
        change_encryption(str(tmp_path / "absent.db"), None, NEW)


# -- kill -9 in the middle ---------------------------------------------------------------

_CHILD = """
import sys
from tulving.application.bootstrap import change_encryption
from tulving.domain.encryption_key import EncryptionKey
old = EncryptionKey(sys.argv[2].encode()) if sys.argv[2] else None
new = EncryptionKey(sys.argv[3].encode()) if sys.argv[3] else None
print("go", flush=True)
change_encryption(sys.argv[1], old, new)
print("done", flush=True)
"""


def _run_child(path: Path, old: EncryptionKey | None, new: EncryptionKey | None,
               kill_after: float | None) -> tuple[bool, float]:
    """(finished, seconds from 'go' to the end) of a conversion killed after ``kill_after``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-c", _CHILD, str(path),
            old.secret.decode() if old else "", new.secret.decode() if new else ""]
    child = subprocess.Popen(args, stdout=subprocess.PIPE, env=env, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "go"
    started = time.monotonic()
    if kill_after is not None:
        time.sleep(kill_after)
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
    child.wait(timeout=120)
    elapsed = time.monotonic() - started
    finished = child.returncode == 0
    child.stdout.close()
    return finished, elapsed


@pytest.mark.parametrize("old,new", [(None, NEW), (OLD, NEW)], ids=["encrypt", "rekey"])
def test_a_conversion_killed_at_any_moment_leaves_one_whole_store(
        tmp_path: Path, old: EncryptionKey | None, new: EncryptionKey) -> None:
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    ids = make_store(pristine / "m.db", old, n=4000)
    work = tmp_path / "work"

    def reset() -> Path:
        if work.exists():
            shutil.rmtree(work)
        shutil.copytree(pristine, work)
        return work / "m.db"

    finished, duration = _run_child(reset(), old, new, None)
    assert finished and entry_ids(work / "m.db", new) == ids
    outcomes = []
    for step in range(10):  # from the start to well past the measured end (load varies)
        path = reset()
        finished, _ = _run_child(path, old, new, duration * 1.6 * step / 9)
        opened = {"old": entry_ids(path, old), "new": entry_ids(path, new)}
        whole = [name for name, found in opened.items() if found is not None]
        assert len(whole) == 1, (step, opened)  # exactly one key opens it ...
        assert opened[whole[0]] == ids  # ... and it holds everything
        if new is not None and old is None and whole == ["old"]:
            # an unfinished encryption left no plain copy of the data beyond the old store
            leftovers = [p for p in path.parent.iterdir() if ".converting" in p.name]
            assert all(MARKER.encode() not in p.read_bytes() for p in leftovers)
        outcomes.append(whole[0])
        if whole == ["old"]:  # run again: it finishes
            assert _run_child(path, old, new, None)[0]
            assert entry_ids(path, new) == ids
            assert [p for p in path.parent.iterdir() if ".converting" in p.name] == []
    assert "old" in outcomes and "new" in outcomes, outcomes  # kills landed on both sides
