"""What the vector indexes that keep a cache file beside the store share: the file's
checksum, a durable rename, the clean-up of a crashed writer's temp files, and the sync
position against storage's vector change log (``ports.vectors.SyncedVectorIndex``)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any

from tulving.adapters._durable_files import fsync_path as fsync_path
from tulving.domain.log_masking import masked_logger

log = masked_logger(__name__)

#: Locations that mean "no file": the index lives in this process only.
MEMORY_LOCATIONS = frozenset({"", ":memory:"})
#: A temp file younger than this may belong to a live writer in another process.
STALE_TEMP_SECONDS = 600


def file_digest(path: Path) -> str:
    """The checksum recorded beside a cache file: a torn or foreign file never loads."""
    digest = hashlib.blake2b(digest_size=16)
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def remove_stale_temps(path: Path) -> None:
    """Temp files of a persist that crashed (``<name>*.tmp-*``); young ones are left."""
    cutoff = time.time() - STALE_TEMP_SECONDS
    with contextlib.suppress(OSError):
        for leftover in path.parent.glob(path.name + "*.tmp-*"):
            with contextlib.suppress(OSError):
                if leftover.stat().st_mtime < cutoff:
                    leftover.unlink()


def write_json_atomically(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as ``path`` through a flushed temp file and a rename: a reader sees
    the old file or the new one, never half of one (raises OSError or ValueError)."""
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}-{secrets.token_hex(4)}")
    with tmp.open("w", encoding="utf-8") as handle:
        json.dump(data, handle, separators=(",", ":"))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


class SyncPosition:
    """Where an index stands in storage's vector change log: ``_synced`` is what it holds
    now, ``_saved`` what its cache file holds (both ``(epoch, position)`` or None)."""

    _lock: threading.RLock
    _synced: tuple[str, int] | None
    _saved: tuple[str, int] | None

    def sync_position(self) -> tuple[str, int] | None:
        with self._lock:
            return self._synced

    def mark_synced(self, epoch: str, position: int) -> None:
        with self._lock:
            self._synced = (str(epoch), int(position))

    def saved_position(self) -> tuple[str, int] | None:
        with self._lock:
            return self._saved

    def _record_position(self, sidecar: Path) -> None:
        """A newer position for a cache file that holds everything already (the changes
        since changed nothing in the index): only its JSON sidecar is rewritten. A failure
        is logged: the next open catches up from the older position."""
        try:
            meta = json.loads(sidecar.read_text(encoding="utf-8"))
            meta["sync"] = None if self._synced is None else list(self._synced)
            write_json_atomically(sidecar, meta)
        except (OSError, ValueError) as exc:
            log.warning("could not record the vector cache's position: %s", exc)
            return
        self._saved = self._synced
