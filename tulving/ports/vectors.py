"""Vector index port: approximate or exact nearest neighbours over entry ids.

The index is a cache of the vectors held by storage: it can always be rebuilt from
storage, so a missing, stale or corrupt index is rebuilt rather than trusted.

Optional capabilities are declared as the small protocols below, never probed, and the
contract suite checks each for the adapters that implement it
(``contract_tests.vectors``): ``SyncedVectorIndex`` (a cache that knows how far it
follows storage's vector change log), ``CachedIndex`` (a cache file beside the store),
``ResealableCache``, ``FillsFromStorage`` (a loaded cache that takes its vectors from
storage's reconciliation read) and ``IndexInStore`` (the index lives in storage's own
engine).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.query import ScoredId
from tulving.ports.embedder import Vectors

Progress = Callable[[int, int], None]
"""Called with (done, total) during long rebuilds."""


@runtime_checkable
class VectorIndex(Protocol):
    """Invariants (checked by ``contract_tests.vectors``):

    - ``score`` is cosine similarity: higher is more similar, 1.0 for the same direction;
    - ``add`` is an upsert: adding an existing id replaces its vector, count unchanged;
    - a removed id is never returned; removing an unknown id is a no-op;
    - ``query`` with ``allow`` returns only allowed ids and, if at least ``k`` allowed ids
      exist, exactly ``k`` of them (filters never lose recall);
    - results are sorted by descending score.
    """

    name: str

    def open(self, dimension: int) -> None:
        """Prepare for vectors of ``dimension``; load a persisted cache if one exists."""
        ...

    def add(self, ids: Sequence[str], vectors: Vectors) -> None:
        """Index one vector per id (rows of ``vectors``, in order); an id already
        indexed gets the new vector (an upsert)."""
        ...

    def remove(self, ids: Iterable[str]) -> None:
        """Stop returning these ids; unknown ids are ignored."""
        ...

    def query(
        self, vector: Vectors, k: int, allow: Collection[str] | None = None
    ) -> list[ScoredId]:
        """The ``k`` nearest ids to ``vector`` by cosine similarity, best first; with
        ``allow``, only ids in it (and ``k`` of them whenever that many exist)."""
        ...

    def count(self) -> int:
        """How many ids are indexed."""
        ...

    def ids(self) -> set[str]:
        """Ids currently indexed (used at startup to detect a stale cache)."""
        ...

    def rebuild(
        self, items: Iterable[tuple[str, Vectors]], total: int, progress: Progress | None = None
    ) -> None:
        """Replace the whole content with ``items`` (id, vector)."""
        ...

    def persist(self) -> None:
        """Write the cache to disk, atomically; a no-op for indexes without a cache."""
        ...

    def close(self) -> None:
        """Release the index (persisting it first is the caller's ``persist()``)."""
        ...


@runtime_checkable
class SyncedVectorIndex(Protocol):
    """Optional: an index whose saved cache records how far it reflects storage's vector
    change log (``ports.storage.VectorChangeLog``), so an open or a reader in another
    process catches up from there instead of comparing every stored vector.

    A position is ``(epoch, n)``: ``epoch`` names the store (a cache of another store
    never matches), ``n`` a position in its log. ``persist`` saves the synced position
    with the content; ``saved_position`` is the one the file on disk holds (what the
    writer may trim the log up to); ``unsaved_changes`` counts what the file lacks, so the
    owner saves when it is worth it rather than rewriting a large file for one change.
    """

    read_only: bool

    def sync_position(self) -> tuple[str, int] | None: ...

    def mark_synced(self, epoch: str, position: int) -> None: ...

    def saved_position(self) -> tuple[str, int] | None: ...

    def unsaved_changes(self) -> int: ...


@runtime_checkable
class CachedIndex(Protocol):
    """Optional: an index that keeps a cache file beside the store. A Memory given an
    encryption key refuses one whose cache is not ``sealed``; ``tulving encrypt`` and
    ``decrypt`` drop it before the store switches (a plain cache must not outlive a plain
    store)."""

    @property
    def cache_path(self) -> Path | None:
        """Where the cache lives (None: this instance keeps none, e.g. in memory)."""
        ...

    sealed: bool
    """The cache is encrypted with the store's key."""

    def drop_cache(self) -> None:
        """Delete every cache file of this index (the next open rebuilds it)."""
        ...


@runtime_checkable
class ResealableCache(Protocol):
    """Optional: a sealed cache that can be sealed again under a new key (``tulving
    rekey``) instead of being rebuilt."""

    def reseal_cache(self, old: EncryptionKey) -> bool:
        """Seal the cache under this index's key; one ``old`` does not open is dropped.
        True if resealed."""
        ...


@runtime_checkable
class FillsFromStorage(Protocol):
    """Optional: an index whose loaded cache lacks the float vectors it rescores with
    (hnsw keeps none on disk): start-up reconciliation, which reads every stored vector
    anyway, hands them over instead of the index reading them again."""

    @property
    def needs_vectors(self) -> bool:
        """True while some indexed ids have no vector yet."""
        ...

    def fill_vectors(self, ids: Sequence[str], vectors: Vectors) -> int:
        """Take row i of ``vectors`` for ``ids[i]`` where it is missing; ids not indexed
        or already filled are skipped. Returns how many were taken."""
        ...


@runtime_checkable
class IndexInStore(Protocol):
    """Optional: an index that lives in storage's own engine (pgvector): the commit that
    writes, archives or deletes an entry's vector changes the index with it, so a writer
    does not ``add`` what it wrote, and near-duplicate checks see committed vectors
    whichever process wrote them."""

    in_store: bool

