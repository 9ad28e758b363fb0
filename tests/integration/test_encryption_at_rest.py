"""Encryption at rest of the embedded store: SQLCipher for the database, a sealed hnsw cache.

Real SQLCipher, real hnswlib, real files: the marker test greps every byte written beside
the store (database, WAL, SHM, lock, caches, temporary files) while the store is open and
after it is closed; the same test on a plain store finds the marker, so the grep can fail.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from tulving import Memory
from tulving.application.governance.encryption import parse_encryption
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.errors import (
    ConfigError,
    EncryptionError,
    EncryptionKeyError,
    SecurityError,
    TulvingError,
)

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sqlcipher3") is None or importlib.util.find_spec("hnswlib") is None,
    reason="the encryption and hnsw extras are needed",
)

MARKER = "zqxmarker7731"
PASSPHRASE = "correct horse battery staple, twice over"


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("TEST_TULVING_KEY", PASSPHRASE)
    monkeypatch.setenv("OTHER_TULVING_KEY", "a different passphrase entirely")
    return "env:TEST_TULVING_KEY"


def fill(memory: Memory, marker: str = MARKER) -> None:
    memory.store(f"The {marker} release ships on Friday", type="FACT",
                 key=f"release/{marker}", tags=[marker, "release"],
                 metadata={"note": marker, "owner": "ops"})
    memory.store(f"The {marker} release moved to Monday", type="DECISION",
                 key=f"release/{marker}", tags=[marker])  # supersedes: history kept
    for i in range(40):
        memory.store(f"background fact number {i} about deployments", type="OBSERVATION")
    assert memory.search(marker)
    memory.curate(f"when does {marker} ship", token_budget=400)


def files_beside(directory: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


def holders(directory: Path, marker: str = MARKER) -> list[str]:
    needles = (marker.encode(), marker.encode("utf-16-le"), marker.upper().encode())
    return sorted(name for name, data in files_beside(directory).items()
                  if any(n in data for n in needles))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def open_memory(path: Path, encryption: Any = None, **kw: Any) -> Memory:
    return Memory(path, agent_id="a", embedder="hashing", encryption=encryption, **kw)


# -- the marker test ---------------------------------------------------------------------

def test_no_file_beside_an_encrypted_store_holds_the_marker(tmp_path: Path, key_env: str) -> None:
    plain_dir, secret_dir = tmp_path / "plain", tmp_path / "secret"
    plain_dir.mkdir()
    secret_dir.mkdir()
    with open_memory(plain_dir / "m.db") as plain:
        fill(plain)
        plain.flush()
        assert holders(plain_dir), "the grep must find the marker in a plain store"
    memory = open_memory(secret_dir / "m.db", key_env, options={"storage": {
        "fulltext_mirror_from": 0}})
    with memory:
        fill(memory)
        memory.flush()
        names = {Path(n).name for n in files_beside(secret_dir)}
        assert "m.db-wal" in names  # the WAL is there while open, and is encrypted too
        assert "m.db.hnsw.sealed" in names and "m.db.hnsw" not in names
        assert holders(secret_dir) == []
        assert memory.get(f"release/{MARKER}").content.endswith("Monday")
    assert holders(secret_dir) == []
    assert not (secret_dir / "m.db").read_bytes().startswith(b"SQLite format 3")
    with open_memory(secret_dir / "m.db", key_env) as again:  # and it all comes back
        [hit, *_] = again.search(f"{MARKER} release")
        assert MARKER in hit.entry.content
        assert len(again.history(f"release/{MARKER}")) == 2
        assert again.verify_audit()["problems"] == []


def test_the_sealed_cache_is_reused_and_a_changed_byte_rebuilds_it(
        tmp_path: Path, key_env: str, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "m.db"
    with open_memory(path, key_env) as memory:
        fill(memory)
    sealed = Path(str(path) + ".hnsw.sealed")
    written = sealed.read_bytes()
    with open_memory(path, key_env) as memory:
        assert memory.ctx.vectors.count() == 41  # the superseded entry left the index
        # the top of the list: the tail of an approximate index rebuilt in another
        # insertion order may order near-ties differently
        first = [r.entry.id for r in memory.search("deployments", mode="semantic")][:5]
    assert "discarding" not in caplog.text
    assert sealed.read_bytes() == written  # loaded as it was: not rebuilt, not rewritten
    data = bytearray(sealed.read_bytes())
    data[len(data) // 2] ^= 0x01
    sealed.write_bytes(bytes(data))
    with open_memory(path, key_env) as memory:
        assert "discarding the sealed vector cache" in caplog.text
        assert [r.entry.id for r in memory.search("deployments", mode="semantic")][:5] == first
    assert sealed.read_bytes() != bytes(data)  # written again, whole


def test_plain_cache_files_beside_an_encrypted_store_are_deleted(
        tmp_path: Path, key_env: str) -> None:
    path = tmp_path / "m.db"
    with open_memory(path, key_env) as memory:
        fill(memory)
    leaked = Path(str(path) + ".hnsw.vectors")
    leaked.write_bytes(b"plain vectors")
    with open_memory(path, key_env) as memory:
        assert memory.search(MARKER)
    assert not leaked.exists()


def test_the_fulltext_mirror_attaches_the_encrypted_file(tmp_path: Path, key_env: str) -> None:
    with open_memory(tmp_path / "m.db", key_env,
                     options={"storage": {"fulltext_mirror_from": 0}}) as memory:
        fill(memory)
        storage = memory.ctx.storage
        assert storage.fulltext_mirror_ready(timeout=30)
        assert memory.search(MARKER, mode="lexical")


# -- wrong, missing and misplaced keys ---------------------------------------------------

@pytest.fixture
def encrypted_store(tmp_path: Path, key_env: str) -> Path:
    path = tmp_path / "m.db"
    with open_memory(path, key_env) as memory:
        fill(memory)
    return path


def _unchanged(path: Path, before: dict[str, str]) -> None:
    after = {p.name: digest(p) for p in path.parent.iterdir() if p.name != "m.db.lock"}
    assert after == before


def _state(path: Path) -> dict[str, str]:
    return {p.name: digest(p) for p in path.parent.iterdir() if p.name != "m.db.lock"}


def test_a_wrong_key_is_a_typed_error_and_changes_no_byte(encrypted_store: Path) -> None:
    before = _state(encrypted_store)
    with pytest.raises(EncryptionKeyError, match="does not open"):
        open_memory(encrypted_store, "env:OTHER_TULVING_KEY").startup()
    _unchanged(encrypted_store, before)
    with open_memory(encrypted_store, "env:TEST_TULVING_KEY") as memory:  # still whole
        assert memory.search(MARKER)


def test_no_key_for_an_encrypted_store_is_a_typed_error(encrypted_store: Path) -> None:
    before = _state(encrypted_store)
    with pytest.raises(EncryptionKeyError, match="is encrypted"):
        open_memory(encrypted_store).startup()
    _unchanged(encrypted_store, before)


def test_a_key_for_a_plain_store_is_refused_and_changes_nothing(tmp_path: Path,
                                                                key_env: str) -> None:
    path = tmp_path / "m.db"
    with open_memory(path) as memory:
        fill(memory)
    before = _state(path)
    with pytest.raises(EncryptionError, match="not encrypted"):
        open_memory(path, key_env).startup()
    _unchanged(path, before)


def test_a_missing_key_source_fails_before_anything_opens(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TULVING_ENCRYPTION_KEY", raising=False)
    with pytest.raises(EncryptionKeyError, match="TULVING_ENCRYPTION_KEY"):
        open_memory(tmp_path / "m.db", True)
    with pytest.raises(EncryptionKeyError, match="does not exist"):
        open_memory(tmp_path / "m.db", f"file:{tmp_path / 'nokey'}")
    monkeypatch.setenv("SHORT_KEY", "tooshort")
    with pytest.raises(EncryptionKeyError, match="shorter"):
        open_memory(tmp_path / "m.db", "env:SHORT_KEY")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("inline", [
    "my inline passphrase of some length", {"key": "my inline passphrase"},
    {"passphrase": "x" * 20}, b"raw key bytes of some length",
])
def test_an_inline_key_is_refused(tmp_path: Path, inline: Any) -> None:
    with pytest.raises(SecurityError, match="inline"):
        open_memory(tmp_path / "m.db", inline)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("bad", [{"key_env": ""}, {"key_env": "A", "key_file": "B"}, {}, 42,
                                 {"key_file": 3}])
def test_a_malformed_encryption_setting_is_a_config_error(bad: Any) -> None:
    with pytest.raises(ConfigError):
        parse_encryption(bad)


def test_a_key_file_and_an_explicit_key_object_open_the_same_store(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(PASSPHRASE + "\n")
    path = tmp_path / "m.db"
    with open_memory(path, {"key_file": str(key_file)}) as memory:
        fill(memory)
    key = EncryptionKey(PASSPHRASE.encode(), source="a vault")
    assert PASSPHRASE not in repr(key)
    with open_memory(path, key) as memory:
        assert memory.search(MARKER)


@pytest.mark.parametrize("storage", ["memory"])
def test_encryption_is_refused_for_a_store_that_cannot_encrypt(tmp_path: Path, key_env: str,
                                                               storage: str) -> None:
    with pytest.raises(EncryptionError, match="does not encrypt"):
        Memory(tmp_path / "m.db", agent_id="a", embedder="hashing", storage=storage,
               encryption=key_env).startup()
    assert not (tmp_path / "m.db").exists()


def test_a_caller_built_plain_storage_is_refused_before_it_creates_a_file(
        tmp_path: Path, key_env: str) -> None:
    from tulving.adapters.storage.sqlite import SQLiteStorage

    with pytest.raises(EncryptionError):
        Memory(tmp_path / "m.db", agent_id="a", embedder="hashing",
               storage=SQLiteStorage(str(tmp_path / "m.db")), encryption=key_env).startup()
    assert not (tmp_path / "m.db").exists()


def test_encryption_errors_are_tulving_errors() -> None:
    assert issubclass(EncryptionKeyError, EncryptionError)
    assert issubclass(EncryptionError, SecurityError)
    assert issubclass(EncryptionError, TulvingError)


def test_the_key_survives_in_no_file(tmp_path: Path, key_env: str) -> None:
    with open_memory(tmp_path / "m.db", key_env) as memory:
        fill(memory)
    assert holders(tmp_path, PASSPHRASE) == []
    assert holders(tmp_path, "TEST_TULVING_KEY") == []
