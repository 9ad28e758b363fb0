"""A bundle is read only as the writer produced it (issue 34, finding 5): bytes before,
between or after the members, a comment, another member order or compression are
refused, and every single-byte change of a small bundle either raises ``BundleError`` or
imports exactly the original entries (it used to import a bundle with bytes appended or
prepended, and 3 of 150 flips raised a bare ``zlib.error``)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tulving import BundleError, Memory
from tulving.application.portability.bundle_format import ENTRIES, MANIFEST, VECTORS
from tulving.application.portability.entry_codec import entry_to_record
from tulving.domain.query import EntryFilter


def _entries(m: Memory) -> list[dict[str, Any]]:
    flt = EntryFilter(partitions=m.ctx.visible_partitions(), include_archived=True)
    return sorted((entry_to_record(e) for e in m.ctx.storage.query(flt)), key=lambda r: r["id"])


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("strict") / "small.tulving"
    with Memory(":memory:", agent_id="a", embedder="hashing") as m:
        m.store("deploys go out on Tuesdays", type="DECISION", key="deploy/day", tags=["ops"])
        m.store("the staging database is db-stage-2", type="FACT", metadata={"n": 1})
        m.export(path)
    return path.read_bytes()


def _import(data: bytes) -> list[dict[str, Any]]:
    with Memory(":memory:", agent_id="a", embedder="hashing") as m:
        m.import_bundle(io.BytesIO(data))
        return _entries(m)


@pytest.fixture(scope="module")
def original(small: bytes) -> list[dict[str, Any]]:
    imported = _import(small)
    assert len(imported) == 2
    return imported


def _rezip(data: bytes, order: tuple[str, ...], methods: dict[str, int] | None = None,
           comment: bytes = b"", extra_member: bool = False) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for name in order:
            target.writestr(name, source.read(name),
                            compress_type=(methods or {}).get(
                                name, zipfile.ZIP_STORED if name == VECTORS
                                else zipfile.ZIP_DEFLATED))
        if extra_member:
            target.writestr("notes.txt", b"hello")
        target.comment = comment
    return out.getvalue()


CHANGES = {
    "one byte appended": lambda d: d + b"\x00",
    "1,000 bytes appended": lambda d: d + b"A" * 1000,
    "4 bytes prepended": lambda d: b"\x00\x00\x00\x00" + d,
    "a zip prepended": lambda d: d + d,
    "a comment": lambda d: _rezip(d, (ENTRIES, VECTORS, MANIFEST), comment=b"hi"),
    "members reordered": lambda d: _rezip(d, (MANIFEST, ENTRIES, VECTORS)),
    "entries stored, not deflated": lambda d: _rezip(d, (ENTRIES, VECTORS, MANIFEST),
                                                     {ENTRIES: zipfile.ZIP_STORED}),
    "vectors deflated": lambda d: _rezip(d, (ENTRIES, VECTORS, MANIFEST),
                                         {VECTORS: zipfile.ZIP_DEFLATED}),
}


def test_the_rezip_helper_itself_makes_an_importable_bundle(
        small: bytes, original: list[dict[str, Any]]) -> None:
    assert _import(_rezip(small, (ENTRIES, VECTORS, MANIFEST))) == original


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_bundle_not_as_written_is_refused(small: bytes, change: str) -> None:
    with Memory(":memory:", agent_id="a", embedder="hashing") as m:
        with pytest.raises(BundleError):
            m.import_bundle(io.BytesIO(CHANGES[change](small)))
        assert _entries(m) == []


@pytest.mark.parametrize("mask", [0x01, 0x80, 0xFF])
def test_every_single_byte_flip_is_refused_or_harmless(
        small: bytes, original: list[dict[str, Any]], mask: int) -> None:
    """Every byte of the bundle, one at a time: BundleError, or the very same entries (a
    flip in a field nothing reads, such as a member's modification time)."""
    outcomes = {"refused": 0, "identical": 0}
    for position in range(len(small)):
        flipped = bytearray(small)
        flipped[position] ^= mask
        try:
            imported = _import(bytes(flipped))
        except BundleError:
            outcomes["refused"] += 1
            continue
        assert imported == original, f"byte {position} ^ {mask:#x} imported other entries"
        outcomes["identical"] += 1
    assert outcomes["refused"] > 0.9 * len(small), outcomes


def test_an_encrypted_bundle_with_bytes_after_its_zip_is_refused(
        small: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("cryptography")
    from tulving.application.portability.bundle_crypto import EncryptingWriter
    from tulving.domain.encryption_key import EncryptionKey

    key = EncryptionKey(b"a bundle passphrase, long enough")
    for plain, refused in ((small, False), (small + b"tail", True)):
        sealed = io.BytesIO()
        writer = EncryptingWriter(sealed, key)
        writer.write(plain)
        writer.close()
        with Memory(":memory:", agent_id="a", embedder="hashing") as m:
            if refused:
                with pytest.raises(BundleError):
                    m.import_bundle(io.BytesIO(sealed.getvalue()), encryption=key)
            else:
                m.import_bundle(io.BytesIO(sealed.getvalue()), encryption=key)
                assert len(_entries(m)) == 2
