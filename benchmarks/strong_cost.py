"""What the strong tier's encoder costs against the fast one, in the same run.

Usage::

    .venv/bin/python benchmarks/strong_cost.py [--threads N]

The same 30 queries and 30 conversation turns (LoCoMo-like, ~20 words) through MiniLM
int8 (the default embedder) and all-mpnet-base-v2 (the strong tier, numpy): one query at
a time (p50 / p95), and the turns in one batch. ``--threads`` sets mpnet's BLAS threads
(the adapter's ``threads``; default 1). Print ``uptime`` beside the figures: on shared
cores the ratios are what to read.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

# onnxruntime before anything that may load usearch (see tests/conftest.py)
import onnxruntime  # noqa: F401  # isort: skip

from tulving.adapters.embedders.local_onnx import LocalOnnxEmbedder
from tulving.adapters.embedders.mpnet import MPNetEmbedder

TOPICS = ["race", "book", "dog", "trip", "job", "garden", "party", "class", "film", "song"]
QUERIES = [f"what did Caroline say about the {w} last week?" for w in TOPICS] * 3
TURNS = [f"[08 May 2023] Caroline: I went to the {w} number {i} with my friends and it "
         "was great fun, we stayed late." for i, w in enumerate(TOPICS * 3)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    for name, model in (("minilm", LocalOnnxEmbedder()),
                        ("mpnet", MPNetEmbedder(threads=args.threads))):
        model.embed_query("warm up")
        model.embed(TURNS[:4])
        took = []
        for query in QUERIES:
            started = time.perf_counter()
            model.embed_query(query)
            took.append(time.perf_counter() - started)
        started = time.perf_counter()
        model.embed(TURNS)
        batch = time.perf_counter() - started
        print(f"{name}: query p50 {1000 * statistics.median(took):.1f} ms, p95 "
              f"{1000 * float(np.percentile(took, 95)):.1f} ms; {len(TURNS)} turns "
              f"{batch:.2f} s ({len(TURNS) / batch:.1f}/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
