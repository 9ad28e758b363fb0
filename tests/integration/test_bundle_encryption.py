"""Encrypted bundles: the whole zip (manifest, entries, embeddings) under AES-256-GCM in
authenticated chunks. A wrong or missing key, and every kind of tampering, is refused
with a typed error before anything is written."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from tulving import Memory
from tulving.application.portability import bundle_crypto
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.errors import BundleError, EncryptionError, EncryptionKeyError

pytestmark = pytest.mark.skipif(importlib.util.find_spec("cryptography") is None,
                                reason="the encryption extra is missing")

MARKER = "bundlemarker4412"


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLE_KEY", "the bundle passphrase, long enough")
    monkeypatch.setenv("OTHER_KEY", "another passphrase, also long enough")


def memory(path: Path, agent: str = "a") -> Memory:
    return Memory(path, agent_id=agent, embedder="hashing", vectors="exact")


def ids(m: Memory) -> list[str]:
    from tulving.domain.query import EntryFilter

    return sorted(e.id for e in m.ctx.storage.query(EntryFilter(None, include_archived=True)))


@pytest.fixture
def source(tmp_path: Path) -> Memory:
    m = memory(tmp_path / "source.db", agent="exporter-agent")
    m.store(f"{MARKER} decision text", type="DECISION", key=f"k/{MARKER}", tags=[MARKER],
            metadata={"m": MARKER})
    m.store(f"{MARKER} decision text, revised", type="DECISION", key=f"k/{MARKER}")
    m.store_many([{"content": f"note {i} on a long subject {MARKER}", "type": "FACT"}
                  for i in range(1500)])  # > one chunk of ciphertext with the vectors
    yield m
    m.close()


@pytest.fixture
def bundle(source: Memory, tmp_path: Path) -> Path:
    path = tmp_path / "export.tulving"
    report = source.export(path, encryption="env:BUNDLE_KEY")
    assert report.entries == 1502 and report.vectors == 1502
    assert path.stat().st_size > 3 * bundle_crypto.CHUNK
    return path


def test_an_encrypted_bundle_round_trips_and_shows_only_its_format(
        bundle: Path, source: Memory, tmp_path: Path) -> None:
    data = bundle.read_bytes()
    for secret in (MARKER, "exporter-agent", "manifest.json", "entries.jsonl", "hashing",
                   "entry_count", "PK\x03\x04"):
        assert secret.encode() not in data, secret
    header_size = int.from_bytes(data[len(bundle_crypto.MAGIC):len(bundle_crypto.MAGIC) + 4],
                                 "big")
    start = len(bundle_crypto.MAGIC) + 4
    header = json.loads(data[start:start + header_size])
    assert header["format"] == "tulving-bundle-encrypted" and header["version"] == 1
    assert set(header) == {"format", "version", "cipher", "kdf", "salt", "seed", "chunk",
                           "key_check"}
    with memory(tmp_path / "target.db", agent="exporter-agent") as target:
        report = target.import_bundle(bundle, encryption="env:BUNDLE_KEY")
        assert report.counts()["added"] == 1502 and report.counts()["reembedded"] == 0
        assert ids(target) == ids(source)
        assert len(target.history(f"k/{MARKER}")) == 2
        again = target.import_bundle(bundle, encryption="env:BUNDLE_KEY")
        assert again.counts()["added"] == 0  # idempotent, as a plain bundle


def test_a_file_object_export_and_import(source: Memory, tmp_path: Path) -> None:
    import io

    buffer = io.BytesIO()
    source.export(buffer, encryption="env:BUNDLE_KEY", tags=[MARKER])
    buffer.seek(0)
    with memory(tmp_path / "t.db", agent="exporter-agent") as target:
        # both versions of the key carry the tag: a supersede keeps the tags it does not name
        assert target.import_bundle(buffer, encryption="env:BUNDLE_KEY").counts()["added"] == 2


def _refused(bundle: Path, tmp_path: Path, error: type[Exception], match: str,
             **kwargs: Any) -> None:
    with memory(tmp_path / "target.db", agent="exporter-agent") as target:
        before = ids(target)
        with pytest.raises(error, match=match):
            target.import_bundle(bundle, **kwargs)
        assert ids(target) == before == []


def test_a_wrong_or_missing_key_is_a_typed_error(bundle: Path, tmp_path: Path) -> None:
    _refused(bundle, tmp_path, EncryptionKeyError, "wrong key", encryption="env:OTHER_KEY")
    _refused(bundle, tmp_path, EncryptionKeyError, "is encrypted")
    with pytest.raises(EncryptionKeyError):
        memory(tmp_path / "x.db").import_bundle(bundle, encryption="env:UNSET_VARIABLE_X")


def test_a_plain_bundle_is_refused_when_a_key_is_given(source: Memory, tmp_path: Path) -> None:
    plain = tmp_path / "plain.tulving"
    source.export(plain)
    _refused(plain, tmp_path, EncryptionError, "not encrypted", encryption="env:BUNDLE_KEY")


def _write(tmp_path: Path, data: bytes | bytearray) -> Path:
    path = tmp_path / "tampered.tulving"
    path.write_bytes(bytes(data))
    return path


def _body_start(data: bytes) -> int:
    size = int.from_bytes(data[len(bundle_crypto.MAGIC):len(bundle_crypto.MAGIC) + 4], "big")
    return len(bundle_crypto.MAGIC) + 4 + size


@pytest.mark.parametrize("where", ["first chunk", "middle chunk", "last chunk", "a tag"])
def test_a_flipped_ciphertext_byte_is_refused(bundle: Path, tmp_path: Path, where: str) -> None:
    data = bytearray(bundle.read_bytes())
    start, step = _body_start(bytes(data)), bundle_crypto.CHUNK + bundle_crypto.TAG
    at = {"first chunk": start + 10, "middle chunk": start + step + 1000,
          "last chunk": len(data) - 40, "a tag": start + step - 3}[where]
    data[at] ^= 0x20
    _refused(_write(tmp_path, data), tmp_path, BundleError, "altered or truncated",
             encryption="env:BUNDLE_KEY")


def test_cut_reordered_or_extended_ciphertext_is_refused(bundle: Path, tmp_path: Path) -> None:
    data = bundle.read_bytes()
    start, step = _body_start(data), bundle_crypto.CHUNK + bundle_crypto.TAG
    chunks = [data[i:i + step] for i in range(start, len(data), step)]
    head = data[:start]
    cases = {
        "last chunk dropped": head + b"".join(chunks[:-1]),
        "cut mid-chunk": data[:len(data) - 100],
        "chunks swapped": head + chunks[1] + chunks[0] + b"".join(chunks[2:]),
        "bytes appended": data + b"\x00" * 64,
        "a chunk repeated": head + chunks[0] + b"".join(chunks),
    }
    for changed in cases.values():
        _refused(_write(tmp_path, changed), tmp_path, BundleError, "altered or truncated|truncated",
                 encryption="env:BUNDLE_KEY")


def test_a_changed_header_is_refused(bundle: Path, tmp_path: Path) -> None:
    data = bundle.read_bytes()
    start = _body_start(data)
    text = data[len(bundle_crypto.MAGIC) + 4:start].decode()
    header = json.loads(text)
    for field, value in (("version", 2), ("chunk", 1024), ("salt", "00" * 16),
                         ("seed", "11" * 16),
                         ("format", "other"), ("cipher", "AES-128-GCM")):
        changed = json.dumps({**header, field: value}, sort_keys=True,
                             separators=(",", ":")).encode()
        forged = bundle_crypto.MAGIC + len(changed).to_bytes(4, "big") + changed + data[start:]
        with memory(tmp_path / "target.db", agent="exporter-agent") as target:
            with pytest.raises((BundleError, EncryptionKeyError)):
                target.import_bundle(_write(tmp_path, forged), encryption="env:BUNDLE_KEY")
            assert ids(target) == []


def test_the_cli_exports_and_imports_an_encrypted_bundle(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from tulving.interfaces.cli.main import main

    monkeypatch.chdir(tmp_path)
    common = ["--path", "s.db", "--embedder", "hashing", "--vectors", "exact"]
    assert main([*common, "store", f"{MARKER} via the CLI", "--type", "FACT"]) == 0
    assert main([*common, "export", "b.tulving", "--bundle-key", "env:BUNDLE_KEY"]) == 0
    assert MARKER.encode() not in (tmp_path / "b.tulving").read_bytes()
    other = ["--path", "t.db", "--embedder", "hashing", "--vectors", "exact"]
    assert main([*other, "import", "b.tulving"]) == 5  # no key: refused
    assert main([*other, "import", "b.tulving", "--bundle-key", "env:OTHER_KEY"]) == 5
    assert main([*other, "import", "b.tulving", "--bundle-key", "env:BUNDLE_KEY"]) == 0
    assert main([*other, "import", "b.tulving", "--bundle-key", "literal-inline-key-1234"]) == 5


def test_an_inline_bundle_key_is_refused(source: Memory, tmp_path: Path) -> None:
    from tulving.domain.errors import SecurityError

    with pytest.raises(SecurityError, match="inline"):
        source.export(tmp_path / "x.tulving", encryption="an inline key of some length")
    assert not (tmp_path / "x.tulving").exists()
    assert EncryptionKey(b"k" * 16).source  # a key object from code is accepted
