"""Train and measure the learned ranker of hybrid search (issue 45) on the dev sets' tuning
halves only.

Usage (run from the repository root; the data stay outside it)::

    .venv/bin/python benchmarks/train_ranker.py dump \\
        --locomo /work/shared/data/locomo/locomo_dev.json \\
        --longmemeval /work/shared/data/longmemeval_s_dev   # feature rows, cached
    .venv/bin/python benchmarks/train_ranker.py compare    # model families, CV on tune
    .venv/bin/python benchmarks/train_ranker.py train --write tulving/data/ranker-v1.json
    .venv/bin/python benchmarks/train_ranker.py ablate     # one feature group left out
    .venv/bin/python benchmarks/train_ranker.py thresholds # min_score vs absent answers

Protocol:

- **Rows**: every question's candidate pool as search builds it
  (``Searcher.ranker_pool``, the very function that scores at serve time, with the
  default options and an engine depth of 100, what a ``top_k`` of 50 asks for), one row
  of ``features.FEATURES`` per candidate, labelled 1 when the candidate is evidence
  (LoCoMo: a turn its ``evidence`` cites; LongMemEval_S: a turn marked ``has_answer``).
  Stores are built as ``locomo.py`` and ``longmemeval.py`` build them (embedded default,
  one memory per turn). Rows are dumped under ``SCRATCH/rows/<key>/``, ``key`` hashing the
  sources that shape a row, so training runs never search again.
- **Halves**: LoCoMo conversations 1-3 are the tuning half, 4-5 held back
  (``locomo.TUNING``); LongMemEval_S per ``_longmemeval_data.py`` (within each type, 6 of
  10 by the SHA-256 of the id). Queries whose answer is absent (LoCoMo category 5; the
  ``abstention/`` LongMemEval_S questions) go to the half of their conversation, or of the
  answerable question they were made from, else to the tuning half when the SHA-256 of
  their id is below 3/5 of the range; all their rows are labelled 0. Training reads the
  tuning halves only; no question or conversation of a held-back half is seen.
- **Fitting**: features standardised on the training rows; each query weighs the same
  within its dataset and the two datasets weigh ``--lme-share`` : 1 - that; a fixed seed
  (``--seed``); the family and its knobs are chosen by 5-fold cross-validation over
  *queries* of the tuning halves (``compare``), never on a held-back figure.
- **Measures**: recall@k of the reordered pool (exactly what ``search(top_k=50)`` returns
  with the model) on each half; the model's log-loss; for ``thresholds``, at each
  ``min_score``, the share of evidence in the first 10 hits that scores at or above it,
  and the share of the first 10 hits of absent-answer queries that scores below it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tulving
from tulving.application.retrieval import features as F
from tulving.application.retrieval.options import SearchOptions
from tulving.application.retrieval.search import Searcher, build_filter

SEED = 45
ENGINE_DEPTH = 100
DEFAULT_SCRATCH = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / (
    "tulving-benchmarks/ranker")
#: Sources whose code shapes a row: a change in any gives the dumps a new key.
ROW_SOURCES = ("application/retrieval/features.py", "application/retrieval/search.py",
               "application/retrieval/options.py",
               "domain/fusion.py", "domain/rerank.py", "domain/query_analysis.py",
               "domain/temporal.py", "domain/lexical.py")
RECALL_AT = (1, 5, 10, 20)


# -- rows ---------------------------------------------------------------------------------
@dataclass
class Query:
    qid: str
    dataset: str  # "locomo" | "lme"
    half: str  # "tune" | "hold"
    absent: bool
    group: str  # LoCoMo category / LongMemEval type
    evidence: int  # how many evidence memories exist (recall's denominator)


@dataclass
class Rows:
    queries: list[Query]
    x: np.ndarray
    y: np.ndarray
    q: np.ndarray  # query index of each row

    def subset(self, keep: Callable[[Query], bool]) -> Rows:
        return self.pick([i for i, query in enumerate(self.queries) if keep(query)])

    def pick(self, chosen: Sequence[int]) -> Rows:
        """The queries at these indexes, with their rows."""
        where = {old: new for new, old in enumerate(chosen)}
        mask = np.isin(self.q, chosen)
        return Rows([self.queries[i] for i in chosen], self.x[mask], self.y[mask],
                    np.array([where[i] for i in self.q[mask]], dtype=np.int64))

    @staticmethod
    def join(parts: Sequence[Rows]) -> Rows:
        queries: list[Query] = []
        xs, ys, qs = [], [], []
        for part in parts:
            qs.append(part.q + len(queries))
            queries += part.queries
            xs.append(part.x)
            ys.append(part.y)
        return Rows(queries, np.concatenate(xs), np.concatenate(ys), np.concatenate(qs))


def rows_key() -> str:
    root = Path(tulving.__file__).resolve().parent
    digest = hashlib.sha256(json.dumps(F.FEATURES).encode())
    for name in ROW_SOURCES:
        digest.update(name.encode() + b"\0" + (root / name).read_bytes())
    return digest.hexdigest()[:12]


def save(rows: Rows, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path.with_suffix(".npz"), x=rows.x, y=rows.y, q=rows.q)
    path.with_suffix(".json").write_text(json.dumps([q.__dict__ for q in rows.queries]))


def read(path: Path) -> Rows:
    data = np.load(path.with_suffix(".npz"))
    queries = [Query(**q) for q in json.loads(path.with_suffix(".json").read_text())]
    return Rows(queries, data["x"], data["y"], data["q"])


def pool_rows(searcher: Searcher, text: str, label: Callable[[Any], bool],
              loaded_ids: Callable[[Any], str]) -> tuple[np.ndarray, np.ndarray]:
    """The candidate rows search builds for ``text``, and their labels."""
    flt = build_filter(searcher.ctx)
    loaded: dict[str, Any] = {}
    pool = searcher.ranker_pool(text, flt, ENGINE_DEPTH, loaded)
    labels = np.array([bool(i in loaded and label(loaded_ids(loaded[i]))) for i in pool.ids],
                      dtype=np.int8)
    return pool.matrix, labels


def _collect(parts: list[tuple[Query, np.ndarray, np.ndarray]]) -> Rows:
    queries = [p[0] for p in parts]
    x = np.concatenate([p[1] for p in parts]) if parts else np.zeros((0, len(F.FEATURES)))
    y = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, dtype=np.int8)
    q = np.concatenate([np.full(len(p[1]), i) for i, p in enumerate(parts)]) if parts else (
        np.zeros(0, dtype=np.int64))
    return Rows(queries, x, y, q.astype(np.int64))


def _hash_half(qid: str) -> str:
    return "tune" if int(hashlib.sha256(qid.encode()).hexdigest()[:8], 16) < 0.6 * 16**8 \
        else "hold"


def foreign_questions(locomo_path: str | None, lme_folder: str | None,
                      dataset: str) -> list[str]:
    """Tuning-half questions of the *other* dev set, asked of this one's tuning-half
    stores: their answers are certainly absent (no conversation between two friends says
    how many fish are in the user's tank), and they match a store's words and topics the
    way real off-topic questions do. They teach the model what a pool without the answer
    looks like (rows labelled 0), so its probability means the same across stores."""
    if dataset == "locomo" and lme_folder:
        from _longmemeval_data import load as load_lme

        return [q.question for q in load_lme(lme_folder, halves=("tune",))]
    if dataset == "lme" and locomo_path:
        import locomo
        from _locomo_data import load as load_locomo

        return [q.text for i, c in enumerate(load_locomo(locomo_path))
                if locomo.half_of(i) == "tune" for q in c.questions]
    return []


def _some(questions: Sequence[str], key: str, count: int) -> list[str]:
    """``count`` of ``questions``, chosen by hashing them with ``key`` (deterministic)."""
    ranked = sorted(questions, key=lambda q: hashlib.sha256(f"{key}/{q}".encode()).digest())
    return ranked[:count]


#: Foreign questions asked of each tuning-half store (LoCoMo: 3 stores; LongMemEval_S: 36).
FOREIGN_PER_STORE = {"locomo": 40, "lme": 4}


def dump_locomo(path: str, embed_cache: str, lme_folder: str | None) -> Rows:
    import locomo
    from _locomo_data import load

    locomo.EMBED_CACHE = embed_cache
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    parts: list[tuple[Query, np.ndarray, np.ndarray]] = []
    with tempfile.TemporaryDirectory(prefix="tulving-ranker-") as tmp:
        for index, conv in enumerate(load(path)):
            half = locomo.half_of(index)
            memory, _ = locomo.ingest(conv, Path(tmp))
            try:
                searcher = Searcher(memory.ctx, SearchOptions())
                for n, question in enumerate(conv.questions):
                    wanted = set(question.evidence)
                    x, y = pool_rows(searcher, question.text, lambda d, w=wanted: d in w,
                                     lambda e: e.metadata.get("dia_id"))
                    parts.append((Query(f"{conv.sample_id}/{n}", "locomo", half, False,
                                        f"cat{question.category}", len(wanted)), x, y))
                absent = [qa for qa in raw[index]["qa"] if qa.get("category") == 5]
                for n, qa in enumerate(absent):
                    x, y = pool_rows(searcher, str(qa["question"]), lambda d: False,
                                     lambda e: e.metadata.get("dia_id"))
                    parts.append((Query(f"{conv.sample_id}/abs{n}", "locomo", half, True,
                                        "cat5", 0), x, y))
                if half == "tune":
                    foreign = _some(foreign_questions(None, lme_folder, "locomo"),
                                    conv.sample_id, FOREIGN_PER_STORE["locomo"])
                    for n, text in enumerate(foreign):
                        x, y = pool_rows(searcher, text, lambda d: False,
                                         lambda e: e.metadata.get("dia_id"))
                        parts.append((Query(f"{conv.sample_id}/foreign{n}", "locomo", half,
                                            True, "foreign", 0), x, y))
            finally:
                memory.close()
            print(f"locomo {conv.sample_id}: {len(parts)} queries so far", file=sys.stderr)
    return _collect(parts)


def dump_longmemeval(folder: str, scratch: str, store_scratch: str, abstention: bool,
                     out: Path, only_built: bool, locomo_path: str | None) -> Rows:
    """Rows of each question, cached one file a question under ``out`` (so a dump can
    grow as ``longmemeval.py``'s stores are built: ``only_built`` skips questions whose
    store is not there yet instead of embedding their history here)."""
    import longmemeval
    from _embed_cache import CachingEmbedder
    from _longmemeval_data import load, load_one

    embedder = CachingEmbedder(Path(scratch) / "embeddings.sqlite")
    options = longmemeval.INGESTS["default"]
    stores = Path(store_scratch) / "stores" / longmemeval.store_key(options)
    questions = load(folder)
    halves = {q.question_id: q.half for q in questions}
    if abstention:
        extra = []
        for path in sorted((Path(folder) / "abstention").glob("*.json")):
            one = load_one(path)
            base = one.question_id.removesuffix("_abs")
            half = halves.get(base) or _hash_half(one.question_id)
            # one question may come with two histories (files "2_x_abs", "49_x_abs"):
            # each is its own store, named by its file
            extra.append(replace(one, question_id=path.stem, half=half))
        questions = extra
    parts: list[Rows] = []
    for number, question in enumerate(questions, 1):
        cached = out / question.question_id
        if cached.with_suffix(".npz").exists():
            parts.append(read(cached))
            continue
        if only_built and not (stores / question.question_id / "done").exists():
            continue
        started = time.perf_counter()
        store, _ = longmemeval.ingest(question, stores, embedder, options)
        with longmemeval.fresh_copy(store, embedder, options) as memory:
            searcher = Searcher(memory.ctx, SearchOptions())
            wanted = set(question.relevant)
            x, y = pool_rows(searcher, question.question, lambda t, w=wanted: t in w,
                             lambda e: e.metadata.get("turn"))
            found = [(Query(question.question_id, "lme", question.half, abstention,
                            question.question_type, len(wanted)), x, y)]
            if question.half == "tune" and not abstention:
                foreign = _some(foreign_questions(locomo_path, None, "lme"),
                                question.question_id, FOREIGN_PER_STORE["lme"])
                for n, text in enumerate(foreign):
                    x, y = pool_rows(searcher, text, lambda t: False,
                                     lambda e: e.metadata.get("turn"))
                    found.append((Query(f"{question.question_id}/foreign{n}", "lme", "tune",
                                        True, "foreign", 0), x, y))
        rows = _collect(found)
        save(rows, cached)
        parts.append(rows)
        print(f"lme {number}/{len(questions)} {question.question_id} "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    embedder.close()
    return Rows.join(parts) if parts else _collect([])


def rows_folder(scratch: Path) -> Path:
    return scratch / "rows" / rows_key()


def load_rows(scratch: Path) -> Rows:
    folder = rows_folder(scratch)
    parts = [read(folder / name) for name in ("locomo", "lme", "lme_abs")
             if (folder / f"{name}.npz").exists()]
    if not parts:
        raise SystemExit(f"no rows under {folder}: run `dump` first")
    return Rows.join(parts)


# -- models -------------------------------------------------------------------------------
def weights_of(rows: Rows, lme_share: float) -> np.ndarray:
    """Each query weighs the same within its dataset; datasets by ``lme_share``."""
    per_query = np.zeros(len(rows.queries))
    for dataset, share in (("locomo", 1.0 - lme_share), ("lme", lme_share)):
        members = [i for i, q in enumerate(rows.queries) if q.dataset == dataset]
        if members:
            per_query[members] = share / len(members)
    counts = np.bincount(rows.q, minlength=len(rows.queries)).astype(np.float64)
    w = per_query[rows.q] / np.maximum(1.0, counts[rows.q]) * 100.0
    return w * (len(w) / w.sum())


@dataclass
class Fitted:
    kind: str
    low: np.ndarray
    high: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    layers: list[tuple[np.ndarray, np.ndarray]]
    columns: np.ndarray  # which FEATURES columns are used (the rest weigh 0)

    def logits(self, x: np.ndarray) -> np.ndarray:
        z = (np.clip(x[:, self.columns], self.low, self.high) - self.mean) / self.scale
        for n, (w, b) in enumerate(self.layers):
            z = z @ w + b
            if n < len(self.layers) - 1:
                z = np.maximum(z, 0.0)
        return z[:, 0]

    def predict(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-np.clip(self.logits(x), -40, 40)))

    def export(self) -> dict[str, Any]:
        """Full-width layers: a column left out gets weight 0 (and mean 0, scale 1)."""
        width = len(F.FEATURES)
        mean, scale = np.zeros(width), np.ones(width)
        low, high = np.full(width, -1e9), np.full(width, 1e9)
        mean[self.columns], scale[self.columns] = self.mean, self.scale
        low[self.columns], high[self.columns] = self.low, self.high
        first_w, first_b = self.layers[0]
        full = np.zeros((width, first_w.shape[1]))
        full[self.columns] = first_w
        layers = [(full, first_b), *self.layers[1:]]
        return {"low": low.round(8).tolist(), "high": high.round(8).tolist(),
                "mean": mean.round(8).tolist(), "scale": scale.round(8).tolist(),
                "layers": [{"weights": w.round(8).tolist(), "bias": b.round(8).tolist()}
                           for w, b in layers]}


def fit(rows: Rows, kind: str, columns: Sequence[int] | None = None, lme_share: float = 0.5,
        strength: float = 1.0, hidden: int = 16, seed: int = SEED) -> Fitted:
    cols = np.array(columns if columns is not None else range(len(F.FEATURES)))
    x = rows.x[:, cols]
    low, high = x.min(axis=0), x.max(axis=0)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    w = weights_of(rows, lme_share)
    y = rows.y.astype(np.float64)
    if kind == "logistic":
        from sklearn.linear_model import LogisticRegression

        model = LogisticRegression(C=strength, max_iter=5000, random_state=seed)
        model.fit(z, y, sample_weight=w)
        layers = [(model.coef_.T.copy(), model.intercept_.copy())]
    elif kind == "mlp":
        layers = _fit_mlp(z, y, w, hidden, strength, seed)
    else:
        raise ValueError(kind)
    return Fitted(kind, low, high, mean, scale, layers, cols)


def _fit_mlp(z: np.ndarray, y: np.ndarray, w: np.ndarray, hidden: int, decay: float,
             seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """One hidden ReLU layer, weighted log-loss, Adam, full batch (torch, CPU)."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    net = torch.nn.Sequential(torch.nn.Linear(z.shape[1], hidden), torch.nn.ReLU(),
                              torch.nn.Linear(hidden, 1))
    xs = torch.tensor(z, dtype=torch.float32)
    ys = torch.tensor(y, dtype=torch.float32)
    ws = torch.tensor(w, dtype=torch.float32)
    opt = torch.optim.Adam(net.parameters(), lr=0.01, weight_decay=1e-4 * decay)
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    for _ in range(400):
        opt.zero_grad()
        loss = (loss_fn(net(xs)[:, 0], ys) * ws).mean()
        loss.backward()
        opt.step()
    first, last = net[0], net[2]
    return [(first.weight.detach().numpy().T.astype(np.float64),
             first.bias.detach().numpy().astype(np.float64)),
            (last.weight.detach().numpy().T.astype(np.float64),
             last.bias.detach().numpy().astype(np.float64))]


# -- measures -----------------------------------------------------------------------------
#: Greedy packing budget of the coverage proxy (tokens estimated as characters / 4).
PACK_TOKENS = 1000


def recalls(rows: Rows, scores: np.ndarray, at: Sequence[int] = RECALL_AT) -> dict[str, float]:
    """Mean recall@k over answerable queries when each pool is ordered by ``scores``
    (ties: the pool's own order, which is the fused order), and ``pack``: the share of
    evidence that greedy packing of the first 50 into ``PACK_TOKENS`` estimated tokens
    holds (a proxy of coverage@1000, from the length column)."""
    found: dict[int | str, list[float]] = {k: [] for k in at}
    found["pack"] = []
    length = rows.x[:, F.FEATURES.index("length")]
    cost = (np.expm1(length * 10.0) / 4.0 + 1.0).round()
    for i, query in enumerate(rows.queries):
        if query.absent or not query.evidence:
            continue
        members = np.flatnonzero(rows.q == i)
        order = members[np.argsort(-scores[members], kind="stable")]
        labels = rows.y[order]
        for k in at:
            found[k].append(labels[:k].sum() / query.evidence)
        left, got = PACK_TOKENS, 0
        for row in order[:50]:
            if cost[row] <= left:
                left -= cost[row]
                got += rows.y[row]
        found["pack"].append(got / query.evidence)
    return {(f"R@{k}" if k != "pack" else "pack"): 100 * float(np.mean(v)) if v else
            float("nan") for k, v in found.items()}


def log_loss(rows: Rows, p: np.ndarray) -> float:
    p = np.clip(p, 1e-7, 1 - 1e-7)
    y = rows.y
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def folds(rows: Rows, k: int = 5) -> list[np.ndarray]:
    """Query-level folds: a query's rows are all in one fold (by the SHA-256 of its id)."""
    fold_of = np.array([int(hashlib.sha256(q.qid.encode()).hexdigest()[:8], 16) % k
                        for q in rows.queries])
    return [np.flatnonzero(fold_of == f) for f in range(k)]


def cross_validated(rows: Rows, make: Callable[[Rows], Fitted]) -> np.ndarray:
    """Out-of-fold scores of every row (each fold scored by a model fitted on the rest)."""
    out = np.zeros(len(rows.y))
    for fold in folds(rows):
        inside = set(fold.tolist())
        model = make(rows.pick([i for i in range(len(rows.queries)) if i not in inside]))
        mask = np.isin(rows.q, fold)
        out[mask] = model.predict(rows.x[mask])
    return out


def by_dataset(rows: Rows, scores: np.ndarray) -> dict[str, dict[str, float]]:
    out = {}
    for dataset in ("locomo", "lme"):
        idx = [i for i, q in enumerate(rows.queries) if q.dataset == dataset]
        if not idx:
            continue
        mask = np.isin(rows.q, idx)
        part = rows.subset(lambda q, d=dataset: q.dataset == d)
        out[dataset] = recalls(part, scores[mask])
    return out


def _line(name: str, table: dict[str, dict[str, float]]) -> str:
    cells = []
    for dataset in ("locomo", "lme"):
        r = table.get(dataset, {})
        cells.append(" / ".join(f"{r.get(k, float('nan')):.1f}"
                                for k in ("R@5", "R@10", "R@20", "pack")))
    return f"{name:44s} " + "   ".join(f"{c:>25s}" for c in cells)


#: A single column printed for reference: the two engines' scores over their best, averaged.
REFERENCES = ("evidence",)
HEADER = f"{'':44s} {'LoCoMo R@5/10/20/pack':>25s}   {'LME R@5/10/20/pack':>25s}"


# -- commands -----------------------------------------------------------------------------
def cmd_dump(args: argparse.Namespace) -> None:
    folder = rows_folder(Path(args.scratch))
    if args.locomo and (args.force or not (folder / "locomo.npz").exists()):
        save(dump_locomo(args.locomo, str(Path(args.scratch) / "locomo-embed.sqlite"),
                         args.longmemeval), folder / "locomo")
    for name, absent in (("lme", False), ("lme_abs", True)):
        if not args.longmemeval or (absent and not args.abstention):
            continue
        stores = args.abstention_scratch if absent else args.lme_scratch
        rows = dump_longmemeval(args.longmemeval, args.lme_scratch, stores, absent,
                                folder / name, args.only_built, args.locomo)
        save(rows, folder / name)
        print(f"{name}: {len(rows.queries)} questions")
    print(f"rows in {folder}")


def _tune(rows: Rows) -> Rows:
    return rows.subset(lambda q: q.half == "tune")


def cmd_compare(args: argparse.Namespace) -> None:
    rows = load_rows(Path(args.scratch))
    tune = _tune(rows)
    print("5-fold query-level cross-validation on the tuning halves (out-of-fold recall)")
    print(HEADER)
    for name in REFERENCES:
        print(_line(f"one feature alone: {name}", by_dataset(tune, tune.x[:, F.FEATURES.index(name)])))
    candidates: list[tuple[str, Callable[[Rows], Fitted]]] = []
    for c in (0.03, 0.1, 0.3):
        for share in (0.2, 0.3, 0.5):
            candidates.append((f"logistic C={c} lme={share}",
                               lambda r, c=c, s=share: fit(r, "logistic", strength=c,
                                                           lme_share=s)))
    for hidden in (16,):
        for share in (0.3,):
            candidates.append((f"mlp hidden={hidden} lme={share}",
                               lambda r, h=hidden, s=share: fit(r, "mlp", hidden=h,
                                                                lme_share=s)))
    for name, make in candidates:
        if args.only and args.only not in name:
            continue
        started = time.perf_counter()
        scores = cross_validated(tune, make)
        table = by_dataset(tune, scores)
        print(_line(name, table) + f"   loss {log_loss(tune, scores):.4f}"
              f" ({time.perf_counter() - started:.0f} s)", flush=True)
    if not args.only or "trees" in args.only:
        _compare_trees(tune)


def _compare_trees(tune: Rows) -> None:
    """A small gradient-boosted tree ensemble, for the choice of family only (sklearn)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    class Trees:
        def __init__(self, rows: Rows) -> None:
            self.model = HistGradientBoostingClassifier(
                max_iter=100, max_depth=4, learning_rate=0.1, random_state=SEED)
            self.model.fit(rows.x, rows.y, sample_weight=weights_of(rows, 0.5))

        def predict(self, x: np.ndarray) -> np.ndarray:
            return self.model.predict_proba(x)[:, 1]

    scores = cross_validated(tune, Trees)  # type: ignore[arg-type]
    print(_line("trees (100 x depth 4) lme=0.5", by_dataset(tune, scores))
          + f"   loss {log_loss(tune, scores):.4f}")


def final_model(rows: Rows, args: argparse.Namespace,
                columns: Sequence[int] | None = None) -> Fitted:
    return fit(_tune(rows), args.kind, columns, lme_share=args.lme_share,
               strength=args.strength, hidden=args.hidden, seed=args.seed)


def cmd_train(args: argparse.Namespace) -> None:
    rows = load_rows(Path(args.scratch))
    model = final_model(rows, args)
    print(HEADER)
    for half in ("tune", "hold"):
        part = rows.subset(lambda q, h=half: q.half == h)
        for name in REFERENCES:
            print(_line(f"{half}: {name} alone", by_dataset(part, part.x[:, F.FEATURES.index(name)])))
        print(_line(f"{half}: {args.kind}", by_dataset(part, model.predict(part.x))))
    if args.write:
        tune = _tune(rows)
        body = {
            "format": 1,
            "version": Path(args.write).stem,
            "kind": args.kind,
            "features": list(F.FEATURES),
            **model.export(),
            "trained_on": {
                "rows_key": rows_key(),
                "queries": {d: sum(1 for q in tune.queries if q.dataset == d)
                            for d in ("locomo", "lme")},
                "absent_answer_queries": sum(1 for q in tune.queries if q.absent),
                "rows": len(tune.y), "positives": int(tune.y.sum()),
            },
            "command": "benchmarks/train_ranker.py train " + " ".join(
                f"--{k.replace('_', '-')} {v}" for k, v in
                (("kind", args.kind), ("hidden", args.hidden), ("strength", args.strength),
                 ("lme_share", args.lme_share), ("seed", args.seed))),
        }
        Path(args.write).write_text(json.dumps(body, separators=(",", ":")) + "\n")
        print(f"wrote {args.write} ({Path(args.write).stat().st_size} bytes)")


def cmd_ablate(args: argparse.Namespace) -> None:
    rows = load_rows(Path(args.scratch))
    hold = rows.subset(lambda q: q.half == "hold")
    tune = _tune(rows)
    print("each feature group left out (fitted on tune; tune out-of-fold | hold)")
    print(f"{'':44s} {'LoCoMo R@5/10/20 tune | hold':>34s}   {'LME R@5/10/20 tune | hold':>34s}")
    for name, group in [("all features", ()), *F.GROUPS.items()]:
        columns = [i for i, f in enumerate(F.FEATURES) if f not in group]
        model = final_model(rows, args, columns)
        oof = cross_validated(tune, lambda r, c=columns: fit(
            r, args.kind, c, lme_share=args.lme_share, strength=args.strength,
            hidden=args.hidden, seed=args.seed))
        t, h = by_dataset(tune, oof), by_dataset(hold, model.predict(hold.x))
        cells = []
        for dataset in ("locomo", "lme"):
            a, b = t.get(dataset, {}), h.get(dataset, {})
            cells.append(" / ".join(f"{a.get(k, 0):.1f}" for k in ("R@5", "R@10", "R@20"))
                         + " | " + " / ".join(f"{b.get(k, 0):.1f}"
                                             for k in ("R@5", "R@10", "R@20")))
        label = name if not group else f"- {name}"
        print(f"{label:44s} " + "   ".join(f"{c:>34s}" for c in cells), flush=True)


def threshold_table(rows: Rows, scores: np.ndarray, cuts: Sequence[float],
                    top: int = 10) -> dict[float, tuple[float, float, float]]:
    """At each cut: (evidence in the first ``top`` kept, absent-answer hits in the first
    ``top`` dropped, absent-answer queries whose best hit is dropped), in percent."""
    evidence_scores: list[float] = []
    absent_scores: list[float] = []
    absent_best: list[float] = []
    for i, query in enumerate(rows.queries):
        if query.group == "foreign":
            continue
        members = np.flatnonzero(rows.q == i)
        order = members[np.argsort(-scores[members], kind="stable")][:top]
        if query.absent:
            absent_scores += scores[order].tolist()
            if len(order):
                absent_best.append(float(scores[order[0]]))
        else:
            evidence_scores += scores[order][rows.y[order] == 1].tolist()
    ev, ab, best = map(np.array, (evidence_scores, absent_scores, absent_best))
    return {c: (100 * float((ev >= c).mean()) if len(ev) else math.nan,
                100 * float((ab < c).mean()) if len(ab) else math.nan,
                100 * float((best < c).mean()) if len(best) else math.nan) for c in cuts}


def cmd_thresholds(args: argparse.Namespace) -> None:
    rows = load_rows(Path(args.scratch))
    model = final_model(rows, args)
    cuts = [float(c) for c in args.cuts.split(",")]
    for dataset in ("locomo", "lme"):
        for half in ("tune", "hold"):
            part = rows.subset(lambda q, d=dataset, h=half: q.dataset == d and q.half == h)
            if not part.queries:
                continue
            table = threshold_table(part, model.predict(part.x), cuts)
            absent = sum(1 for q in part.queries if q.absent and q.group != "foreign")
            answerable = sum(1 for q in part.queries if not q.absent)
            print(f"{dataset} {half} ({answerable} answerable, {absent} "
                  "absent-answer queries): min_score -> evidence kept / absent hits "
                  "dropped / absent best hit dropped")
            for c, (kept, dropped, best) in table.items():
                print(f"  {c:5.2f}: {kept:5.1f} / {dropped:5.1f} / {best:5.1f}")


def cmd_cost(args: argparse.Namespace) -> None:
    """What the learned ranker adds to a query, on a LoCoMo conversation's store: the
    model alone (``probabilities`` over the pool's rows), the rows (``features.build``
    over candidates already read), and the whole ``ranker_pool`` + model against the
    hand-tuned path, for pools as search (``top_k`` 10) and curate (2,000 tokens) ask."""
    import statistics

    import locomo
    from _locomo_data import load

    from tulving.application.retrieval import ranker
    from tulving.application.retrieval.search import build_filter

    locomo.EMBED_CACHE = str(Path(args.scratch) / "locomo-embed.sqlite")
    conv = load(args.locomo, 1)[0]
    model = ranker.load()
    with tempfile.TemporaryDirectory(prefix="tulving-ranker-") as tmp:
        memory, _ = locomo.ingest(conv, Path(tmp))
        flt = build_filter(memory.ctx)
        questions = [q.text for q in conv.questions]
        for pool_size, label in ((50, "search top_k 10"), (83, "curate 2,000 tokens")):
            learned, fused = Searcher(memory.ctx), Searcher(memory.ctx, SearchOptions.fused())
            times: dict[str, list[float]] = {"model": [], "rows": [], "learned": [],
                                             "fused": []}
            build = F.build

            def timed_build(*a: Any, sink: list[float] = times["rows"],
                            inner: Any = build) -> F.Pool:
                began = time.perf_counter()
                try:
                    return inner(*a)  # type: ignore[no-any-return]
                finally:
                    sink.append(time.perf_counter() - began)

            F.build = timed_build  # type: ignore[assignment]
            sizes = []
            for q in questions:
                learned.query_vector(q)
                fused.query_vector(q)
            for n, q in enumerate(questions):
                for path in (("learned", "fused") if n % 2 else ("fused", "learned")):
                    searcher = learned if path == "learned" else fused
                    began = time.perf_counter()
                    searcher.ranked_ids(q, "hybrid", flt, pool_size // 2, {}, pool=pool_size)
                    times[path].append(time.perf_counter() - began)
                pool = learned.ranker_pool(q, flt, pool_size, {})
                sizes.append(len(pool.ids))
                began = time.perf_counter()
                model.probabilities(pool.matrix)
                times["model"].append(time.perf_counter() - began)
            F.build = build  # type: ignore[assignment]
            cells = ", ".join(f"{k} p50 {1000 * statistics.median(v):.2f} / p95 "
                              f"{1000 * sorted(v)[int(0.95 * (len(v) - 1))]:.2f} ms"
                              for k, v in times.items())
            print(f"{label}: {statistics.mean(sizes):.0f} candidates a query; {cells}")
        memory.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    dump = sub.add_parser("dump", help="search every question once and keep its rows")
    dump.add_argument("--locomo", default=None, help="locomo_dev.json")
    dump.add_argument("--longmemeval", default=None, help="longmemeval_s_dev folder")
    dump.add_argument("--abstention", action="store_true",
                      help="also the abstention/ questions of --longmemeval")
    dump.add_argument("--lme-scratch", default=str(Path(os.environ.get(
        "XDG_CACHE_HOME", Path.home() / ".cache")) / "tulving-benchmarks/longmemeval"),
        help="longmemeval.py's cache (its stores and embeddings are reused)")
    dump.add_argument("--abstention-scratch", default=str(DEFAULT_SCRATCH / "longmemeval"),
                      help="where the abstention questions' stores are built (their "
                           "model vectors are memoised in --lme-scratch's cache)")
    dump.add_argument("--only-built", action="store_true",
                      help="LongMemEval_S: only questions whose store --lme-scratch has")
    dump.add_argument("--force", action="store_true")
    cost = sub.add_parser("cost", help="what the ranker adds to a query (LoCoMo store)")
    cost.add_argument("--locomo", required=True, help="locomo_dev.json")
    for name in ("compare", "train", "ablate", "thresholds"):
        p = sub.add_parser(name)
        p.add_argument("--kind", default="mlp", choices=["logistic", "mlp"])
        p.add_argument("--hidden", type=int, default=16)
        p.add_argument("--strength", type=float, default=1.0,
                       help="logistic: C; mlp: weight-decay multiplier")
        p.add_argument("--lme-share", type=float, default=0.5)
        p.add_argument("--seed", type=int, default=SEED)
        if name == "compare":
            p.add_argument("--only", default=None, help="rows whose name holds this")
        if name == "train":
            p.add_argument("--write", default=None, help="model file to write")
        if name == "thresholds":
            p.add_argument("--cuts", default="0.02,0.05,0.1,0.15,0.2,0.3,0.4,0.5")
    for p in sub.choices.values():
        p.add_argument("--scratch", default=str(DEFAULT_SCRATCH),
                       help=f"rows cache outside the repo (default {DEFAULT_SCRATCH})")
    args = parser.parse_args(argv)
    {"dump": cmd_dump, "compare": cmd_compare, "train": cmd_train, "ablate": cmd_ablate,
     "thresholds": cmd_thresholds, "cost": cmd_cost}[args.command](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
