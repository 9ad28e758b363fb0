"""Synthetic corpora for the scale benchmarks, generated offline and deterministically.

Two kinds, because full-text cost depends on the vocabulary far more than on Tulving:

- ``realistic`` (the default): words drawn from a Zipf distribution (s = 1.07, as in
  English prose) over ~21,000 English words. The rank order is the vocabulary order of the
  all-MiniLM-L6-v2 WordPiece vocabulary shipped with Tulving (roughly frequency order),
  with English stop words first. Memories have 8-40 words; queries have 2-6 content words
  (stop-word ranks excluded), like a question an agent asks. A query term then matches
  about 0.1-3 % of the store, as in real text.
- ``narrow``: the earlier template corpora (tens of distinct words). Every query term
  matches a large share of the store, so bm25 itself has to score tens of thousands of
  rows per query; useful as a worst case for the full-text engine, not as a picture of an
  agent's memory.
"""

from __future__ import annotations

import json
import random
import sys
import time
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tulving.domain.lexical import STOP_WORDS

_VOCAB_FILE = (Path(__file__).resolve().parents[1] / "tulving" / "adapters" / "embedders"
               / "data" / "minilm_tokenizer.json")
ZIPF_S = 1.07
#: The commonest English words, in frequency order (the head of any English word count).
_MOST_FREQUENT = ("the of and to a in is that it for was on with as he be by at his i you "
                  "this had not are but from or have an they which she her we there been "
                  "one all were their has would when what if will so no can who more out "
                  "up about them into than its some could him then do only other my these "
                  "me over our your after most did such how where any should through why "
                  "before very those here same each both while under few own off until "
                  "again being against").split()
#: Ranks below this are stop words and very common words, left out of queries.
QUERY_MIN_RANK = 150


@cache
def vocabulary() -> tuple[str, ...]:
    vocab = json.loads(_VOCAB_FILE.read_text(encoding="utf-8"))["model"]["vocab"]
    ordered = sorted(vocab.items(), key=lambda item: item[1])
    words = [w for w, _ in ordered if w.isascii() and w.isalpha() and len(w) > 1]
    head = [w for w in _MOST_FREQUENT if w in STOP_WORDS]
    stops = head + sorted(w for w in STOP_WORDS if w.isalpha() and w not in head)
    return tuple(stops + [w for w in words if w not in STOP_WORDS])


@cache
def _cumulative(min_rank: int) -> np.ndarray:
    ranks = np.arange(1, len(vocabulary()) + 1, dtype=np.float64)
    weights = ranks ** -ZIPF_S
    weights[:min_rank] = 0.0
    cumulative = np.cumsum(weights)
    return cumulative / cumulative[-1]


def _draw(rng: np.random.Generator, count: int, min_rank: int = 0) -> list[str]:
    vocab = vocabulary()
    picks = np.searchsorted(_cumulative(min_rank), rng.random(count), side="right")
    return [vocab[min(int(i), len(vocab) - 1)] for i in picks]


def realistic_texts(n: int, seed: int = 7) -> list[str]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(8, 41, size=n)
    out = []
    for i, length in enumerate(lengths):
        words = _draw(rng, int(length))
        out.append(" ".join(words).capitalize() + f". (note {i})")
    return out


def realistic_queries(n: int, seed: int = 11) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(_draw(rng, int(rng.integers(2, 7)), QUERY_MIN_RANK)) for _ in range(n)]


# the narrow template corpus ------------------------------------------------------------
_SUBJECTS = ["the team", "Alice", "Bob", "the agent", "our client", "Priya", "the on-call",
             "Marcus", "the auditor", "the scheduler", "Chen", "the billing job"]
_VERBS = ["decided to", "agreed to", "failed to", "planned to", "refused to", "tried to",
          "remembered to", "forgot to", "started to", "needs to"]
_ACTIONS = ["migrate", "rotate", "deploy", "archive", "review", "benchmark", "refactor",
            "rename", "document", "monitor", "throttle", "shard", "cache", "encrypt"]
_OBJECTS = ["the ledger database", "the auth tokens", "the nightly export", "the search index",
            "the invoice service", "the staging cluster", "the feature flags", "the audit log",
            "the upload bucket", "the payment webhook", "the user profiles", "the ML pipeline",
            "the email templates", "the rate limiter", "the backup policy", "the API gateway"]
_WHEN = ["on Monday", "after the outage", "before the release", "next sprint", "last week",
         "in March", "by Friday", "during the freeze", "after review", "tomorrow"]
_WHY = ["because latency doubled", "to cut costs", "for compliance", "after a customer report",
        "since the vendor changed", "to unblock the mobile team", "as the SLO requires",
        "because tests were flaky", "to reduce on-call load", "after the security review"]


def narrow_texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        sentence = (f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_ACTIONS)} "
                    f"{rng.choice(_OBJECTS)} {rng.choice(_WHEN)} {rng.choice(_WHY)}")
        if rng.random() < 0.4:
            sentence += f"; ticket {rng.randint(100, 99999)} tracks it"
        if rng.random() < 0.3:
            sentence += (f" and {rng.choice(_SUBJECTS)} will {rng.choice(_ACTIONS)} "
                         f"{rng.choice(_OBJECTS)}")
        out.append(f"{sentence} (note {i})")
    return out


def narrow_queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [f"why did {rng.choice(_SUBJECTS)} {rng.choice(_ACTIONS)} {rng.choice(_OBJECTS)}"
            for _ in range(n)]


CORPORA = {"realistic": (realistic_texts, realistic_queries),
           "narrow": (narrow_texts, narrow_queries)}


def mirror_choice(text: str) -> object:
    """``--fulltext-mirror-from``: 'default', 'none' or a row count."""
    return text if text == "default" else None if text == "none" else int(text)


def storage_options(mirror_from: object) -> dict[str, dict[str, object]] | None:
    """Memory options that set the SQLite full-text mirror threshold (None: the default)."""
    return None if mirror_from == "default" else {
        "storage": {"fulltext_mirror_from": mirror_from}}


def wait_for_mirror(memory: Any) -> None:
    """Let the full-text mirror finish building before anything is timed, and say
    whether full-text queries go through it or through FTS5."""
    ready = getattr(memory.ctx.storage, "fulltext_mirror_ready", None)
    started = time.perf_counter()
    used = bool(ready and ready(None))
    took = time.perf_counter() - started
    how = f"in-memory mirror of the FTS5 index (built in {took:.1f} s)" if used else "FTS5"
    print(f"full-text queries: {how}", file=sys.stderr)
