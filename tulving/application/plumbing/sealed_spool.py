"""Scratch space for bundles that never leaves readable text on disk.

A bundle being written (entries and vectors before they are zipped), an export streamed
to an HTTP client and an uploaded bundle waiting to be imported are held in memory up to a
size, then in an unnamed temporary file. Beside an encrypted store, a temporary file in
clear would undo the encryption at rest ("a protection covers every file it implies",
DESIGN.md), so what spills to disk is encrypted with AES-CTR under a key made for this
spool alone and kept only in memory: when the process ends, the bytes on disk are noise.
CTR, not an authenticated mode, because the spool needs random access (zipfile seeks) and
the bytes are checked anyway by the bundle's own digests when they are read back.

Without the ``cryptography`` package (a core install, which cannot open an encrypted store
either) the spool is Python's own ``SpooledTemporaryFile``.
"""

from __future__ import annotations

import io
import os
import tempfile
from typing import IO, Any, cast


def sealed_spool(max_size: int) -> IO[bytes]:
    """A read/write/seek binary file: in memory up to ``max_size`` bytes, then sealed."""
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    except ImportError:  # a core install: nothing encrypted to protect
        return tempfile.SpooledTemporaryFile(max_size=max_size)
    return cast(IO[bytes], _Spool(max_size, (Cipher, algorithms, modes)))


class _SealedFile(io.RawIOBase):
    """An unnamed temporary file whose bytes are AES-CTR encrypted at their offsets."""

    def __init__(self, crypto: tuple[Any, Any, Any]) -> None:
        self._cipher, self._algorithms, self._modes = crypto
        self._key = os.urandom(32)
        self._base = int.from_bytes(os.urandom(16), "big")
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()

    def _xor(self, data: bytes, offset: int) -> bytes:
        block, skip = divmod(offset, 16)
        counter = ((self._base + block) % (1 << 128)).to_bytes(16, "big")
        stream = self._cipher(self._algorithms.AES(self._key),
                              self._modes.CTR(counter)).encryptor()
        stream.update(bytes(skip))
        return bytes(stream.update(data))

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def readinto(self, buffer: Any) -> int:
        at = self._file.tell()
        data = self._file.read(len(buffer))
        plain = self._xor(data, at)
        buffer[: len(plain)] = plain
        return len(plain)

    def write(self, data: Any) -> int:
        raw = bytes(data)
        self._file.write(self._xor(raw, self._file.tell()))
        return len(raw)

    def truncate(self, size: int | None = None) -> int:
        return self._file.truncate(size)

    def close(self) -> None:
        if self.closed:
            return
        try:
            super().close()
        finally:
            self._file.close()
            self._key = b""


class _Spool(io.BufferedIOBase):
    """``BytesIO`` until ``max_size``, then the same bytes in a ``_SealedFile``."""

    def __init__(self, max_size: int, crypto: tuple[Any, Any, Any]) -> None:
        self._max = max_size
        self._crypto = crypto
        self._now: Any = io.BytesIO()
        self._rolled = False

    def _roll(self) -> None:
        sealed = io.BufferedRandom(_SealedFile(self._crypto), buffer_size=1 << 20)
        at = self._now.tell()
        sealed.write(self._now.getvalue())
        sealed.seek(at)
        self._now.close()
        self._now, self._rolled = sealed, True

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if not self._rolled and self._now.tell() + len(data) > self._max:
            self._roll()
        return int(self._now.write(data))

    def read(self, size: int | None = -1) -> bytes:
        return bytes(self._now.read(-1 if size is None else size))

    def read1(self, size: int = -1) -> bytes:
        return self.read(size)

    def readinto(self, buffer: Any) -> int:
        return int(self._now.readinto(buffer))

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return int(self._now.seek(offset, whence))

    def tell(self) -> int:
        return int(self._now.tell())

    def truncate(self, size: int | None = None) -> int:
        return int(self._now.truncate(size))

    def flush(self) -> None:
        self._now.flush()

    def close(self) -> None:
        if self.closed:
            return
        try:
            super().close()  # flushes through self.flush() first
        finally:
            self._now.close()
