"""Contract suite for the ``VectorIndex`` port (``tulving.ports.vectors``).

Subclass and supply one fixture, ``make_index``: a callable ``make_index(dimension,
name="default")`` returning a new, opened index object. Calls with different ``name``s
never share data; calls with the same ``name`` share the backing store, so a persistent
index reopens what was persisted under that name (a non-persistent one starts empty):

    from contract_tests.vectors import VectorIndexContract

    class TestMyIndex(VectorIndexContract):
        persistent = True

        @pytest.fixture
        def make_index(self, tmp_path):
            def make(dimension, name="default"):
                index = MyIndex(tmp_path / name)
                index.open(dimension)
                return index
            return make

Optional capabilities (``tulving.ports.vectors``) are checked for the adapters that
declare them: ``CachedIndex`` (a cache file that ``drop_cache`` deletes),
``ResealableCache``, ``FillsFromStorage`` (a reopened cache takes its vectors from
storage's reconciliation read) and ``IndexInStore`` (the suite of such an index supplies
``store_vector(index, id, vector)``, which writes an entry with that vector through the
storage the index lives in, without ``add``).

Capability flags: ``persistent`` (default False) enables the persist/reopen checks;
``min_recall`` (default 0.95) is the recall@10 required against brute force;
``score_tolerance`` (default 1e-4) is how far a score may be from the exact cosine (an
index that quantizes its vectors, such as usearch's int8, states its own).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pytest

from tulving.domain.errors import TulvingError
from tulving.domain.query import ScoredId
from tulving.ports.vectors import (
    CachedIndex,
    FillsFromStorage,
    IndexInStore,
    ResealableCache,
    VectorIndex,
)

MakeIndex = Callable[..., Any]
DIM = 16


def random_vectors(n: int, dimension: int, seed: int = 0) -> np.ndarray:
    """Unit float32 rows from a fixed seed."""
    rows = np.random.default_rng(seed).standard_normal((n, dimension)).astype(np.float32)
    unit: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return unit


def make_ids(n: int, prefix: str = "e") -> list[str]:
    return [f"{prefix}{i:06d}" for i in range(n)]


def brute_force(
    matrix: np.ndarray, ids: list[str], query: np.ndarray, k: int, allow: set[str] | None = None
) -> list[str]:
    unit = query / np.linalg.norm(query)
    scores = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)) @ unit
    order = np.argsort(-scores, kind="stable")
    picked = [ids[i] for i in order if allow is None or ids[i] in allow]
    return picked[:k]


def assert_sorted(results: list[ScoredId]) -> None:
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True), scores
    assert len({r.id for r in results}) == len(results), "duplicate ids in one result"


class VectorIndexContract:
    persistent: ClassVar[bool] = False
    min_recall: ClassVar[float] = 0.95
    score_tolerance: ClassVar[float] = 1e-4

    @pytest.fixture
    def make_index(self) -> MakeIndex:  # pragma: no cover - the subclass supplies it
        raise NotImplementedError("a contract subclass must supply the `make_index` fixture")

    @pytest.fixture
    def filled(self, make_index: MakeIndex) -> tuple[Any, list[str], np.ndarray]:
        ids, vectors = make_ids(300), random_vectors(300, DIM, seed=1)
        index = make_index(DIM)
        index.add(ids, vectors)
        return index, ids, vectors

    # -- shape of the adapter ------------------------------------------------------------

    def test_satisfies_the_protocol(self, make_index: MakeIndex) -> None:
        index = make_index(DIM)
        assert isinstance(index, VectorIndex)
        assert isinstance(index.name, str) and index.name

    def test_new_index_is_empty(self, make_index: MakeIndex) -> None:
        index = make_index(DIM)
        assert index.count() == 0
        assert index.ids() == set()
        assert index.query(random_vectors(1, DIM)[0], 5) == []

    # -- scores ------------------------------------------------------------------------

    def test_identical_vector_scores_one_and_ranks_first(self, filled: Any) -> None:
        index, ids, vectors = filled
        for row in (0, 17, 299):
            results = index.query(vectors[row], 5)
            assert results[0].id == ids[row]
            assert results[0].score == pytest.approx(1.0, abs=self.score_tolerance)
            assert all(r.score < results[0].score + 1e-6 for r in results[1:])

    def test_scores_are_cosine_even_for_unnormalised_vectors(self, make_index: MakeIndex) -> None:
        index = make_index(3)
        index.add(["x", "y", "z"], np.array([[3, 0, 0], [0, 0.5, 0], [2, 2, 0]], np.float32))
        results = {r.id: r.score for r in index.query(np.array([10, 0, 0], np.float32), 3)}
        assert results["x"] == pytest.approx(1.0, abs=self.score_tolerance)
        assert results["y"] == pytest.approx(0.0, abs=self.score_tolerance)
        assert results["z"] == pytest.approx(2**-0.5, abs=self.score_tolerance)
        opposite = index.query(np.array([-1, 0, 0], np.float32), 1)
        assert opposite[0].score <= self.score_tolerance  # z and y tie at 0 or below; x is -1

    def test_results_sorted_descending_and_match_brute_force(self, filled: Any) -> None:
        index, ids, vectors = filled
        for query in random_vectors(10, DIM, seed=2):
            results = index.query(query, 10)
            assert len(results) == 10
            assert_sorted(results)
            truth = brute_force(vectors, ids, query, 10)
            assert len(set(truth) & {r.id for r in results}) >= 9
            lookup = dict(zip(ids, vectors, strict=True))
            for r in results:
                assert r.score == pytest.approx(float(lookup[r.id] @ query),
                                                abs=self.score_tolerance)

    # -- k -----------------------------------------------------------------------------

    def test_k_larger_than_count_returns_everything(self, filled: Any) -> None:
        index, ids, vectors = filled
        results = index.query(vectors[0], 1000)
        assert {r.id for r in results} == set(ids)
        assert_sorted(results)

    def test_k_zero_returns_nothing(self, filled: Any) -> None:
        index, _, vectors = filled
        assert index.query(vectors[0], 0) == []

    # -- upsert, remove, count, ids ------------------------------------------------------

    def test_count_and_ids(self, filled: Any) -> None:
        index, ids, _ = filled
        assert index.count() == 300
        assert index.ids() == set(ids)

    def test_add_is_an_upsert(self, filled: Any) -> None:
        index, ids, vectors = filled
        replacement = random_vectors(1, DIM, seed=99)[0]
        index.add([ids[5]], replacement[None, :])
        assert index.count() == 300
        top = index.query(replacement, 1)[0]
        assert top.id == ids[5] and top.score == pytest.approx(1.0, abs=self.score_tolerance)
        old = index.query(vectors[5], 300)
        assert {r.id: r.score for r in old}[ids[5]] < 0.99

    def test_removed_ids_are_never_returned(self, filled: Any) -> None:
        index, ids, vectors = filled
        gone = set(ids[::3]) | set(ids[:40])  # over 20%: may trigger compaction
        index.remove(gone)
        assert index.count() == 300 - len(gone)
        assert index.ids() == set(ids) - gone
        for row in range(0, 300, 7):
            results = index.query(vectors[row], 300)
            assert not gone & {r.id for r in results}
            assert len(results) == 300 - len(gone)
            if ids[row] not in gone:
                assert results[0].id == ids[row]
        results = index.query(vectors[0], 50, allow=set(ids[:60]))
        assert {r.id for r in results} == set(ids[:60]) - gone

    def test_remove_then_add_again(self, filled: Any) -> None:
        index, ids, vectors = filled
        index.remove([ids[10]])
        assert ids[10] not in {r.id for r in index.query(vectors[10], 5)}
        index.add([ids[10]], vectors[10][None, :])
        assert index.query(vectors[10], 1)[0].id == ids[10]
        assert index.count() == 300

    def test_removing_unknown_ids_is_a_no_op(self, filled: Any) -> None:
        index, ids, _ = filled
        index.remove(["never-added", "also-unknown"])
        index.remove([])
        assert index.count() == 300 and index.ids() == set(ids)

    def test_removing_twice_is_a_no_op(self, filled: Any) -> None:
        index, ids, _ = filled
        index.remove([ids[0]])
        index.remove([ids[0]])
        assert index.count() == 299

    # -- allow-lists ---------------------------------------------------------------------

    @pytest.mark.parametrize("size", [1, 3, 10, 25, 150, 290])
    def test_allow_list_returns_exactly_k_allowed_ids(self, filled: Any, size: int) -> None:
        index, ids, vectors = filled
        rng = np.random.default_rng(size)
        allowed = {ids[i] for i in rng.choice(300, size=size, replace=False)}
        for query in random_vectors(5, DIM, seed=size):
            results = index.query(query, 10, allow=allowed)
            assert len(results) == min(10, size)
            assert {r.id for r in results} <= allowed
            assert_sorted(results)
            truth = brute_force(vectors, ids, query, 10, allowed)
            exact = dict(zip(ids, vectors @ (query / np.linalg.norm(query)), strict=True))
            # the best allowed id, or one that scores the same within the index's precision
            assert exact[results[0].id] >= exact[truth[0]] - 2 * self.score_tolerance

    def test_allow_list_with_unknown_or_no_ids(self, filled: Any) -> None:
        index, ids, vectors = filled
        assert index.query(vectors[0], 5, allow=set()) == []
        assert index.query(vectors[0], 5, allow={"unknown"}) == []
        results = index.query(vectors[0], 5, allow={"unknown", ids[3], ids[4]})
        assert {r.id for r in results} == {ids[3], ids[4]}

    def test_allow_list_accepts_any_collection(self, filled: Any) -> None:
        index, ids, vectors = filled
        for allow in (ids[:20], tuple(ids[:20]), frozenset(ids[:20])):
            results = index.query(vectors[0], 5, allow=allow)
            assert len(results) == 5 and {r.id for r in results} <= set(ids[:20])

    def test_large_allow_list_keeps_recall(self, make_index: MakeIndex) -> None:
        """Large allow-lists take the filtered ANN path in hnsw; it must not lose results."""
        n, dim = 4000, 24
        ids, vectors = make_ids(n), random_vectors(n, dim, seed=5)
        index = make_index(dim)
        index.add(ids, vectors)
        allowed = set(ids[: int(n * 0.7)])
        hits = total = 0
        for query in random_vectors(20, dim, seed=6):
            results = index.query(query, 10, allow=allowed)
            assert len(results) == 10 and {r.id for r in results} <= allowed
            assert_sorted(results)
            truth = brute_force(vectors, ids, query, 10, allowed)
            hits += len(set(truth) & {r.id for r in results})
            total += 10
        assert hits / total >= self.min_recall

    # -- recall and growth ---------------------------------------------------------------

    def test_recall_against_brute_force(self, make_index: MakeIndex) -> None:
        n, dim, k = 2000, 64, 10
        ids, vectors = make_ids(n), random_vectors(n, dim, seed=3)
        index = make_index(dim)
        index.add(ids, vectors)
        hits = 0
        queries = random_vectors(50, dim, seed=4)
        for query in queries:
            truth = set(brute_force(vectors, ids, query, k))
            hits += len(truth & {r.id for r in index.query(query, k)})
        assert hits / (len(queries) * k) >= self.min_recall

    def test_every_vector_is_found_by_its_own_query(self, make_index: MakeIndex) -> None:
        """Recall on average is not enough: a memory no query can reach is lost. usearch's
        parallel add left 2 to 3 of 1,200 vectors unreachable at any ef (CI found one)."""
        index = make_index(64)
        ids, vectors = make_ids(1200), random_vectors(1200, 64, seed=379)
        for start in range(0, 1200, 400):
            index.add(ids[start:start + 400], vectors[start:start + 400])
        lost = [item for item, vector in zip(ids, vectors, strict=True)
                if item not in {r.id for r in index.query(vector, 4)}]
        assert lost == []

    def test_grows_past_initial_capacity(self, make_index: MakeIndex) -> None:
        n = 5000
        ids, vectors = make_ids(n), random_vectors(n, DIM, seed=8)
        index = make_index(DIM)
        for start in range(0, n, 250):
            index.add(ids[start : start + 250], vectors[start : start + 250])
        assert index.count() == n
        for row in (0, 1023, 1024, 2048, 4999):
            assert index.query(vectors[row], 1)[0].id == ids[row]

    # -- rebuild -------------------------------------------------------------------------

    def test_rebuild_replaces_the_whole_content(self, filled: Any) -> None:
        index, ids, _ = filled
        new_ids, new_vectors = make_ids(1500, "n"), random_vectors(1500, DIM, seed=11)
        calls: list[tuple[int, int]] = []
        index.rebuild(
            ((i, v) for i, v in zip(new_ids, new_vectors, strict=True)),
            len(new_ids),
            lambda done, total: calls.append((done, total)),
        )
        assert index.ids() == set(new_ids) and index.count() == 1500
        assert index.query(new_vectors[7], 1)[0].id == new_ids[7]
        assert not set(ids) & {r.id for r in index.query(new_vectors[0], 1500)}
        assert calls and calls[-1] == (1500, 1500)
        assert [done for done, _ in calls] == sorted(done for done, _ in calls)

    def test_rebuild_with_nothing_empties_the_index(self, filled: Any) -> None:
        index, _, _ = filled
        index.rebuild(iter(()), 0)
        assert index.count() == 0 and index.ids() == set()

    # -- bad input changes nothing -------------------------------------------------------

    def test_wrong_dimension_is_refused_and_changes_nothing(self, filled: Any) -> None:
        index, _, _ = filled
        with pytest.raises(TulvingError):
            index.add(["new"], random_vectors(1, DIM + 1))
        with pytest.raises(TulvingError):
            index.query(random_vectors(1, DIM + 1)[0], 3)
        assert index.count() == 300 and "new" not in index.ids()

    def test_mismatched_ids_and_vectors_are_refused(self, filled: Any) -> None:
        index, _, _ = filled
        with pytest.raises(TulvingError):
            index.add(["a", "b"], random_vectors(3, DIM))
        assert index.count() == 300 and not {"a", "b"} & index.ids()

    def test_zero_or_nan_vectors_are_refused(self, filled: Any) -> None:
        index, _, _ = filled
        with pytest.raises(TulvingError):
            index.add(["zero"], np.zeros((1, DIM), np.float32))
        bad = random_vectors(2, DIM)
        bad[1, 0] = np.nan
        with pytest.raises(TulvingError):
            index.add(["ok", "nan"], bad)
        assert index.count() == 300 and not {"zero", "ok", "nan"} & index.ids()

    def test_negative_k_is_refused(self, filled: Any) -> None:
        index, _, vectors = filled
        with pytest.raises(TulvingError):
            index.query(vectors[0], -1)

    # -- concurrency ---------------------------------------------------------------------

    def test_concurrent_adds_and_queries(self, make_index: MakeIndex) -> None:
        index = make_index(DIM)
        errors: list[BaseException] = []

        def writer(part: int) -> None:
            try:
                ids = make_ids(400, f"t{part}-")
                vectors = random_vectors(400, DIM, seed=100 + part)
                for start in range(0, 400, 20):
                    index.add(ids[start : start + 20], vectors[start : start + 20])
                    index.query(vectors[start], 5)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(p,)) for p in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not errors, errors
        assert index.count() == 1600

    # -- persistence ---------------------------------------------------------------------

    def test_persist_is_safe_to_call_on_any_index(self, filled: Any) -> None:
        index, _, _ = filled
        index.persist()
        index.persist()
        assert index.count() == 300

    def test_persist_and_reopen_keeps_content(self, make_index: MakeIndex) -> None:
        if not self.persistent:
            pytest.skip("this index keeps no cache on disk (persistent = False)")
        ids, vectors = make_ids(1200), random_vectors(1200, DIM, seed=12)
        index = make_index(DIM, name="kept")
        index.add(ids, vectors)
        index.remove(ids[:100])
        index.add([ids[200]], vectors[201][None, :])
        index.persist()
        index.close()
        again = make_index(DIM, name="kept")
        assert again.ids() == set(ids[100:])
        assert again.count() == 1100
        assert again.query(vectors[500], 1)[0].id == ids[500]
        top = again.query(vectors[201], 2)
        assert {r.id for r in top} == {ids[200], ids[201]}
        assert not set(ids[:100]) & {r.id for r in again.query(vectors[0], 1100)}
        again.add(["after-reopen"], vectors[:1])
        assert again.count() == 1101

    def test_reopen_without_persist_has_no_partial_state(self, make_index: MakeIndex) -> None:
        if not self.persistent:
            pytest.skip("this index keeps no cache on disk (persistent = False)")
        index = make_index(DIM, name="first")
        index.add(make_ids(10), random_vectors(10, DIM))
        index.persist()
        index.add(make_ids(5, "late"), random_vectors(5, DIM, seed=9))
        index.close()
        again = make_index(DIM, name="first")
        # A cache shows what was persisted; a durable store shows everything: never a mix.
        assert again.ids() in (set(make_ids(10)), set(make_ids(10)) | set(make_ids(5, "late")))

    def test_reopen_with_another_dimension_starts_empty(self, make_index: MakeIndex) -> None:
        if not self.persistent:
            pytest.skip("this index keeps no cache on disk (persistent = False)")
        index = make_index(DIM, name="dims")
        index.add(make_ids(10), random_vectors(10, DIM))
        index.persist()
        index.close()
        other = make_index(DIM * 2, name="dims")
        assert other.count() == 0
        other.add(["fits"], random_vectors(1, DIM * 2))
        assert other.ids() == {"fits"}

    # -- optional capabilities (tulving.ports.vectors) -------------------------------------

    def test_a_cached_index_drops_every_cache_file(self, make_index: MakeIndex) -> None:
        index: VectorIndex = make_index(DIM, name="dropped")
        if not isinstance(index, CachedIndex) or index.cache_path is None:
            pytest.skip("this index keeps no cache file (not a CachedIndex)")
        assert isinstance(index.sealed, bool)
        index.add(make_ids(20), random_vectors(20, DIM))
        index.persist()
        folder, stem = index.cache_path.parent, index.cache_path.name
        assert [p for p in folder.iterdir() if p.name.startswith(stem)], "persist wrote no file"
        index.drop_cache()
        assert not [p for p in folder.iterdir() if p.name.startswith(stem)]
        index.close()
        assert make_index(DIM, name="dropped").count() == 0  # nothing left to load

    def test_resealing_a_cache_with_nothing_sealed_changes_nothing(
        self, make_index: MakeIndex
    ) -> None:
        from tulving.domain.encryption_key import EncryptionKey

        index: VectorIndex = make_index(DIM, name="reseal")
        if not isinstance(index, ResealableCache):
            pytest.skip("this index cannot reseal a cache (not a ResealableCache)")
        if isinstance(index, CachedIndex) and index.sealed:
            pytest.skip("a sealed cache: resealed by the suite of the encrypted store")
        index.add(make_ids(5), random_vectors(5, DIM))
        other = EncryptionKey(b"another-key-of-the-contract-suite", source="test")
        assert index.reseal_cache(other) is False
        assert index.count() == 5

    def test_a_reopened_cache_takes_its_vectors_from_storage(
        self, make_index: MakeIndex
    ) -> None:
        index: VectorIndex = make_index(DIM, name="filled")
        if not isinstance(index, FillsFromStorage):
            pytest.skip("this index keeps its own vectors (not FillsFromStorage)")
        ids, vectors = make_ids(50), random_vectors(50, DIM, seed=5)
        index.add(ids, vectors)
        index.persist()
        index.close()
        again = make_index(DIM, name="filled")
        assert isinstance(again, FillsFromStorage)
        if not again.needs_vectors:
            assert again.fill_vectors(ids, vectors) == 0  # nothing to take
            return
        assert again.fill_vectors(["unknown"], vectors[:1]) == 0
        assert again.fill_vectors(ids, vectors) == len(ids)
        assert not again.needs_vectors
        assert again.fill_vectors(ids, vectors) == 0  # each row taken once
        best = again.query(vectors[7], 1)[0]
        assert best.id == ids[7] and abs(best.score - 1.0) <= self.score_tolerance

    @pytest.fixture
    def store_vector(self) -> Callable[[Any, str, np.ndarray], None] | None:
        """An ``IndexInStore`` adapter's suite supplies it (see the module docstring)."""
        return None

    def test_an_index_in_store_holds_what_storage_commits(
        self, make_index: MakeIndex,
        store_vector: Callable[[Any, str, np.ndarray], None] | None,
    ) -> None:
        index: VectorIndex = make_index(DIM, name="in-store")
        if not (isinstance(index, IndexInStore) and index.in_store):
            pytest.skip("this index is a cache beside storage (not IndexInStore)")
        assert store_vector is not None, (
            "an IndexInStore adapter's suite must supply the store_vector fixture")
        vectors = random_vectors(3, DIM, seed=8)
        for i, entry_id in enumerate(make_ids(3, "stored")):
            store_vector(index, entry_id, vectors[i])
        assert index.count() == 3
        assert index.query(vectors[1], 1)[0].id == make_ids(3, "stored")[1]

