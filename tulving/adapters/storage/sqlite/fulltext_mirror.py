"""An in-memory mirror of the FTS5 index that ranks exactly as FTS5's ``bm25()``, faster.

Why it exists: FTS5 ranks by calling ``bm25()`` once per matching row, and on every query
it first counts each term's matching rows, so a query costs about 1.4 µs per matching
document. At 100k memories a question with a common word ("time", "work") matches tens of
thousands of rows: 10-15 ms, most of ``curate()``'s tail. The mirror keeps every term's
postings (row, term frequency) in numpy arrays and scores a query in one vectorised pass:
about 1 ms for the same queries.

Why the ranking is the same, not merely similar:

- the tokens are FTS5's own: the mirror is read out of the index through ``fts5vocab``,
  and text written later, like each query word, is tokenized by a private FTS5 table
  declared with the same tokenizer;
- the statistics are FTS5's: every row of the index counts (archived, other tenants),
  document lengths are token counts, document frequencies are counted over live rows;
- the arithmetic is ``fts5_aux.c``'s ``bm25``, operation for operation, in float64, with
  each phrase's share added in query order, so the scores are bit-identical (tests compare
  them). Only ties at the cut may differ: the mirror breaks them by row id.

Why it stays correct: it is a cache of committed state. Temporary triggers on the writer
connection note every row a transaction inserts; at commit the store hands the row ids
over (:meth:`FullTextMirror.mark`) and the mirror reads those rows before its next query.
A transaction that deletes a row or changes its text makes the mirror drop everything
(:meth:`FullTextMirror.forget`) and rebuild from the index: an erased memory's words do
not stay in memory (deletions and corrections are rare; a rebuild takes ~1.5 s per 100k
rows on a thread, FTS5 answering meanwhile). A search inside the writer's own transaction, which must see uncommitted rows,
goes to FTS5, as does a query the mirror cannot answer exactly (a word FTS5 splits into
several tokens). The mirror reads the database file through its own read-only connection,
so it never takes the store's lock.
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
import urllib.parse
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from tulving.adapters.storage.sqlite.encryption import ERRORS, Keying
from tulving.domain.log_masking import masked_logger

log = masked_logger(__name__)


#: fts5_aux.c's bm25 constants (FTS5 offers no way to change them).
K1 = 1.2
B = 0.75
#: Below this many rows the first search builds the mirror before it answers; above it a
#: thread builds it while FTS5 answers (measured: 100k rows in about 1.5 s).
INLINE_BUILD_ROWS = 2_000
#: Rebuild when dead row versions (rows rewritten or deleted since the build) exceed
#: this share of the live ones: they cost memory and scoring time, never correctness.
REBUILD_DEAD_SHARE = 0.5
REBUILD_DEAD_MIN = 1_000
#: More rows added since the last search than this: rebuild on a thread instead of reading
#: them inside the search (about 0.1 ms a row: 1,000 rows cost one search 100 ms).
REFRESH_MAX_ROWS = 1_000
_TOKEN_CACHE_SIZE = 50_000
#: The tokenizer option of the index's declaration, copied to the private table.
_TOKENIZE = re.compile(r"tokenize\s*=\s*('(?:[^']|'')*')", re.IGNORECASE)

# The statements that track changed rows on the writer connection (see store.py): a row
# inserted is marked 0; a row deleted or given another text, 1 (its old words must go).
_MARK_REMOVED = ("INSERT INTO tulving_fts_dirty VALUES (old.rowid, 1) "
                 "ON CONFLICT(row_id) DO UPDATE SET removed = 1")
TRACKING = (
    "CREATE TEMP TABLE IF NOT EXISTS tulving_fts_dirty "
    "(row_id INTEGER PRIMARY KEY, removed INTEGER NOT NULL)",
    "CREATE TEMP TRIGGER IF NOT EXISTS tulving_fts_dirty_ai AFTER INSERT ON main.entries "
    "BEGIN INSERT OR IGNORE INTO tulving_fts_dirty VALUES (new.rowid, 0); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS tulving_fts_dirty_ad AFTER DELETE ON main.entries "
    f"BEGIN {_MARK_REMOVED}; END",
    "CREATE TEMP TRIGGER IF NOT EXISTS tulving_fts_dirty_au AFTER UPDATE OF search_text "
    "ON main.entries WHEN old.search_text IS NOT new.search_text "
    f"BEGIN {_MARK_REMOVED}; END",
)
TAKE_DIRTY = "SELECT row_id, removed FROM temp.tulving_fts_dirty"
CLEAR_DIRTY = "DELETE FROM temp.tulving_fts_dirty"


class _Index:
    """Postings of one build plus the rows (re)read since: row versions are *slots*; a
    rewritten row gets a new slot and its old one dies, so postings are only appended."""

    def __init__(self, rowids: np.ndarray, lengths: np.ndarray, terms: list[str],
                 starts: np.ndarray, slots: np.ndarray, freqs: np.ndarray) -> None:
        n = len(rowids)
        capacity = max(16, int(n * 1.25))
        self.slot_rowid = np.zeros(capacity, dtype=np.int64)
        self.slot_rowid[:n] = rowids
        self.length = np.zeros(capacity, dtype=np.float64)
        self.length[:n] = lengths
        self.alive = np.zeros(capacity, dtype=bool)
        self.alive[:n] = True
        self.n_slots = n
        # Row ids are dense (SQLite gives max + 1): an array is 8 bytes a row, a dict ~110.
        self.slot_of = np.full(int(rowids[-1]) + 1 if n else 16, -1, dtype=np.int64)
        self.slot_of[rowids] = np.arange(n)
        self.rows = n
        self.tokens = int(lengths.sum())
        self.dead = 0
        self._term_number = {t: i for i, t in enumerate(terms)}
        self._starts = starts
        self._slots, self._freqs = slots, freqs
        self._merged: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._added: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Live (slot, frequency) pairs of ``term``; merges and prunes lazily."""
        got = self._merged.get(term)
        if got is None:
            number = self._term_number.get(term)
            start, end = (0, 0) if number is None else self._starts[number:number + 2]
            got = (self._slots[start:end], self._freqs[start:end])
        added = self._added.pop(term, None)
        if added is not None:
            got = (np.concatenate([got[0], *(slots for slots, _ in added)]),
                   np.concatenate([got[1], *(freqs for _, freqs in added)]))
            self._merged[term] = got
        if self.dead:
            keep = self.alive[got[0]]
            if not keep.all():
                got = (got[0][keep], got[1][keep])
                self._merged[term] = got
        return got

    def remove(self, rowid: int) -> None:
        slot = int(self.slot_of[rowid]) if rowid < len(self.slot_of) else -1
        if slot >= 0:
            self.slot_of[rowid] = -1
            self.alive[slot] = False
            self.rows -= 1
            self.tokens -= int(self.length[slot])
            self.dead += 1

    def add(self, rowids: Sequence[int], lengths: dict[int, int],
            postings: Sequence[tuple[str, np.ndarray, np.ndarray]]) -> None:
        """New rows (not in the index) with their token counts, and per term the rows
        holding it and how often: slots are assigned and postings queued in bulk."""
        if not rowids:
            return
        rows = np.asarray(rowids, dtype=np.int64)
        n, first = len(rows), self.n_slots
        if first + n > len(self.alive):
            grow = max(len(self.alive), n)
            self.slot_rowid = np.concatenate([self.slot_rowid, np.zeros(grow, np.int64)])
            self.length = np.concatenate([self.length, np.zeros(grow, np.float64)])
            self.alive = np.concatenate([self.alive, np.zeros(grow, bool)])
        top = int(rows.max())
        if top >= len(self.slot_of):
            grown = np.full(max(top + 1, 2 * len(self.slot_of)), -1, dtype=np.int64)
            grown[:len(self.slot_of)] = self.slot_of
            self.slot_of = grown
        slots = np.arange(first, first + n)
        sizes = np.array([lengths.get(r, 0) for r in rowids], dtype=np.float64)
        self.slot_rowid[slots], self.length[slots], self.alive[slots] = rows, sizes, True
        self.slot_of[rows] = slots
        self.n_slots += n
        self.rows += n
        self.tokens += int(sizes.sum())
        for term, docs, freqs in postings:
            self._added.setdefault(term, []).append((self.slot_of[docs], freqs))


class FullTextMirror:
    """Built on demand (:meth:`start`), kept current by :meth:`mark`, asked by
    :meth:`search`; thread-safe."""

    def __init__(self, path: str, keying: Keying | None = None) -> None:
        self._path = path
        self._keying = keying or Keying(path, None)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._index: _Index | None = None
        self._dirty: set[int] = set()
        self._marks_during_build: set[int] | None = None
        self._builder: threading.Thread | None = None
        self._closed = False
        self._failed = False  # a build failed: FTS5 answers for the rest of this open
        self._generation = 0  # bumped by forget(): a build started before is discarded
        self._tokens: dict[str, tuple[str, ...]] = {}

    # lifecycle -----------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self._index is not None

    @property
    def failed(self) -> bool:
        """A build or a refresh failed: FTS5 answers until the store is reopened."""
        return self._failed

    def start(self, rows: int) -> None:
        """Build the mirror: now if the store is small (``rows``), else on a thread."""
        with self._lock:
            if (self._closed or self._failed or self._builder is not None
                    or self._index is not None):
                return
            self._marks_during_build = set()
            if rows >= INLINE_BUILD_ROWS:
                self._builder = threading.Thread(
                    target=self._build, name="tulving-fulltext-mirror", daemon=True)
                self._builder.start()
                return
        self._build()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a build in progress; True if the mirror is ready."""
        builder = self._builder
        if builder is not None:
            builder.join(timeout)
        return self.ready

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conn, builder = self._conn, self._builder
        if builder is not None and builder is not threading.current_thread():
            if conn is not None:
                conn.interrupt()  # a build of a large store stops now, not in a second
            builder.join()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._index = None

    def forget(self) -> None:
        """Drop the mirror (and a build in progress): rows were deleted or rewritten."""
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        """(Lock held.) No index until the next :meth:`start`; a build running now is
        discarded when it ends. FTS5 answers meanwhile."""
        self._generation += 1
        self._index, self._dirty = None, set()

    def mark(self, rowids: Iterable[int]) -> None:
        """Rows a committed transaction inserted."""
        with self._lock:
            self._dirty.update(rowids)
            if self._marks_during_build is not None:
                self._marks_during_build.update(rowids)

    # building ------------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = self._keying.connect_memory(uri=True, check_same_thread=False,
                                               isolation_level=None)
            location = "file:" + urllib.parse.quote(self._path) + "?mode=ro"
            self._keying.attach(conn, location, "store")
            conn.execute("CREATE VIRTUAL TABLE temp.store_terms USING "
                         "fts5vocab(store, entries_fts, row)")
            conn.execute("CREATE VIRTUAL TABLE temp.store_instances USING "
                         "fts5vocab(store, entries_fts, instance)")
            (declared,) = conn.execute(
                "SELECT sql FROM store.sqlite_master WHERE name = 'entries_fts'").fetchone()
            tokenize = _TOKENIZE.search(declared)
            option = f", tokenize={tokenize.group(1)}" if tokenize else ""
            conn.execute(f"CREATE VIRTUAL TABLE main.words USING fts5(text{option})")
            conn.execute("CREATE VIRTUAL TABLE main.word_instances USING "
                         "fts5vocab(words, instance)")
            conn.execute("CREATE VIRTUAL TABLE main.word_terms USING fts5vocab(words, row)")
            self._conn = conn
        return self._conn

    def _build(self) -> None:
        try:
            with self._lock:
                if self._closed:
                    return
                conn = self._connection()
                generation = self._generation
            index = self._read_index(conn)
        except (*ERRORS, ValueError) as exc:  # the store keeps answering through FTS5
            if not self._closed:
                log.warning("full-text mirror not built, FTS5 answers alone: %s", exc)
            with self._lock:
                self._marks_during_build = None
                self._builder = None
                self._failed = True
            return
        with self._lock:
            if not self._closed and generation == self._generation:
                self._index = index
                self._dirty = self._marks_during_build or set()
            self._marks_during_build = None
            self._builder = None

    @staticmethod
    def _read_index(conn: sqlite3.Connection) -> _Index:
        """One read snapshot of the FTS5 index: rows and their lengths, every term with its
        instance count, then all instances' rows as one string (in term order, then row
        order: parsed and split by numpy, not by a Python loop; ~1.5 s per 100k rows)."""
        conn.execute("BEGIN")
        try:
            rowids = np.array([r for (r,) in conn.execute(
                "SELECT id FROM store.entries_fts_docsize ORDER BY id")], dtype=np.int64)
            terms, starts, docs, freqs = _postings(conn, "temp.store_terms",
                                                   "temp.store_instances")
        finally:
            conn.execute("COMMIT")
        slot_of_doc = np.searchsorted(rowids, docs)
        if len(docs) and (len(rowids) == 0 or not np.array_equal(
                rowids[np.minimum(slot_of_doc, len(rowids) - 1)], docs)):
            raise ValueError("instances of rows the index does not size")
        lengths = np.bincount(slot_of_doc, weights=freqs, minlength=len(rowids))
        return _Index(rowids, lengths, terms, starts, slot_of_doc.astype(np.int64), freqs)

    def _postings_of(
        self, texts: Sequence[tuple[int, str]]
    ) -> tuple[dict[int, int], list[tuple[str, np.ndarray, np.ndarray]]]:
        """Token count per row, and per term its rows and frequencies, by the FTS5
        tokenizer (a private table read the way :meth:`_read_index` reads the store's)."""
        conn = self._connection()
        conn.execute("BEGIN")
        try:
            conn.executemany("INSERT INTO main.words(rowid, text) VALUES (?, ?)", texts)
            terms, starts, docs, freqs = _postings(conn, "main.word_terms",
                                                   "main.word_instances")
        finally:
            conn.execute("ROLLBACK")
        rows, row_of = np.unique(docs, return_inverse=True)
        sizes = np.bincount(row_of, weights=freqs, minlength=len(rows)).astype(np.int64)
        return (dict(zip(rows.tolist(), sizes.tolist(), strict=True)),
                [(term, docs[starts[i]:starts[i + 1]], freqs[starts[i]:starts[i + 1]])
                 for i, term in enumerate(terms)])

    def _tokens_of(self, words: Sequence[str]) -> list[list[str]]:
        """Each word's tokens, as the FTS5 tokenizer makes them (private table)."""
        conn = self._connection()
        out: list[list[str]] = [[] for _ in words]
        conn.execute("BEGIN")
        try:
            conn.executemany("INSERT INTO main.words(rowid, text) VALUES (?, ?)",
                             list(enumerate(words)))
            for i, token in conn.execute("SELECT doc, term FROM main.word_instances"):
                out[i].append(token)
        finally:
            conn.execute("ROLLBACK")
        return out

    def _refresh(self, index: _Index) -> None:
        rowids = sorted(self._dirty)
        self._dirty = set()
        conn = self._connection()
        texts: list[tuple[int, str]] = []
        for start in range(0, len(rowids), 500):
            chunk = rowids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            texts += conn.execute(
                f"SELECT rowid, search_text FROM store.entries WHERE rowid IN ({marks})",
                chunk).fetchall()
        for rowid in rowids:
            index.remove(rowid)
        if texts:
            index.add([r for r, _ in texts], *self._postings_of(texts))
        if index.dead > max(REBUILD_DEAD_SHARE * index.rows, REBUILD_DEAD_MIN):
            self._drop()

    def _query_tokens(self, terms: Sequence[str]) -> list[str] | None:
        unknown = [t for t in dict.fromkeys(terms) if t not in self._tokens]
        if unknown:
            if len(self._tokens) > _TOKEN_CACHE_SIZE:
                self._tokens.clear()
            for term, tokens in zip(unknown, self._tokens_of(unknown), strict=True):
                self._tokens[term] = tuple(tokens)
        out: list[str] = []
        for term in terms:
            tokens = self._tokens[term]
            if len(tokens) != 1:
                return None  # a phrase of several tokens, or none: FTS5 answers
            out.append(tokens[0])
        return out

    # searching -----------------------------------------------------------------------
    def search(self, terms: Sequence[str], limit: int) -> tuple[list[tuple[int, float]], int] | None:
        """The best ``limit`` rows for the OR of ``terms`` as (rowid, -bm25), best first
        (ties by rowid), and how many rows match; None when FTS5 must answer."""
        with self._lock:
            index = self._index
            if index is None or self._closed:
                return None
            if len(self._dirty) > REFRESH_MAX_ROWS:
                # A bulk import: a rebuild on a thread (FTS5 answers meanwhile) beats
                # tokenizing and appending that many rows inside one search.
                self._drop()
                return None
            try:
                if self._dirty:
                    self._refresh(index)
                    if self._index is None:
                        return None
                tokens = self._query_tokens(terms)
            except ERRORS as exc:
                log.warning("full-text mirror dropped, FTS5 answers alone: %s", exc)
                self._index = None
                self._failed = True
                return None
            if tokens is None:
                return None
            return _score(index, tokens, limit)


def _postings(
    conn: sqlite3.Connection, terms_table: str, instances_table: str
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """An FTS5 index read as postings through its fts5vocab tables: every term with its
    instance count (``row`` table), then every instance's row as one comma-joined string
    (``instance`` table: term order, then row order). Returns the terms, where each
    term's postings start (one more entry than terms), and per posting its row and term
    frequency; all split by numpy, not by a Python loop over instances."""
    vocab = conn.execute(f"SELECT term, cnt FROM {terms_table}").fetchall()
    (joined,) = conn.execute(f"SELECT group_concat(doc) FROM {instances_table}").fetchone()
    # Text-mode fromstring parses in C: ten times faster than str.split and without a
    # Python string per instance (2.6M of them at 100k rows).
    docs = (np.fromstring(joined, dtype=np.int64, sep=",") if joined
            else np.zeros(0, dtype=np.int64))
    counts = np.array([c for _, c in vocab], dtype=np.int64)
    if int(counts.sum()) != len(docs):
        raise ValueError("fts5vocab row and instance tables disagree")
    term_of = np.repeat(np.arange(len(vocab), dtype=np.int32), counts)
    same_term = term_of[1:] == term_of[:-1]
    if bool(np.any(same_term & (docs[1:] < docs[:-1]))):
        raise ValueError("fts5vocab instances are not in row order within a term")
    new_pair = np.ones(len(docs), dtype=bool)
    new_pair[1:] = ~same_term | (docs[1:] != docs[:-1])
    firsts = np.flatnonzero(new_pair)
    freqs = np.diff(np.append(firsts, len(docs))).astype(np.float64)
    starts = np.searchsorted(term_of[firsts], np.arange(len(vocab) + 1))
    return [t for t, _ in vocab], starts, docs[firsts], freqs


def _score(index: _Index, tokens: Sequence[str], limit: int) -> tuple[list[tuple[int, float]], int]:
    """fts5_aux.c's bm25, vectorised: one share per phrase, summed in phrase order."""
    rows = index.rows
    if rows == 0 or limit <= 0:
        return [], 0
    avgdl = index.tokens / rows
    slot_parts: list[np.ndarray] = []
    share_parts: list[np.ndarray] = []
    for token in tokens:
        slots, freqs = index.postings(token)
        if not len(slots):
            continue
        hits = len(slots)
        idf = math.log((rows - hits + 0.5) / (hits + 0.5))
        if idf <= 0.0:
            idf = 1e-6
        share = idf * ((freqs * (K1 + 1.0)) / (freqs + K1 * (1 - B + B * index.length[slots]
                                                               / avgdl)))
        slot_parts.append(slots)
        share_parts.append(share)
    if not slot_parts:
        return [], 0
    scores: Any = np.bincount(np.concatenate(slot_parts), weights=np.concatenate(share_parts),
                              minlength=index.n_slots)
    candidates = np.flatnonzero(scores > 0)  # the matching rows (every share is > 0)
    values = scores[candidates]
    matched = len(candidates)
    k = min(limit, matched)
    if k < matched:  # partitioned among matches only: the zeros' ties slow introselect
        threshold = values[np.argpartition(-values, k - 1)[:k]].min()
        keep = values >= threshold
        candidates, values = candidates[keep], values[keep]
    rowids = index.slot_rowid[candidates]
    order = np.lexsort((rowids, -values))[:k]
    return list(zip(rowids[order].tolist(), values[order].tolist(), strict=True)), matched


