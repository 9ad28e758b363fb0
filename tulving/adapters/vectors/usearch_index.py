"""Approximate nearest neighbours with usearch, memory-mapped from a file beside the database.

Why it looks like this:
- **Open costs nothing.** The saved graph is not loaded: ``Index.restore(path, view=True)``
  memory-maps it, and the id of each label is read from a memory-mapped ``.npy`` array. A
  fresh process (a CLI command, an MCP server starting) answers its first query after
  touching only the pages that query walks: at a million memories the open is
  milliseconds and the resident memory a few hundred pages, where hnswlib must read and
  checksum its whole graph (1.7 GB) and hold it in RAM.
- **Quantized, rescored from storage.** By default each vector is kept as int8 in the
  graph (usearch scales the unit vector into [-127, 127]): 384 bytes instead of 1,536, so
  the graph is about a third of hnswlib's and the vector has one float copy at rest, the
  one storage keeps (float16 by default). The graph only navigates: given the storage's
  ``vectors_for`` (``AdapterContext.storage``), a query takes ``k + min(k, 32)``
  candidates from it and scores them exactly from the stored vectors, as allow-lists are
  scored. Measured on 30k MiniLM vectors (recall@10 against exact cosine, ef 64): int8
  alone 0.786, int8 rescored 0.809, float16 0.803, hnswlib (float32) 0.812; at ef 128
  0.861, 0.903, 0.906. Without a vector source (an index on its own) scores are cosine
  within the quantization (about 0.005). ``dtype="f16"`` or ``"f32"`` keeps more
  precision in the graph for more bytes.
- **A view cannot change**, so changes made after the file was saved live beside it: ids
  removed or replaced are *tombstones* filtered out of the graph's answers, and new
  vectors sit in a small exact index in RAM (scored by numpy, merged by score). When that
  overlay passes ``overlay_max`` vectors, the graph is copied into RAM (``Index.copy``)
  and the overlay folded in; ``persist`` then saves it. The application decides when a
  save is worth it (``unsaved_changes``): a one-shot command that stored one memory does
  not rewrite a gigabyte file; storage's vector change log carries the difference.
- **The files vouch for each other through the sidecar** (format, dimension, dtype,
  counts, the change-log position the content reflects, and each file's size, inode and
  modification time as written, with a blake2b checksum). ``persist`` writes temporary
  files, fsyncs and renames them, the sidecar last, so a crash leaves the previous cache
  whole. ``open`` trusts a file whose size, inode and modification time are as recorded
  (nothing has written it since), checks the checksum of one that was touched or copied,
  and discards anything that disagrees (the caller rebuilds from storage): usearch
  trusts its input, so a damaged graph must never reach it.
- **Read-only** (``read_only=True``): the same, never writing a file; a reader in another
  process catches up from storage's change log into the overlay. Without a usable file
  a read-only index holds every vector exactly in RAM (nothing may be written, and
  building a graph would take minutes), which is correct and slower.
- One RLock serialises mutations and queries.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# onnxruntime (the local embedder) crashes creating its first session in a process that
# imported usearch before it (usearch loads NumKong's extension into the global symbol
# scope): measured here with usearch 2.26.6 and onnxruntime 1.32, either way round of the
# Memory's adapters. Loading onnxruntime first, when it is installed, avoids it (~0.13 s,
# paid once, and only where the local model could run in this process anyway).
if importlib.util.find_spec("onnxruntime") is not None:
    import onnxruntime  # noqa: F401

from usearch.index import Index

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
from tulving.adapters.vectors.exact import ExactIndex, top_k
from tulving.domain.errors import ConfigError, VectorIndexError
from tulving.domain.log_masking import masked_logger
from tulving.domain.query import ScoredId
from tulving.ports.vectors import Progress

log = masked_logger(__name__)

# 2: graphs built by a parallel add may hold nodes no query reaches (see
# ``_reinsert_unreachable``); a cache of format 1 is discarded once and rebuilt from storage.
FORMAT = "tulving-usearch-2"
DTYPES = ("i8", "f16", "f32")
#: Vectors kept in the exact overlay beside a memory-mapped graph before the graph is
#: loaded into RAM to take them (numpy scores 4,096 x 384 floats in well under 1 ms).
OVERLAY_MAX = 4096
MIN_EF = 64
_CHUNK = 4096
# Top hits a vector's own query looks at for it (identical vectors tie at the top).
_SELF_CHECK = 4
# A parallel batch is inserted again where its own queries miss at most this share of it
# (or this many): orphans are about 1 in 1,000, a graph that cannot navigate its data misses
# about 1 in 10.
_REPAIR_SHARE = 0.02
_REPAIR_FLOOR = 8


def _identity(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "ino": st.st_ino, "mtime_ns": st.st_mtime_ns}


class UsearchIndex(SyncPosition):
    name = "usearch"
    #: The cache is never encrypted (a memory-mapped file cannot be): an encrypted store
    #: refuses this index (``tulving.ports.vectors.CachedIndex``).
    sealed = False

    def __init__(
        self,
        location: str = "",
        *,
        dtype: str = "i8",
        connectivity: int = 16,
        expansion_add: int = 128,
        expansion_search: int = MIN_EF,
        threads: int = -1,
        overlay_max: int = OVERLAY_MAX,
        read_only: bool = False,
        vector_source: Callable[[Sequence[str]], Mapping[str, Any]] | None = None,
    ) -> None:
        """``vector_source``: the full-precision vectors of ids (storage's ``vectors_for``);
        candidates and allow-lists are scored from it (see the module docstring)."""
        if dtype not in DTYPES:
            raise ConfigError(f"usearch option dtype must be one of {', '.join(DTYPES)}, "
                              f"got {dtype!r}")
        for label, value in (("connectivity", connectivity), ("expansion_add", expansion_add),
                             ("expansion_search", expansion_search),
                             ("overlay_max", overlay_max)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"usearch option {label} must be a positive integer, "
                                  f"got {value!r}")
        self._dtype = dtype
        self._connectivity = connectivity
        self._expansion_add = expansion_add
        self._ef = expansion_search
        self._threads = threads if threads > 0 else (os.cpu_count() or 1)
        self._overlay_max = overlay_max
        self.read_only = bool(read_only)
        self._source = vector_source
        self._path: Path | None = (
            None if location in MEMORY_LOCATIONS or "://" in location
            else Path(str(location) + ".usearch"))
        self._lock = threading.RLock()
        self._dimension: int | None = None
        self._clear_state()

    def _clear_state(self) -> None:
        # a memory-mapped saved graph (view) and what changed since it was saved
        self._view: Any = None
        self._view_ids: Any = None  # label -> id (bytes), memory-mapped
        self._view_order: Any = None  # labels in id order, memory-mapped
        self._sorted: Any = None  # the view's ids in id order (built when first needed)
        self._view_live = 0
        self._tombs: set[str] = set()
        self._overlay: ExactIndex | None = None
        # a graph in RAM (a new index, or the view loaded to take the overlay)
        self._graph: Any = None
        self._labels: dict[str, int] = {}
        self._ids_by_label: dict[int, str] = {}
        self._next_label = 0
        # an exact index standing in for the graph (read-only, no usable file)
        self._exact: ExactIndex | None = None
        self._unsaved = 0
        self._synced: tuple[str, int] | None = None
        self._saved: tuple[str, int] | None = None

    # -- files ---------------------------------------------------------------------------
    @property
    def cache_path(self) -> Path | None:
        return self._path

    def _file(self, suffix: str) -> Path:
        assert self._path is not None
        return self._path.with_name(self._path.name + suffix)

    @property
    def sidecar_path(self) -> Path | None:
        return None if self._path is None else self._file(".json")

    def _files(self) -> dict[str, Path]:
        return {"graph": self._file(""), "ids": self._file(".ids.npy"),
                "order": self._file(".order.npy")}

    # -- lifecycle -----------------------------------------------------------------------
    def _new_graph(self, dimension: int) -> Any:
        return Index(ndim=dimension, metric="cos", dtype=self._dtype,
                     connectivity=self._connectivity, expansion_add=self._expansion_add,
                     expansion_search=self._ef)

    def open(self, dimension: int) -> None:
        with self._lock:
            dimension = check_dimension(dimension)
            self._dimension = dimension
            self._clear_state()
            if self._path is None:
                self._start_empty(dimension)
                return
            if not self.read_only:
                self._remove_stale_temps()
            sidecar = self._file(".json")
            if not sidecar.exists():
                self._start_empty(dimension)
                return
            try:
                self._load(dimension, json.loads(sidecar.read_text(encoding="utf-8")))
            except Exception as exc:
                log.warning("discarding the vector cache %s (%s); the index starts empty and "
                            "is rebuilt from storage", self._path, exc)
                self._clear_state()
                self._start_empty(dimension)
                self._unsaved = 1  # the next persist replaces the bad files

    def _start_empty(self, dimension: int) -> None:
        if self.read_only:
            self._exact = ExactIndex()
            self._exact.open(dimension)
        else:
            self._graph = self._new_graph(dimension)

    def _load(self, dimension: int, meta: Any) -> None:
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise VectorIndexError(f"unknown format {meta.get('format')!r}")
        if meta.get("dimension") != dimension:
            raise VectorIndexError(f"dimension {meta.get('dimension')} is not {dimension}")
        if meta.get("dtype") != self._dtype:
            raise VectorIndexError(f"dtype {meta.get('dtype')} is not {self._dtype}")
        files, recorded = self._files(), meta.get("files")
        if not isinstance(recorded, dict) or set(recorded) != set(files):
            raise VectorIndexError("malformed sidecar")
        for key, path in files.items():
            want = recorded[key]
            if not path.exists():
                raise VectorIndexError(f"{path.name} is missing")
            now = _identity(path)
            if now["size"] != want.get("size"):
                raise VectorIndexError(f"{path.name} has {now['size']} bytes, "
                                       f"the sidecar says {want.get('size')}")
            if (now["ino"], now["mtime_ns"]) != (want.get("ino"), want.get("mtime_ns")) \
                    and file_digest(path) != want.get("checksum"):
                raise VectorIndexError(f"{path.name}: checksum mismatch")
        count, labels = meta.get("count"), meta.get("labels")
        if not isinstance(count, int) or not isinstance(labels, int) or not 0 <= count <= labels:
            raise VectorIndexError("malformed sidecar")
        ids = np.load(files["ids"], mmap_mode="r", allow_pickle=False)
        order = np.load(files["order"], mmap_mode="r", allow_pickle=False)
        if ids.shape != (labels,) or order.shape != (count,) or ids.dtype.kind != "S":
            raise VectorIndexError("the id arrays do not match the sidecar")
        header = Index.metadata(str(files["graph"]))
        if header is None or int(header.get("dimensions", -1)) != dimension or int(
                header.get("count_present", -1)) != count:
            raise VectorIndexError("the graph does not match the sidecar")
        view = Index.restore(str(files["graph"]), view=True)
        if view is None or len(view) != count:
            raise VectorIndexError("the graph could not be opened")
        view.expansion_search = self._ef
        self._view, self._view_ids, self._view_order = view, ids, order
        self._view_live = count
        self._overlay = ExactIndex()
        self._overlay.open(dimension)
        sync = meta.get("sync")
        if isinstance(sync, list) and len(sync) == 2 and isinstance(sync[1], int):
            self._synced = self._saved = (str(sync[0]), int(sync[1]))

    def _remove_stale_temps(self) -> None:
        assert self._path is not None
        remove_stale_temps(self._path)

    def close(self) -> None:
        """Release memory. Does not persist: the owner decides when the cache is written."""
        with self._lock:
            self._clear_state()
            self._dimension = None

    def drop_cache(self) -> None:
        """Delete the cache files (the next open starts empty and is rebuilt)."""
        with self._lock:
            if self._path is None or self.read_only:
                return
            for path in (*self._files().values(), self._file(".json")):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    def unsaved_changes(self) -> int:
        """Changes since the cache file was written (0 when it holds everything)."""
        with self._lock:
            return self._unsaved

    # -- persistence ---------------------------------------------------------------------
    def persist(self) -> None:
        with self._lock:
            if self._path is None or self.read_only or self._dimension is None:
                return
            if not self._unsaved and self._file(".json").exists():
                if self._saved != self._synced and self._synced is not None:
                    self._write_sidecar_only()
                return
            if self._view is not None:
                self._load_view()
            assert self._graph is not None
            self._save()

    def _id_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        width = max((len(i.encode()) for i in self._labels), default=1)
        ids = np.zeros(self._next_label, dtype=f"S{max(width, 1)}")
        for item, label in self._labels.items():
            ids[label] = item.encode()
        live = np.fromiter(self._labels.values(), dtype=np.int64, count=len(self._labels))
        order = live[np.argsort(ids[live], kind="stable")] if len(live) else live
        return ids, order

    def _save(self) -> None:
        assert self._path is not None and self._graph is not None
        token = f".tmp-{os.getpid()}-{secrets.token_hex(4)}"
        files = self._files()
        temps = {key: path.with_name(path.name + token) for key, path in files.items()}
        sidecar = self._file(".json")
        tmp_sidecar = sidecar.with_name(sidecar.name + token)
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            ids, order = self._id_arrays()
            self._graph.save(str(temps["graph"]))
            with temps["ids"].open("wb") as handle:
                np.save(handle, ids, allow_pickle=False)
            with temps["order"].open("wb") as handle:
                np.save(handle, order, allow_pickle=False)
            recorded: dict[str, Any] = {}
            for key, tmp in temps.items():
                fsync_path(tmp)
                recorded[key] = {"checksum": file_digest(tmp)}
            for key, tmp in temps.items():
                os.replace(tmp, files[key])
                recorded[key].update(_identity(files[key]))
            meta = self._meta(recorded, len(self._labels), self._next_label, self._synced)
            with tmp_sidecar.open("w", encoding="utf-8") as handle:
                json.dump(meta, handle, separators=(",", ":"))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp_sidecar, sidecar)  # last: it vouches for the others
            with contextlib.suppress(OSError):
                fsync_path(self._path.parent)
        except OSError as exc:
            for leftover in (*temps.values(), tmp_sidecar):
                with contextlib.suppress(OSError):
                    leftover.unlink()
            raise VectorIndexError(f"cannot write the vector cache {self._path}: {exc}") from exc
        self._unsaved = 0
        self._saved = self._synced

    def _meta(self, files: dict[str, Any], count: int, labels: int,
              sync: tuple[str, int] | None) -> dict[str, Any]:
        return {"format": FORMAT, "dimension": self._dimension, "dtype": self._dtype,
                "metric": "cos", "connectivity": self._connectivity, "count": count,
                "labels": labels, "files": files,
                "sync": None if sync is None else [sync[0], sync[1]]}

    def _write_sidecar_only(self) -> None:
        """Record a newer sync position for files that already hold everything (the
        changes since were no-ops for the index)."""
        self._record_position(self._file(".json"))

    # -- from a view to a graph in RAM ---------------------------------------------------
    def _view_id(self, label: int) -> str:
        return bytes(self._view_ids[label]).decode()

    def _load_view(self) -> None:
        """Copy the memory-mapped graph into RAM and fold the overlay into it."""
        view, overlay = self._view, self._overlay
        assert view is not None and overlay is not None
        graph = view.copy()
        labels: dict[str, int] = {}
        for label in np.asarray(self._view_order, dtype=np.int64):
            labels[self._view_id(int(label))] = int(label)
        dead = [labels.pop(item) for item in self._tombs if item in labels]
        if dead:
            graph.remove(np.asarray(dead, dtype=np.uint64))
        self._graph, self._labels = graph, labels
        self._ids_by_label = {v: k for k, v in labels.items()}
        self._next_label = int(self._view_ids.shape[0])
        pending = overlay.items()
        self._view = self._view_ids = self._view_order = self._sorted = None
        self._overlay, self._tombs, self._view_live = None, set(), 0
        if pending[0]:
            self._graph_add(pending[0], pending[1])

    # -- writes --------------------------------------------------------------------------
    def _open_dimension(self) -> int:
        if self._dimension is None:
            raise VectorIndexError("the usearch index is not open; call open(dimension) first")
        return self._dimension

    def add(self, ids: Sequence[str], vectors: Matrix) -> None:
        with self._lock:
            dimension = self._open_dimension()
            id_list, unit = check_batch(ids, vectors, dimension)
            if not id_list:
                return
            self._unsaved += len(id_list)
            if self._exact is not None:
                self._exact.add(id_list, unit)
            elif self._view is not None:
                assert self._overlay is not None
                for item in id_list:
                    if item not in self._tombs and self._in_view(item):
                        self._tombs.add(item)
                        self._view_live -= 1
                self._overlay.add(id_list, unit)
                if self._overlay.count() > self._overlay_max and not self.read_only:
                    self._load_view()
            else:
                self._graph_add(id_list, unit)

    def _graph_add(self, id_list: Sequence[str], unit: Matrix) -> None:
        stale = [self._labels.pop(i) for i in id_list if i in self._labels]
        if stale:
            self._graph.remove(np.asarray(stale, dtype=np.uint64))
            for label in stale:
                self._ids_by_label.pop(label, None)
        labels = np.arange(self._next_label, self._next_label + len(id_list), dtype=np.uint64)
        for start in range(0, len(id_list), _CHUNK * 16):
            part, rows = labels[start:start + _CHUNK * 16], unit[start:start + _CHUNK * 16]
            self._graph.add(part, rows, threads=self._threads)
            if self._threads > 1 and len(part) > 1:
                self._reinsert_unreachable(part, rows)
        for item, label in zip(id_list, labels.tolist(), strict=True):
            self._labels[item] = label
            self._ids_by_label[label] = item
        self._next_label += len(id_list)

    def _reinsert_unreachable(self, labels: np.ndarray, rows: Matrix) -> None:
        """Insert again, one thread, the few vectors of a parallel batch their own query misses.

        usearch's multi-threaded ``add`` (2.26) leaves some nodes no other node links to,
        which no ``ef`` finds: the memory would be lost to vector search for good.
        Measured here (self-query top 4 at ef 64): 2 to 3 of 1,200 random 64-d vectors
        and 6 to 13 of 20,000 random 384-d ones with 2 threads, none with one; 20 of
        55,000 MiniLM vectors with 2 threads, 13 with one. A single-threaded add halves the
        insert rate; this check costs one search per new vector. When misses are many
        (the hashing embedder's near-uniform vectors: about 1 in 10, single-threaded too)
        the graph cannot tell an orphan from a hard query and inserting again changes
        nothing, so the batch is left as built (the exact scores of allow-lists and the
        full-text half of hybrid search still reach those memories).
        """
        assert self._graph is not None
        self._graph.expansion_search = max(self._ef, MIN_EF)
        try:
            for _ in range(2):
                found = self._graph.search(rows, _SELF_CHECK, threads=self._threads)
                keys = np.asarray(found.keys).reshape(len(labels), -1)
                missed = ~(keys == labels[:, None]).any(axis=1)
                count = int(missed.sum())
                if count == 0 or count > max(_REPAIR_FLOOR, len(labels) * _REPAIR_SHARE):
                    return
                labels, rows = labels[missed], rows[missed]
                self._graph.remove(labels)
                self._graph.add(labels, rows, threads=1)
        finally:
            self._graph.expansion_search = self._ef

    def remove(self, ids: Iterable[str]) -> None:
        with self._lock:
            self._open_dimension()
            for item in check_allow(ids) or ():
                if self._exact is not None:
                    before = self._exact.count()
                    self._exact.remove([item])
                    self._unsaved += before - self._exact.count()
                elif self._view is not None:
                    assert self._overlay is not None
                    before = self._overlay.count()
                    self._overlay.remove([item])
                    changed = before != self._overlay.count()
                    if item not in self._tombs and self._in_view(item):
                        self._tombs.add(item)
                        self._view_live -= 1
                        changed = True
                    self._unsaved += int(changed)
                else:
                    label = self._labels.pop(item, None)
                    if label is not None:
                        del self._ids_by_label[label]
                        self._graph.remove(label)
                        self._unsaved += 1

    def rebuild(self, items: Iterable[tuple[str, Matrix]], total: int,
                progress: Progress | None = None) -> None:
        with self._lock:
            dimension = self._open_dimension()
            saved_state = self.__dict__.copy()
            self._clear_state()
            self._synced, self._saved = saved_state["_synced"], saved_state["_saved"]
            self._start_empty(dimension)
            done = 0
            try:
                ids: list[str] = []
                rows: list[Matrix] = []
                for item, vector in items:
                    ids.append(item)
                    rows.append(np.asarray(vector, dtype=np.float32).reshape(-1))
                    if len(ids) >= _CHUNK * 4:
                        self.add(ids, np.stack(rows))
                        done += len(ids)
                        ids, rows = [], []
                        if progress is not None:
                            progress(done, max(int(total), done))
                if ids:
                    self.add(ids, np.stack(rows))
                    done += len(ids)
            except BaseException:
                self.__dict__.update(saved_state)
                raise
            self._unsaved = max(self._unsaved, 1)
            if progress is not None:
                progress(done, max(int(total), done))

    # -- reads ---------------------------------------------------------------------------
    def _sorted_view_ids(self) -> Any:
        if self._sorted is None:
            self._sorted = np.asarray(self._view_ids[np.asarray(self._view_order)])
        return self._sorted

    def _view_labels(self, items: Iterable[str]) -> dict[str, int]:
        """Labels in the view of the ``items`` it holds (tombstoned ones included)."""
        wanted = [i for i in items]
        if not wanted or self._view_ids is None or not len(self._view_order):
            return {}
        ordered = self._sorted_view_ids()
        keys = np.asarray([i.encode() for i in wanted], dtype=ordered.dtype)
        at = np.searchsorted(ordered, keys)
        out: dict[str, int] = {}
        for item, key, position in zip(wanted, keys, at.tolist(), strict=True):
            if position < len(ordered) and ordered[position] == key and len(item.encode()) <= \
                    ordered.dtype.itemsize:
                out[item] = int(self._view_order[position])
        return out

    def _in_view(self, item: str) -> bool:
        return item in self._view_labels([item])

    def count(self) -> int:
        with self._lock:
            if self._exact is not None:
                return self._exact.count()
            if self._view is not None:
                assert self._overlay is not None
                return self._view_live + self._overlay.count()
            return len(self._labels)

    def ids(self) -> set[str]:
        with self._lock:
            if self._exact is not None:
                return self._exact.ids()
            if self._view is not None:
                assert self._overlay is not None
                held = {self._view_id(int(label)) for label in np.asarray(self._view_order)}
                return (held - self._tombs) | self._overlay.ids()
            return set(self._labels)

    def query(self, vector: Matrix, k: int, allow: Collection[str] | None = None
              ) -> list[ScoredId]:
        with self._lock:
            dimension = self._open_dimension()
            unit, k = check_query(vector, k, dimension)
            allowed = check_allow(allow)
            if k == 0:
                return []
            if self._exact is not None:
                return self._exact.query(unit, k, allowed)
            if allowed is not None:
                return self._allowed(unit, k, allowed)
            hits = self._graph_hits(unit, k + min(k, 32) if self._source else k)
            hits = self._rescored(unit, hits)
            if self._overlay is not None and self._overlay.count():
                hits = hits + self._overlay.query(unit, k)
            return sorted(hits, key=lambda h: (-h.score, h.id))[:k]

    def _rescored(self, unit: Matrix, hits: list[ScoredId]) -> list[ScoredId]:
        """Exact scores from the vector source for the hits it has (the graph's quantized
        score stays for any it lacks)."""
        if self._source is None or not hits:
            return hits
        found = self._source([h.id for h in hits])
        held = [h.id for h in hits if h.id in found]
        if not held:
            return hits
        matrix = np.stack([np.asarray(found[i], dtype=np.float32).reshape(-1) for i in held])
        norms = np.linalg.norm(matrix, axis=1)
        norms[norms == 0] = 1.0
        exact = dict(zip(held, ((matrix @ unit) / norms).tolist(), strict=True))
        return [ScoredId(h.id, exact[h.id]) if h.id in exact else h for h in hits]

    def _graph_hits(self, unit: Matrix, k: int) -> list[ScoredId]:
        """The graph's (or the view's) k best live hits; exact if the walk finds fewer."""
        graph = self._view if self._view is not None else self._graph
        live = self._view_live if self._view is not None else len(self._labels)
        if graph is None or live == 0:
            return []
        want = min(k, live)
        fetch = min(want + len(self._tombs), len(graph))
        ef = max(self._ef, want + min(want, 32), MIN_EF)
        for _ in range(3):
            graph.expansion_search = ef
            found = graph.search(unit, fetch, threads=1)
            hits = self._named(found.keys, found.distances)
            if len(hits) >= want:
                return hits[:want]
            ef, fetch = ef * 4, min(len(graph), max(fetch * 4, want + len(self._tombs)))
        return self._exact_scores(unit, want, self._live_labels())

    def _named(self, keys: Any, distances: Any) -> list[ScoredId]:
        out: list[ScoredId] = []
        for key, distance in zip(np.asarray(keys).tolist(), np.asarray(distances).tolist(),
                                 strict=True):
            if self._view is not None:
                item = self._view_id(int(key))
                if item in self._tombs:
                    continue
            else:
                found = self._ids_by_label.get(int(key))
                if found is None:
                    continue
                item = found
            out.append(ScoredId(item, 1.0 - float(distance)))
        return out

    def _live_labels(self) -> list[int]:
        if self._view is not None:
            return [int(label) for label in np.asarray(self._view_order)
                    if self._view_id(int(label)) not in self._tombs]
        return list(self._labels.values())

    def _exact_scores(self, unit: Matrix, k: int, labels: list[int]) -> list[ScoredId]:
        """Cosine of ``unit`` with the graph's own (dequantized) vectors for ``labels``."""
        if not labels:
            return []
        graph = self._view if self._view is not None else self._graph
        out: list[ScoredId] = []
        scored: list[tuple[float, int]] = []
        for start in range(0, len(labels), _CHUNK * 16):
            chunk = np.asarray(labels[start:start + _CHUNK * 16], dtype=np.uint64)
            rows = np.asarray(graph.get(chunk, dtype=np.float32), dtype=np.float32)
            norms = np.linalg.norm(rows, axis=1)
            norms[norms == 0] = 1.0
            scores = (rows @ unit) / norms
            for position in top_k(scores, k).tolist():
                scored.append((float(scores[position]), int(chunk[position])))
        scored.sort(key=lambda pair: -pair[0])
        for score, label in scored[:k]:
            item = (self._view_id(label) if self._view is not None
                    else self._ids_by_label[label])
            out.append(ScoredId(item, score))
        return sorted(out, key=lambda h: (-h.score, h.id))

    def _allowed(self, unit: Matrix, k: int, allowed: set[str]) -> list[ScoredId]:
        """Allow-lists are scored exactly: the graph's vectors of the allowed ids it holds,
        and the overlay's."""
        if self._view is not None:
            assert self._overlay is not None
            held = self._view_labels(allowed - self._tombs)
            hits = self._scored_from_source(unit, k, held)
            if self._overlay.count():
                hits = hits + self._overlay.query(unit, k, allowed)
        else:
            hits = self._scored_from_source(
                unit, k, {i: self._labels[i] for i in allowed if i in self._labels})
        return sorted(hits, key=lambda h: (-h.score, h.id))[:k]

    def _scored_from_source(self, unit: Matrix, k: int, held: dict[str, int]
                            ) -> list[ScoredId]:
        """The best ``k`` of ``held`` (id -> label): scored from the vector source, the
        graph's own vectors for any id the source lacks."""
        if self._source is None:
            return self._exact_scores(unit, k, list(held.values()))
        ids = list(held)
        hits: list[ScoredId] = []
        missing: list[int] = []
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start:start + _CHUNK]
            found = self._source(chunk)
            rows = [i for i in chunk if i in found]
            missing.extend(held[i] for i in chunk if i not in found)
            if not rows:
                continue
            matrix = np.stack([np.asarray(found[i], dtype=np.float32).reshape(-1)
                               for i in rows])
            norms = np.linalg.norm(matrix, axis=1)
            norms[norms == 0] = 1.0
            scores = (matrix @ unit) / norms
            hits.extend(ScoredId(rows[p], float(scores[p])) for p in top_k(scores, k).tolist())
        if missing:
            hits.extend(self._exact_scores(unit, k, missing))
        return sorted(hits, key=lambda h: (-h.score, h.id))[:k]


def create(context: Any = None, **options: Any) -> UsearchIndex:
    location = "" if context is None else str(getattr(context, "location", "") or "")
    location = options.pop("location", location)
    if context is not None and getattr(context, "encryption", None) is not None:
        raise ConfigError("the usearch index memory-maps its cache, which cannot be "
                          "encrypted: use vectors='hnsw' (sealed cache) for an encrypted store")
    read_only = bool(getattr(context, "read_only", False)) if context is not None else False
    storage = None if context is None else getattr(context, "storage", None)
    source = getattr(storage, "vectors_for", None)
    return UsearchIndex(location, read_only=options.pop("read_only", read_only),
                        vector_source=options.pop("vector_source", source), **options)
