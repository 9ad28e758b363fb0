"""Reads beside long writes: search and curate latency quiet, beside a 100,000-character
``remember()`` and beside a 10,000-entry import, on SQLite and on PostgreSQL, with the raw
engines' figures beside them (a plain full-text query beside a plain transaction that
inserts 10,000 rows).

A read records its audit record and its accesses in the store's read journal, which no
write holds (``ports.storage.ReadJournal``); before, it appended them (every 128 reads or
2 s) in a transaction of the store and waited for the write in progress (a search beside
a 100,000-character remember waited 31.7 s). The target: each read's p95 beside a write
within 2x of its quiet p95.

Usage::

    .venv/bin/python benchmarks/read_fairness.py                      # both engines
    .venv/bin/python benchmarks/read_fairness.py --engine sqlite --repeat 3
    .venv/bin/python benchmarks/read_fairness.py --embedder hashing   # no model's CPU

Each phase reads ``--reads`` searches and as many curates, alternating, from one thread;
a read counts beside a write only if the write was in progress for all of it. The
writes run in a thread of the same Memory (the case that waited). Two shared cores carry
the write's CPU too (embedding the remember's turns): the raw figures show what the
engine itself gives, the ``hashing`` run what is left without a model's CPU.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _corpus import realistic_queries, realistic_texts

from tulving import Memory
from tulving.testing import postgres as pgtest

REMEMBER_CHARS = 100_000
IMPORTED = 10_000


def load() -> str:
    return os.getloadavg().__repr__()


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def conversation(chars: int, seed: int) -> str:
    """A user/assistant transcript of about ``chars`` characters."""
    lines, size = [], 0
    for n, text in enumerate(realistic_texts(chars // 40 + 10, seed=seed)):
        line = f"{'User' if n % 2 == 0 else 'Assistant'}: {text}."
        lines.append(line)
        size += len(line) + 1
        if size >= chars:
            break
    return "\n".join(lines)[:chars]


class Writer:
    """A write repeated in a thread until stopped; ``busy`` while one is in progress."""

    def __init__(self, write: Callable[[int], None]) -> None:
        self._write = write
        self._stop = threading.Event()
        self.busy = threading.Event()
        self.done = 0
        self.spans: list[tuple[float, float]] = []
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                began = time.perf_counter()
                self.busy.set()
                self._write(self.done)
                self.spans.append((began, time.perf_counter()))
                self.busy.clear()
                self.done += 1
        except BaseException as exc:
            self.error = exc
            self.busy.clear()

    def covers(self, began: float, ended: float) -> bool:
        return any(a <= began and ended <= b for a, b in self.spans)

    def __enter__(self) -> Writer:
        self._thread.start()
        assert self.busy.wait(600)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self.error is not None:
            raise self.error


def read_phase(memory: Memory, queries: list[str], reads: int,
               writer: Writer | None) -> dict[str, list[float]]:
    """``reads`` searches and curates, alternating; beside a writer, only reads that the
    write spanned count (the loop goes on until there are enough, within 20 minutes)."""
    out: dict[str, list[float]] = {"search": [], "curate": []}
    pending: list[tuple[str, float, float]] = []
    deadline = time.monotonic() + 1200
    i = 0
    while min(len(out["search"]), len(out["curate"])) < reads and time.monotonic() < deadline:
        query = queries[i % len(queries)]
        kind = "search" if i % 2 == 0 else "curate"
        i += 1
        t0 = time.perf_counter()
        if kind == "search":
            memory.search(query, 10)
        else:
            memory.curate(query, token_budget=1000)
        t1 = time.perf_counter()
        if writer is None:
            out[kind].append(t1 - t0)
        else:
            pending.append((kind, t0, t1))
            if writer.spans:  # spans close when a write ends: count what they covered
                for item in [x for x in pending if writer.covers(x[1], x[2])]:
                    out[item[0]].append(item[2] - item[1])
                pending = [x for x in pending if x[2] > writer.spans[-1][1]]
    return out


@contextmanager
def memory_on(engine: str, folder: Path, embedder: str, name: str) -> Iterator[Memory]:
    if engine == "sqlite":
        memory = Memory(folder / f"{name}.db", agent_id="bench", user_id="u1",
                        embedder=embedder).startup()
        try:
            yield memory
        finally:
            memory.close()
        return
    url = pgtest.server_url()
    if url is None:
        raise SystemExit(f"no PostgreSQL server: {pgtest.unavailable_reason()}")
    with pgtest.isolated_schema(url, "fair") as schema:
        memory = Memory(url, agent_id="bench", user_id="u1", embedder=embedder,
                        options={"storage": {"schema": schema, "max_size": 6}}).startup()
        try:
            yield memory
        finally:
            memory.close()


def bundles(folder: Path, embedder: str, count: int, size: int) -> list[Path]:
    """``count`` bundles of ``size`` new entries each (an import of each adds all)."""
    out = []
    for b in range(count):
        with Memory(folder / f"source{b}.db", agent_id="bench", user_id="u1",
                    embedder=embedder) as source:
            texts = realistic_texts(size, seed=100 + b)
            source.store_many({"content": t, "type": "FACT"} for t in texts)
            source.export(folder / f"bundle{b}.tulving")
        out.append(folder / f"bundle{b}.tulving")
    return out


def measure(engine: str, folder: Path, args: argparse.Namespace,
            imports: list[Path]) -> dict[str, dict[str, list[float]]]:
    queries = realistic_queries(200)
    phases: dict[str, dict[str, list[float]]] = {}
    with memory_on(engine, folder, args.embedder, "fair") as memory:
        memory.store_many({"content": t, "type": "FACT"}
                          for t in realistic_texts(args.entries, seed=3))
        memory.flush()
        read_phase(memory, queries, 10, None)  # warm: models, tokenizer, caches
        phases["quiet"] = read_phase(memory, queries, args.reads, None)
        texts = [conversation(args.remember_chars, seed=50 + k) for k in range(8)]
        with Writer(lambda k: memory.remember(texts[k % len(texts)])) as writer:
            phases["beside remember"] = read_phase(memory, queries, args.reads, writer)
        print(f"  {engine}: {writer.done} remember() of {args.remember_chars:,} chars, "
              f"{statistics.mean(b - a for a, b in writer.spans):.1f} s each", flush=True)
        with Writer(lambda k: memory.import_bundle(imports[k % len(imports)])) as writer:
            phases["beside import"] = read_phase(memory, queries, args.reads, writer)
        print(f"  {engine}: {writer.done} imports of {args.imported:,} entries, "
              f"{statistics.mean(b - a for a, b in writer.spans):.1f} s each", flush=True)
        phases["quiet after"] = read_phase(memory, queries, args.reads, None)
    return phases


# -- the raw engines -------------------------------------------------------------------
def quiet_and_beside(one: Callable[[str], float],
                     long_write: Callable[[threading.Event, threading.Event], None],
                     queries: list[str]) -> dict[str, list[float]]:
    """``one(query)``'s latencies alone, then while ``long_write`` holds its transaction
    open (it sets the first event once it has written, and commits on the second)."""
    out = {"quiet": [one(q) for q in queries]}
    holding, release = threading.Event(), threading.Event()
    thread = threading.Thread(target=long_write, args=(holding, release))
    thread.start()
    holding.wait()
    out["beside a write"] = [one(q) for q in queries]
    release.set()
    thread.join()
    return out


def raw_sqlite(folder: Path, reads: int) -> dict[str, list[float]]:
    """FTS5 top-10 (bm25) and the rows, beside a transaction inserting 10,000 rows."""
    path = folder / "raw.db"
    setup = sqlite3.connect(path, isolation_level=None)
    setup.execute("PRAGMA journal_mode = WAL")
    setup.execute("CREATE VIRTUAL TABLE docs USING fts5(body)")
    setup.execute("BEGIN")
    setup.executemany("INSERT INTO docs(body) VALUES (?)",
                      [(t,) for t in realistic_texts(20_000, seed=3)])
    setup.execute("COMMIT")
    setup.close()
    queries = realistic_queries(200)
    reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

    def one(q: str) -> float:
        t0 = time.perf_counter()
        ids = [r[0] for r in reader.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 10",
            (" OR ".join(f'"{w}"' for w in q.split()),))]
        reader.execute(f"SELECT body FROM docs WHERE rowid IN ({','.join('?' * len(ids))})",
                       ids).fetchall()
        return time.perf_counter() - t0

    def long_write(holding: threading.Event, release: threading.Event) -> None:
        writer = sqlite3.connect(path, isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")
        writer.executemany("INSERT INTO docs(body) VALUES (?)",
                           [(t,) for t in realistic_texts(IMPORTED, seed=9)])
        holding.set()
        release.wait()
        writer.execute("COMMIT")
        writer.close()

    out = quiet_and_beside(one, long_write, queries[:reads])
    reader.close()
    return out


def raw_postgres(reads: int) -> dict[str, list[float]]:
    """A GIN full-text top-10 (ts_rank) and the rows, beside a transaction inserting
    10,000 rows."""
    import psycopg

    url = pgtest.server_url()
    if url is None:
        raise SystemExit(f"no PostgreSQL server: {pgtest.unavailable_reason()}")
    with pgtest.isolated_schema(url, "raw") as schema:
        opts = f"-c search_path={schema}"
        setup = psycopg.connect(url, autocommit=True, options=opts)
        setup.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        setup.execute("CREATE TABLE docs (id BIGSERIAL PRIMARY KEY, body TEXT,"
                      " tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', body))"
                      " STORED)")
        setup.execute("CREATE INDEX docs_tsv ON docs USING GIN (tsv)")
        with setup.cursor() as cur:
            cur.executemany("INSERT INTO docs(body) VALUES (%s)",
                            [(t,) for t in realistic_texts(20_000, seed=3)])
        setup.execute("ANALYZE docs")
        queries = realistic_queries(200)
        reader = psycopg.connect(url, autocommit=True, options=opts)

        def one(q: str) -> float:
            t0 = time.perf_counter()
            ids = [r[0] for r in reader.execute(
                "SELECT id FROM docs WHERE tsv @@ to_tsquery('simple', %s)"
                " ORDER BY ts_rank(tsv, to_tsquery('simple', %s)) DESC LIMIT 10",
                (" | ".join(q.split()), " | ".join(q.split())))]
            reader.execute("SELECT body FROM docs WHERE id = ANY(%s)", (ids,)).fetchall()
            return time.perf_counter() - t0

        def long_write(holding: threading.Event, release: threading.Event) -> None:
            with psycopg.connect(url, options=opts) as writer:
                with writer.cursor() as cur:
                    cur.executemany("INSERT INTO docs(body) VALUES (%s)",
                                    [(t,) for t in realistic_texts(IMPORTED, seed=9)])
                holding.set()
                release.wait()
                writer.commit()

        out = quiet_and_beside(one, long_write, queries[:reads])
        reader.close()
        setup.close()
    return out


def report(engine: str, phases: dict[str, dict[str, list[float]]],
           raw: dict[str, list[float]]) -> dict[str, float]:
    ratios: dict[str, float] = {}
    print(f"\n{engine}: p50 / p95 / max ms (n)")
    for phase, kinds in phases.items():
        cells = []
        for kind, values in kinds.items():
            cells.append(f"{kind} {p(values, .5):7.1f} {p(values, .95):7.1f} "
                         f"{max(values) * 1000:8.1f} ({len(values)})")
            if phase.startswith("beside"):
                ratios[f"{kind} {phase}"] = p(values, .95) / p(phases["quiet"][kind], .95)
        print(f"  {phase:16s} " + " | ".join(cells))
    quiet = p(raw["quiet"], .95)
    beside = p(raw["beside a write"], .95)
    print(f"  raw engine       query {p(raw['quiet'], .5):.2f} / {quiet:.2f} ms quiet,"
          f" {p(raw['beside a write'], .5):.2f} / {beside:.2f} ms beside a write"
          f" of {IMPORTED:,} rows (x{beside / quiet:.2f})")
    ratios["raw beside a write"] = beside / quiet
    print("  p95 beside / p95 quiet: " + ", ".join(f"{k} x{v:.2f}" for k, v in ratios.items()))
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--reads", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--remember-chars", type=int, default=REMEMBER_CHARS)
    parser.add_argument("--imported", type=int, default=IMPORTED)
    args = parser.parse_args()
    engines = ["sqlite", "postgres"] if args.engine == "both" else [args.engine]
    print(f"load {load()}; {args.entries:,} entries, embedder {args.embedder}, "
          f"{args.reads} searches and curates a phase", flush=True)
    every: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="tulving-fair-") as tmp:
        folder = Path(tmp)
        imports = bundles(folder, args.embedder, 2, args.imported)
        for run in range(args.repeat):
            for engine in engines:
                here = folder / f"{engine}{run}"
                here.mkdir()
                phases = measure(engine, here, args, imports)
                raw = (raw_sqlite(here, args.reads) if engine == "sqlite"
                       else raw_postgres(args.reads))
                for key, ratio in report(engine, phases, raw).items():
                    every.setdefault(f"{engine}: {key}", []).append(ratio)
            print(f"load {load()}", flush=True)
    if args.repeat > 1:
        print("\nspread over runs (p95 beside / p95 quiet): min - median - max")
        for key, values in every.items():
            print(f"  {key:40s} {min(values):.2f} - {statistics.median(values):.2f} - "
                  f"{max(values):.2f}")
    missed = {k: max(v) for k, v in every.items() if "raw" not in k and max(v) > 2.0}
    print("\ntarget (p95 within 2x of quiet): " + ("met" if not missed else
          "missed: " + ", ".join(f"{k} x{v:.2f}" for k, v in missed.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
