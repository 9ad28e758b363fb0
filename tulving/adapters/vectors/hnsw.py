"""Approximate nearest neighbours with hnswlib, cached on disk beside the database.

Why it looks like this:
- The index is a *cache* of the vectors in storage. ``open`` loads ``<db>.hnsw`` only if
  its JSON sidecar (format, dimension, count, size, blake2b checksum) vouches for it;
  anything else (garbage, truncated, missing sidecar, other dimension) is discarded with a
  log line and the index starts empty, for the caller to ``rebuild`` from storage. The
  checksum is checked *before* hnswlib reads the file, because hnswlib trusts its input.
- ``persist`` writes both files to temporary names, fsyncs, then ``os.replace``s them; a
  crash between the two replaces leaves a sidecar whose checksum does not match, which
  ``open`` discards, so a torn cache is never used.
- Removal is hnswlib's ``mark_deleted``; dead elements still cost search time and memory,
  so once more than 20% of the elements are dead the index is rebuilt from its own stored
  vectors (compaction). Capacity grows by doubling with ``resize_index``.
- A float32 copy of every vector, indexed by label, is kept in RAM beside the graph:
  hnswlib's ``get_items`` costs ~34 us per item, too slow for exact scoring of allow-lists
  and for compaction. It is *not* saved: storage holds the same vectors, and at start-up
  ``reconcile_index`` already reads every stored vector to check the index, so it hands
  them over (``fill_vectors``) for free. Saving the copy as ``<db>.hnsw.vectors`` cost
  1,536 bytes per memory to save ~50 ms of a 100k open (0.34 s to load the file against
  0.39 s to read SQLite's). Until the copy is filled, a row is read from the graph with
  ``get_items`` when it is first needed, so the index is correct on its own. Caches that
  still have a vectors file (written before) are read, then rewritten without it.
- Allow-lists must never lose recall: a small allow-list (under 2,000 ids or 5% of the
  index) is scored exactly from the stored vectors with numpy, which is faster than a
  filtered graph walk and exact; a large one uses hnswlib's ``filter`` with an enlarged
  ``ef``, and falls back to exact scoring if the walk still returns fewer than k.
- One RLock serialises mutations and queries (``set_ef`` is index-wide state).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import threading
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

import hnswlib
import numpy as np

from tulving.adapters.vectors._cache_files import (
    MEMORY_LOCATIONS,
    SyncPosition,
    file_digest,
    fsync_path,
    remove_stale_temps,
)
from tulving.adapters.vectors._checks import (
    Matrix,
    check_allow,
    check_batch,
    check_dimension,
    check_query,
)
from tulving.adapters.vectors.exact import top_k
from tulving.adapters.vectors.hnsw_sealed import SealedCacheFile, pack, sealed_path, unpack
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.errors import ConfigError, EncryptionKeyError, VectorIndexError
from tulving.domain.log_masking import masked_logger
from tulving.domain.query import ScoredId
from tulving.ports.vectors import Progress

log = masked_logger(__name__)

FORMAT = "tulving-hnsw-1"
SPACE = "cosine"
COMPACT_RATIO = 0.20
SMALL_ALLOW = 2000
SMALL_ALLOW_FRACTION = 0.05
MIN_EF = 64
_CHUNK = 1024


class HnswIndex(SyncPosition):
    name = "hnsw"

    def __init__(
        self,
        location: str = "",
        *,
        M: int = 16,
        ef_construction: int = 200,
        ef_search: int = MIN_EF,
        initial_capacity: int = 1024,
        seed: int = 100,
        threads: int = -1,
        encryption: EncryptionKey | None = None,
        read_only: bool = False,
    ) -> None:
        """``encryption``: the key of an encrypted store; the cache is then one sealed file
        (:mod:`.hnsw_sealed`) and plain cache files beside the store are deleted.
        ``read_only``: load the cache, never write or delete a file (a reader beside a
        writer in another process)."""
        for label, value in (
            ("M", M),
            ("ef_construction", ef_construction),
            ("ef_search", ef_search),
            ("initial_capacity", initial_capacity),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"hnsw option {label} must be a positive integer, got {value!r}")
        self._M = M
        self._ef_construction = ef_construction
        self._ef_search = ef_search
        self._initial_capacity = initial_capacity
        self._seed = seed
        self._threads = threads
        self.read_only = bool(read_only)
        #: The vector change-log position the content reflects, the one the cache file
        #: holds, and how many changes the file lacks (``ports.vectors.SyncedVectorIndex``).
        self._synced: tuple[str, int] | None = None
        self._saved: tuple[str, int] | None = None
        self._unsaved = 0
        self._path: Path | None
        if location in MEMORY_LOCATIONS or "://" in location:
            self._path = None
        else:
            self._path = Path(str(location) + ".hnsw")
        self.sealed = encryption is not None
        self._sealed_file = (
            SealedCacheFile(sealed_path(self._path), encryption)
            if encryption is not None and self._path is not None else None)
        self._lock = threading.RLock()
        self._dimension: int | None = None
        self._index: Any = None
        self._labels: dict[str, int] = {}
        self._ids_by_label: dict[int, str] = {}
        self._next_label = 0
        self._deleted = 0
        self._vectors: Matrix = np.zeros((0, 0), dtype=np.float32)
        #: Labels whose row in ``_vectors`` is not filled yet (a cache loaded without its
        #: vectors): filled by ``fill_vectors``, or from the graph on first use.
        self._unfilled: set[int] = set()
        self._dirty = False

    @property
    def cache_path(self) -> Path | None:
        return self._path

    @property
    def vectors_path(self) -> Path | None:
        return None if self._path is None else self._path.with_name(self._path.name + ".vectors")

    @property
    def sidecar_path(self) -> Path | None:
        return None if self._path is None else self._path.with_name(self._path.name + ".json")

    # -- lifecycle ----------------------------------------------------------------------

    def _new_index(self, dimension: int, capacity: int) -> Any:
        index = hnswlib.Index(space=SPACE, dim=dimension)
        index.init_index(
            max_elements=max(capacity, 1),
            ef_construction=self._ef_construction,
            M=self._M,
            random_seed=self._seed,
        )
        index.set_ef(self._ef_search)
        index.set_num_threads(self._threads if self._threads > 0 else (os.cpu_count() or 1))
        return index

    def _reset(self, dimension: int) -> None:
        self._dimension = dimension
        self._index = self._new_index(dimension, self._initial_capacity)
        self._labels, self._ids_by_label = {}, {}
        self._next_label = self._deleted = 0
        self._vectors = np.zeros((self._initial_capacity, dimension), dtype=np.float32)
        self._unfilled = set()
        self._dirty = False
        self._synced = self._saved = None
        self._unsaved = 0

    def _ensure_rows(self, needed: int) -> None:
        rows = self._vectors.shape[0]
        if needed > rows:
            grown = np.zeros((max(needed, 2 * rows), self._vectors.shape[1]), dtype=np.float32)
            grown[:rows] = self._vectors
            self._vectors = grown

    def open(self, dimension: int) -> None:
        with self._lock:
            dimension = check_dimension(dimension)
            self._reset(dimension)
            if self._path is None:
                return
            if not self.read_only:
                self._remove_stale_temps()
            if self._sealed_file is not None:
                if not self.read_only:
                    self._remove_plain_cache()
                if not self._sealed_file.exists():
                    return
            elif not self._path.exists() and not self.sidecar_path.exists():  # type: ignore[union-attr]
                return
            try:
                if self._sealed_file is not None:
                    self._load_sealed(dimension)
                else:
                    self._load(dimension)
            except EncryptionKeyError as exc:  # another key sealed it: rebuilt under ours
                log.warning("discarding the sealed vector cache %s (%s); rebuilt from storage",
                            self._sealed_file.path if self._sealed_file else self._path, exc)
                self._reset(dimension)
                self._dirty = True
            except Exception as exc:
                log.warning(
                    "discarding the vector cache %s (%s); the index starts empty and is "
                    "rebuilt from storage",
                    self._path,
                    exc,
                )
                self._reset(dimension)
                self._dirty = True  # the next persist replaces the bad files

    def _load(self, dimension: int) -> None:
        assert self._path is not None and self.sidecar_path is not None
        if not self.sidecar_path.exists():
            raise VectorIndexError("its sidecar is missing")
        if not self._path.exists():
            raise VectorIndexError("the index file is missing")
        meta = json.loads(self.sidecar_path.read_text(encoding="utf-8"))
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise VectorIndexError(f"unknown format {meta.get('format')!r}")
        if meta.get("space") != SPACE:
            raise VectorIndexError(f"space {meta.get('space')!r} is not {SPACE!r}")
        if meta.get("dimension") != dimension:
            raise VectorIndexError(f"dimension {meta.get('dimension')} is not {dimension}")
        size = self._path.stat().st_size
        if size != meta.get("size"):
            raise VectorIndexError(f"size {size} bytes, the sidecar says {meta.get('size')}")
        if file_digest(self._path) != meta.get("checksum"):
            raise VectorIndexError("checksum mismatch")
        vectors = self._load_legacy_vectors(meta)
        index = hnswlib.Index(space=SPACE, dim=dimension)
        elements = meta.get("elements")
        if not isinstance(elements, int):
            raise VectorIndexError("malformed sidecar")
        capacity = max(int(meta.get("capacity", elements)), elements, self._initial_capacity)
        index.load_index(str(self._path), max_elements=capacity)
        self._restore(meta, vectors, index, dimension)
        if vectors is None:
            self._unfilled = set(self._labels.values())
        else:
            self._dirty = True  # the next persist drops the old vectors file

    def _load_legacy_vectors(self, meta: dict[str, Any]) -> Any:
        """The vectors file of a cache written before the copy stopped being saved (None
        for a cache without one)."""
        if "vectors_checksum" not in meta:
            return None
        vectors_path = self.vectors_path
        assert vectors_path is not None
        if not vectors_path.exists():
            raise VectorIndexError("the vectors file is missing")
        if vectors_path.stat().st_size != meta.get("vectors_size"):
            raise VectorIndexError("the vectors file has the wrong size")
        if file_digest(vectors_path) != meta.get("vectors_checksum"):
            raise VectorIndexError("vectors checksum mismatch")
        return np.load(vectors_path, allow_pickle=False)

    def _load_sealed(self, dimension: int) -> None:
        assert self._sealed_file is not None
        meta, vectors, index = unpack(self._sealed_file.read())
        if meta.get("format") != FORMAT or meta.get("space") != SPACE:
            raise VectorIndexError("unknown format")
        if meta.get("dimension") != dimension:
            raise VectorIndexError(f"dimension {meta.get('dimension')} is not {dimension}")
        elements = meta.get("elements")
        if isinstance(elements, int) and index.get_max_elements() < self._initial_capacity:
            index.resize_index(max(self._initial_capacity, elements))
        self._restore(meta, vectors, index, dimension)

    def _restore(self, meta: dict[str, Any], vectors: Any, index: Any, dimension: int) -> None:
        """Adopt a loaded graph, label map and vectors once they agree with each other."""
        labels = meta.get("labels")
        elements, next_label = meta.get("elements"), meta.get("next_label")
        if not isinstance(labels, dict) or not isinstance(elements, int):
            raise VectorIndexError("malformed sidecar")
        if not isinstance(next_label, int) or len(labels) != meta.get("count"):
            raise VectorIndexError("malformed sidecar")
        sync = meta.get("sync")
        if isinstance(sync, list) and len(sync) == 2 and isinstance(sync[1], int):
            self._synced = self._saved = (str(sync[0]), int(sync[1]))
        values = list(labels.values())
        if len(set(values)) != len(values) or any(
            not isinstance(v, int) or not 0 <= v < next_label for v in values
        ):
            raise VectorIndexError("the label map is inconsistent")
        if vectors is None:
            vectors = np.zeros((next_label, dimension), dtype=np.float32)
        if vectors.dtype != np.float32 or vectors.shape != (next_label, dimension):
            raise VectorIndexError(f"the vectors file holds {vectors.dtype} {vectors.shape}")
        if index.get_current_count() != elements or index.dim != dimension:
            raise VectorIndexError("the index file does not match its sidecar")
        index.set_ef(self._ef_search)
        index.set_num_threads(self._threads if self._threads > 0 else (os.cpu_count() or 1))
        self._index = index
        self._labels = {str(k): int(v) for k, v in labels.items()}
        self._ids_by_label = {v: k for k, v in self._labels.items()}
        self._next_label = next_label
        self._deleted = elements - len(self._labels)
        # Adopted as is (a loaded file is ours; zeros for a cache without its vectors):
        # a copy held a second 1.5 GB at a million entries for the time of the open.
        self._vectors = np.asarray(vectors, dtype=np.float32)
        if not self._vectors.flags.writeable:
            self._vectors = self._vectors.copy()
        self._ensure_rows(self._initial_capacity)

    def _remove_stale_temps(self) -> None:
        """Temp files of a persist that crashed; young ones may belong to a live writer."""
        assert self._path is not None
        remove_stale_temps(self._path)

    def _remove_plain_cache(self, *, warn: bool = True) -> None:
        for plain in (self._path, self.vectors_path, self.sidecar_path):
            if plain is not None and plain.exists():
                if warn:
                        log.warning("deleting the unencrypted vector cache file %s beside "
                                "an encrypted store", plain)
                with contextlib.suppress(OSError):
                    plain.unlink()

    def drop_cache(self) -> None:
        """Delete every cache file of this index, plain or sealed (``tulving encrypt``
        does before the switch: plain vectors must not outlive the plain store)."""
        with self._lock:
            if self._path is None:
                return
            self._remove_plain_cache(warn=False)
            sealed = sealed_path(self._path)
            with contextlib.suppress(FileNotFoundError):
                sealed.unlink()

    def reseal_cache(self, old: EncryptionKey) -> bool:
        """Seal the cache again under this index's key (``tulving rekey``); a cache the
        old key does not open is dropped (rebuilt on the next open). True if resealed."""
        with self._lock:
            if self._path is None or self._sealed_file is None:
                return False
            path = sealed_path(self._path)
            if not path.exists():
                return False
            try:
                plain = SealedCacheFile(path, old).read()
            except Exception as exc:  # any failure: it is only a cache
                log.warning("dropping the vector cache %s instead of resealing it: %s",
                            path, exc)
                self.drop_cache()
                return False
            self._sealed_file.write(plain)
            return True

    def _meta(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "space": SPACE,
            "dimension": self._dimension,
            "count": len(self._labels),
            "elements": int(self._index.get_current_count()),
            "capacity": int(self._index.get_max_elements()),
            "next_label": self._next_label,
            "M": self._M,
            "ef_construction": self._ef_construction,
            "labels": self._labels,
            "sync": None if self._synced is None else list(self._synced),
        }

    def _persist_sealed(self) -> None:
        assert self._sealed_file is not None
        if not self._dirty and self._sealed_file.exists() and self._saved == self._synced:
            return
        plain = pack(self._meta(), self._vectors[: self._next_label], self._index)
        try:
            self._sealed_file.write(plain)
        except OSError as exc:
            raise VectorIndexError(
                f"cannot write the vector cache {self._sealed_file.path}: {exc}") from exc
        self._saved_now()

    def _saved_now(self) -> None:
        self._dirty = False
        self._unsaved = 0
        self._saved = self._synced

    def unsaved_changes(self) -> int:
        with self._lock:
            return self._unsaved + int(self._dirty and not self._unsaved)

    def persist(self) -> None:
        with self._lock:
            if self._path is None or self._index is None or self.read_only:
                return
            if self._sealed_file is not None:
                self._persist_sealed()
                return
            sidecar = self.sidecar_path
            assert sidecar is not None
            if not self._dirty and self._path.exists() and sidecar.exists():
                if self._saved != self._synced:
                    self._write_sync_position(sidecar)
                return
            token = f".tmp-{os.getpid()}-{secrets.token_hex(4)}"
            tmp_index = self._path.with_name(self._path.name + token)
            tmp_meta = sidecar.with_name(sidecar.name + token)
            vectors_path = self.vectors_path
            assert vectors_path is not None
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                self._index.save_index(str(tmp_index))
                fsync_path(tmp_index)
                meta = {
                    **self._meta(),
                    "size": tmp_index.stat().st_size,
                    "checksum": file_digest(tmp_index),
                }
                with tmp_meta.open("w", encoding="utf-8") as handle:
                    json.dump(meta, handle, separators=(",", ":"))
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(tmp_index, self._path)
                os.replace(tmp_meta, sidecar)  # last: it vouches for the index
                with contextlib.suppress(OSError):
                    vectors_path.unlink()  # a vectors file of the format before
                with contextlib.suppress(OSError):
                    fsync_path(self._path.parent)
            except OSError as exc:
                for leftover in (tmp_index, tmp_meta):
                    with contextlib.suppress(OSError):
                        leftover.unlink()
                raise VectorIndexError(
                    f"cannot write the vector cache {self._path}: {exc}"
                ) from exc
            self._saved_now()

    def _write_sync_position(self, sidecar: Path) -> None:
        """A newer position for a file that holds everything already (the changes since
        did not change the index): only the sidecar is rewritten."""
        self._record_position(sidecar)

    def close(self) -> None:
        """Release memory. Does not persist: the owner decides when the cache is written."""
        with self._lock:
            self._index = None
            self._labels, self._ids_by_label = {}, {}
            self._dimension = None

    def _open_index(self) -> tuple[Any, int]:
        if self._index is None or self._dimension is None:
            raise VectorIndexError("the hnsw index is not open; call open(dimension) first")
        return self._index, self._dimension

    # -- writes -------------------------------------------------------------------------

    def add(self, ids: Sequence[str], vectors: Matrix) -> None:
        with self._lock:
            index, dimension = self._open_index()
            id_list, unit = check_batch(ids, vectors, dimension)
            if not id_list:
                return
            labels = np.empty(len(id_list), dtype=np.int64)
            fresh: list[tuple[str, int]] = []
            for row, item in enumerate(id_list):
                label = self._labels.get(item)
                if label is None:
                    label = self._next_label + len(fresh)
                    fresh.append((item, label))
                labels[row] = label
            needed = index.get_current_count() + len(fresh)
            if needed > index.get_max_elements():
                index.resize_index(max(needed, 2 * index.get_max_elements()))
            index.add_items(unit, labels)
            self._ensure_rows(self._next_label + len(fresh))
            self._vectors[labels] = unit
            if self._unfilled:
                self._unfilled.difference_update(labels.tolist())
            for item, label in fresh:
                self._labels[item] = label
                self._ids_by_label[label] = item
            self._next_label += len(fresh)
            self._dirty = True
            self._unsaved += len(id_list)

    def remove(self, ids: Iterable[str]) -> None:
        with self._lock:
            index, _ = self._open_index()
            for item in check_allow(ids) or ():
                label = self._labels.pop(item, None)
                if label is None:
                    continue
                del self._ids_by_label[label]
                self._unfilled.discard(label)
                index.mark_deleted(label)
                self._deleted += 1
                self._dirty = True
                self._unsaved += 1
            if self._deleted > COMPACT_RATIO * index.get_current_count():
                self._compact()

    def _compact(self) -> None:
        """Rebuild from the index's own vectors, dropping the dead elements."""
        _, dimension = self._open_index()
        live = list(self._labels.items())
        self._fill_from_graph([label for _, label in live])
        fresh = self._new_index(dimension, max(self._initial_capacity, 2 * len(live)))
        labels: dict[str, int] = {}
        for start in range(0, len(live), _CHUNK * 8):
            chunk = live[start : start + _CHUNK * 8]
            old = [label for _, label in chunk]
            new = np.arange(start, start + len(chunk), dtype=np.int64)
            fresh.add_items(self._vectors[old], new)
            labels.update((item, int(n)) for (item, _), n in zip(chunk, new, strict=True))
        kept = np.zeros((max(self._initial_capacity, 2 * len(live)), dimension), dtype=np.float32)
        kept[: len(live)] = self._vectors[[label for _, label in live]]
        self._vectors = kept
        self._index = fresh
        self._labels = labels
        self._ids_by_label = {v: k for k, v in labels.items()}
        self._next_label, self._deleted = len(labels), 0
        self._dirty = True

    def rebuild(
        self, items: Iterable[tuple[str, Matrix]], total: int, progress: Progress | None = None
    ) -> None:
        with self._lock:
            _, dimension = self._open_index()
            previous = (
                self._index,
                self._labels,
                self._ids_by_label,
                self._next_label,
                self._deleted,
                self._vectors,
            )
            self._index = self._new_index(dimension, max(int(total), self._initial_capacity))
            self._vectors = np.zeros(
                (max(int(total), self._initial_capacity), dimension), np.float32
            )
            self._labels, self._ids_by_label = {}, {}
            self._next_label = self._deleted = 0
            unfilled, self._unfilled = self._unfilled, set()
            try:
                done = 0
                batch_ids: list[str] = []
                batch_rows: list[Matrix] = []
                for item, vector in items:
                    batch_ids.append(item)
                    batch_rows.append(np.asarray(vector, dtype=np.float32).reshape(-1))
                    if len(batch_ids) >= _CHUNK:
                        self.add(batch_ids, np.stack(batch_rows))
                        done += len(batch_ids)
                        batch_ids, batch_rows = [], []
                        if progress is not None:
                            progress(done, max(int(total), done))
                if batch_ids:
                    self.add(batch_ids, np.stack(batch_rows))
                    done += len(batch_ids)
            except BaseException:
                (
                    self._index,
                    self._labels,
                    self._ids_by_label,
                    self._next_label,
                    self._deleted,
                    self._vectors,
                ) = previous
                self._unfilled = unfilled
                raise
            self._dirty = True
            if progress is not None:
                progress(done, max(int(total), done))

    # -- reads --------------------------------------------------------------------------

    def query(self, vector: Matrix, k: int, allow: Collection[str] | None = None) -> list[ScoredId]:
        with self._lock:
            _, dimension = self._open_index()
            unit, k = check_query(vector, k, dimension)
            allowed = check_allow(allow)
            live = len(self._labels)
            if k == 0 or live == 0:
                return []
            if allowed is None:
                return self._search(unit, min(k, live), None) or self._exact(
                    unit, k, list(self._labels.values())
                )
            labels = [self._labels[i] for i in allowed if i in self._labels]
            if not labels:
                return []
            if (
                len(labels) <= k
                or len(labels) < SMALL_ALLOW
                or len(labels) < SMALL_ALLOW_FRACTION * live
            ):
                return self._exact(unit, k, labels)
            label_set = set(labels)
            return self._search(unit, k, label_set.__contains__) or self._exact(unit, k, labels)

    def _search(self, unit: Matrix, k: int, accept: Any) -> list[ScoredId]:
        """Graph search; ``[]`` if it cannot find exactly k (the caller falls back)."""
        index = self._index
        # Twice k for small k; a long list (a fusion pool) only needs its head to be exact,
        # and search cost grows with ef: k + 32 keeps the head and halves the work.
        ef = max(self._ef_search, k + min(k, 32), MIN_EF)
        ceiling = max(ef, len(self._labels))
        while True:
            index.set_ef(ef)
            try:
                found, distances = index.knn_query(unit, k=k, num_threads=1, filter=accept)
            except RuntimeError:  # hnswlib: fewer than k reachable
                found = None
            if found is not None and found.shape[1] == k:
                return [
                    ScoredId(self._ids_by_label[int(label)], 1.0 - float(distance))
                    for label, distance in zip(found[0], distances[0], strict=True)
                ]
            if ef >= ceiling:
                return []
            ef = min(ef * 4, ceiling)

    def _exact(self, unit: Matrix, k: int, labels: list[int]) -> list[ScoredId]:
        self._fill_from_graph(labels)
        stored = self._vectors[labels]
        scores = stored @ unit
        best = top_k(scores, k)
        return [ScoredId(self._ids_by_label[labels[p]], float(scores[p])) for p in best]

    def _fill_from_graph(self, labels: Sequence[int]) -> None:
        """Rows not filled yet, read from the graph (hnswlib keeps each vector, unit
        length, as it was added)."""
        if not self._unfilled:
            return
        missing = [label for label in labels if label in self._unfilled]
        if missing:
            rows = self._index.get_items(missing, return_type="numpy")
            self._vectors[missing] = np.asarray(rows, dtype=np.float32)
            self._unfilled.difference_update(missing)

    def fill_vectors(self, ids: Sequence[str], vectors: Matrix) -> int:
        """Hand over stored vectors (row i of ``vectors`` for ``ids[i]``) for the rows a
        loaded cache left unfilled; start-up reconciliation reads them anyway. Returns how
        many rows were filled. An id the index does not hold, or whose row is filled, is
        skipped: reconciliation rebuilds the index when ids differ."""
        with self._lock:
            if not self._unfilled or len(ids) == 0:
                return 0
            matrix = np.asarray(vectors, dtype=np.float32)
            if matrix.ndim != 2 or matrix.shape != (len(ids), self._vectors.shape[1]):
                return 0
            get, unfilled = self._labels.get, self._unfilled
            picked = [(row, label) for row, label in enumerate(map(get, ids))
                      if label is not None and label in unfilled]
            if not picked:
                return 0
            rows = np.fromiter((r for r, _ in picked), dtype=np.int64, count=len(picked))
            labels = np.fromiter((lb for _, lb in picked), dtype=np.int64, count=len(picked))
            chosen = matrix[rows]
            norms = np.linalg.norm(chosen, axis=1)
            keep = norms > 0
            self._vectors[labels[keep]] = chosen[keep] / norms[keep, None]
            unfilled.difference_update(labels[keep].tolist())
            return int(keep.sum())

    @property
    def needs_vectors(self) -> bool:
        """True while rows are unfilled: ``fill_vectors`` is worth calling."""
        return bool(self._unfilled)

    def count(self) -> int:
        with self._lock:
            return len(self._labels)

    def ids(self) -> set[str]:
        with self._lock:
            return set(self._labels)


def create(context: Any = None, **options: Any) -> HnswIndex:
    location = "" if context is None else str(getattr(context, "location", "") or "")
    location = options.pop("location", location)
    encryption = None if context is None else getattr(context, "encryption", None)
    read_only = bool(getattr(context, "read_only", False)) if context is not None else False
    return HnswIndex(location, encryption=encryption,
                     read_only=options.pop("read_only", read_only), **options)
