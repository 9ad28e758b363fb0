"""The scratch space of bundles: what spills to disk is never readable text."""

from __future__ import annotations

import io
import os
import random
import zipfile

from tulving.application.plumbing.sealed_spool import sealed_spool

MARKER = b"spoolmarker-7731 "


def _disk_bytes(spool: object) -> bytes:
    raw = spool._now.raw  # type: ignore[attr-defined]  # the _SealedFile under the buffer
    spool.flush()  # type: ignore[attr-defined]
    handle = raw._file
    at = handle.tell()
    handle.seek(0)
    data = handle.read()
    handle.seek(at)
    return bytes(data)


def test_small_contents_stay_in_memory_and_read_back() -> None:
    spool = sealed_spool(1024)
    spool.write(MARKER * 10)
    spool.seek(0)
    assert spool.read() == MARKER * 10
    assert isinstance(spool._now, io.BytesIO)  # type: ignore[attr-defined]


def test_spilled_contents_are_sealed_on_disk_and_read_back_at_any_offset() -> None:
    spool = sealed_spool(100)
    payload = MARKER * 5000 + os.urandom(3000)
    for start in range(0, len(payload), 777):  # writes that cross the roll-over point
        spool.write(payload[start:start + 777])
    on_disk = _disk_bytes(spool)
    assert len(on_disk) == len(payload) and MARKER not in on_disk
    rng = random.Random(7)
    for _ in range(200):
        at = rng.randrange(len(payload))
        n = rng.randrange(1, 5000)
        spool.seek(at)
        assert spool.read(n) == payload[at:at + n]
    spool.seek(10)
    spool.write(b"X" * 20)  # an overwrite in the middle
    spool.seek(0)
    assert spool.read(40) == (payload[:10] + b"X" * 20 + payload[30:40])
    spool.close()


def test_a_zip_written_to_a_spilled_spool_reads_back_with_zipfile() -> None:
    spool = sealed_spool(64)
    with zipfile.ZipFile(spool, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("entries.jsonl", MARKER * 2000)
        archive.writestr("plain.bin", os.urandom(50_000))
    assert MARKER not in _disk_bytes(spool)
    spool.seek(0)
    with zipfile.ZipFile(spool) as archive:
        assert archive.read("entries.jsonl") == MARKER * 2000
        assert archive.testzip() is None
