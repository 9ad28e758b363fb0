"""The server's side of sync: an append-only log of deltas per tenant, as files.

A device pushes a delta (a bundle of what changed on it, or that bundle encrypted end to
end, which the server cannot read) and pulls the deltas other devices pushed after its
watermark, the log's sequence number. The log does not interpret a delta: with end-to-end
encryption it holds opaque bytes only.

Why files: a delta is written once and read whole; one file per delta, written to a
temporary name, fsynced and renamed, is crash-safe without a schema. The name carries the
sequence number, the pushing device and the delta's id (the sha256 of its bytes), so a
push retried after a dropped connection finds its delta already there and gets the same
sequence number back instead of a duplicate. Sequence numbers are assigned under a lock
per tenant (a thread lock and an ``flock`` on the tenant folder, so several server
processes over one folder agree).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path

import attrs

_NAME = re.compile(r"^(\d{12})\.([0-9a-f]{1,64})\.([0-9a-f]{64})\.delta$")
_DEVICE = re.compile(r"^[0-9a-f]{1,64}$")


@attrs.frozen
class Delta:
    seq: int
    device: str
    delta_id: str
    size: int


class DeltaLog:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _folder(self, tenant: str) -> Path:
        # the tenant names a folder by its hash: no user text in file names
        return self.root / hashlib.sha256(tenant.encode()).hexdigest()[:32]

    @contextlib.contextmanager
    def _locked(self, tenant: str) -> Iterator[Path]:
        folder = self._folder(tenant)
        folder.mkdir(parents=True, exist_ok=True)
        with self._guard:
            lock = self._locks.setdefault(tenant, threading.Lock())
        with lock, open(folder / ".lock", "a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield folder
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _entries(self, folder: Path) -> list[Delta]:
        found = []
        if folder.is_dir():
            for path in folder.iterdir():
                match = _NAME.match(path.name)
                if match:
                    found.append(Delta(int(match[1]), match[2], match[3], path.stat().st_size))
        return sorted(found, key=lambda d: d.seq)

    def append(self, tenant: str, device: str, data: bytes) -> tuple[Delta, bool]:
        """(the delta, whether it was new); the same bytes from the same device twice
        are one delta."""
        if not _DEVICE.match(device):
            raise ValueError("device must be 1-64 lowercase hex characters")
        delta_id = hashlib.sha256(data).hexdigest()
        with self._locked(tenant) as folder:
            existing = self._entries(folder)
            for delta in existing:
                if delta.device == device and delta.delta_id == delta_id:
                    return delta, False
            seq = (existing[-1].seq if existing else 0) + 1
            name = f"{seq:012d}.{device}.{delta_id}.delta"
            tmp = folder / f".{name}.tmp-{secrets.token_hex(4)}"
            with open(tmp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, folder / name)
            fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            return Delta(seq, device, delta_id, len(data)), True

    def after(self, tenant: str, seq: int, limit: int) -> list[Delta]:
        return [d for d in self._entries(self._folder(tenant)) if d.seq > seq][:limit]

    def last(self, tenant: str) -> int:
        """The highest sequence number of the tenant's log (0 when empty)."""
        found = self._entries(self._folder(tenant))
        return found[-1].seq if found else 0

    def mark(self, tenant: str, name: str) -> int:
        """A named watermark kept beside the tenant's deltas (0 when unset)."""
        path = self._folder(tenant) / f".{name}"
        try:
            return int(path.read_text(encoding="ascii").strip() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def set_mark(self, tenant: str, name: str, seq: int) -> None:
        folder = self._folder(tenant)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{name}.tmp-{secrets.token_hex(4)}"
        tmp.write_text(str(int(seq)), encoding="ascii")
        os.replace(tmp, folder / f".{name}")

    def read(self, tenant: str, seq: int) -> bytes | None:
        folder = self._folder(tenant)
        for delta in self._entries(folder):
            if delta.seq == seq:
                return (folder / f"{seq:012d}.{delta.device}.{delta.delta_id}.delta").read_bytes()
        return None
