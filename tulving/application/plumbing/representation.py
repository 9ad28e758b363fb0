"""Embedding entries as they are indexed: each one leaning toward what was written just
before it.

Every path that gives an entry a vector (a write, an import that re-embeds, re-embedding
after a model change or for entries written without one) goes through :func:`embed_entries`,
so the index holds one kind of vector whichever path wrote it. The rule and its reasons
are in :mod:`tulving.domain.representation`.

"Just before" is write order (ids sort by creation time) among the entries of the same
partition recorded at the same event time (``valid_from``): the turns of one conversation
session stored together, the steps of one task. Those in the same batch are read from the
batch; the first of a group in a batch reads the ones already stored (``Storage.adjacent``
for an entry that is stored, the newest of its event time for one that is not yet).
"""

from __future__ import annotations

import bisect
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs
import numpy as np

from tulving.application.plumbing import deadline
from tulving.application.plumbing.context import MemoryContext
from tulving.domain.entry import MemoryEntry
from tulving.domain.query import EntryFilter
from tulving.domain.representation import context_weight

Group = tuple[str, datetime]

#: The meta row that records which rule built a store's vectors.
REPRESENTATION_META = "vector_representation"
#: Raised whenever the rule that turns an entry into a vector changes, so a store whose
#: vectors an older rule built can say so (``vector_sync.note_representation``) and be
#: re-embedded on request (``maintenance("reembed")``). 2: long texts are read in windows
#: and the context is bounded (before, both were cut at the model's 256 tokens). 3: the
#: context is mixed in from the predecessors' own vectors, no second model pass.
RULE = 3


def representation_id(window: int) -> str:
    """What built a vector besides the model: the rule's version and the context window."""
    return f"rule-{RULE};context-{window}"


#: Texts embedded per call: between calls a call's deadline is checked (a write of
#: thousands of memories stops within one batch of its time limit).
EMBED_BATCH = 256


#: Plain vectors of the entries embedded last, so a writer that stores a session in
#: several batches (``remember()``: the turns, then what the rules read off them) mixes
#: the context of a batch's first entries from vectors it computed a moment ago instead of
#: running the model over those predecessors again (long turns: the most costly texts).
#: Keyed by model, id and content hash: a text under an id never changes, and a store
#: written by another process simply misses.
PLAIN_KEPT = 512
_plain_lock = threading.Lock()
_recent_plain: OrderedDict[tuple[str, str, str], np.ndarray] = OrderedDict()


def _plain_key(embedder: Any, entry_id: str, content: str) -> tuple[str, str, str]:
    digest = hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=16)
    return (str(embedder.model_id), entry_id, digest.hexdigest())


def _keep_plain(embedder: Any, items: Sequence[tuple[str, str]], rows: np.ndarray) -> None:
    with _plain_lock:
        for (entry_id, content), row in zip(items, rows, strict=True):
            key = _plain_key(embedder, entry_id, content)
            _recent_plain[key] = row
            _recent_plain.move_to_end(key)
        while len(_recent_plain) > PLAIN_KEPT:
            _recent_plain.popitem(last=False)


def _kept_plain(embedder: Any, entry_id: str, content: str) -> np.ndarray | None:
    with _plain_lock:
        return _recent_plain.get(_plain_key(embedder, entry_id, content))


def _embed(embedder: Any, texts: list[str]) -> np.ndarray:
    if len(texts) <= EMBED_BATCH:
        return np.asarray(embedder.embed(texts), dtype=np.float32)
    parts = []
    for start in range(0, len(texts), EMBED_BATCH):
        deadline.check("embedding")
        parts.append(np.asarray(embedder.embed(texts[start:start + EMBED_BATCH]),
                                dtype=np.float32))
    return np.concatenate(parts)


def embed_entries(ctx: MemoryContext, entries: Sequence[MemoryEntry]) -> np.ndarray:
    """One vector row per entry, in order (the embedder must be configured).

    Each content goes through the model once; the context is mixed in from the plain
    vectors of the entries written just before it (:func:`mix`), never by a second
    model pass over a longer text. Predecessors in the same batch are already embedded;
    a predecessor already stored takes the plain vector this process computed for it
    when it is among the last ``PLAIN_KEPT`` (a session written in several batches),
    else it is embedded again (storage keeps only the mixed vector), at most ``window``
    of them per group and batch.
    """
    embedder = ctx.embedder
    assert embedder is not None
    plain = _embed(embedder, [e.content for e in entries])
    window = ctx.context_window
    if window <= 0 or not entries:
        return plain
    _keep_plain(embedder, [(e.id, e.content) for e in entries], plain)
    before = [items if context_weight(len(entry.content)) > 0 else []  # a long one: none
              for entry, items in zip(entries, _preceding(ctx, entries, window), strict=True)]
    position = {e.id: i for i, e in enumerate(entries)}
    outside = sorted({item for items in before for item in items if item[0] not in position})
    row_of: dict[str, np.ndarray] = {}
    missing = []
    for entry_id, content in outside:
        kept = _kept_plain(embedder, entry_id, content)
        if kept is None:
            missing.append((entry_id, content))
        else:
            row_of[entry_id] = kept
    if missing:
        extra = _embed(embedder, [content for _, content in missing])
        row_of.update((entry_id, extra[i]) for i, (entry_id, _) in enumerate(missing))
    out = plain.copy()
    for i, items in enumerate(before):
        if not items:
            continue
        context = [plain[position[e]] if e in position else row_of[e] for e, _ in items]
        out[i] = mix(plain[i], context, len(entries[i].content))
    return out


def mix(plain: np.ndarray, context: Sequence[np.ndarray], length: int = 0) -> np.ndarray:
    """The unit-length sum of a memory's own vector and ``context_weight(length)`` times each
    of its predecessors' own vectors (see :mod:`tulving.domain.representation`); ``length``
    is the memory's own length in characters."""
    weight = context_weight(length)
    mixed = np.asarray(plain, dtype=np.float64).copy()
    for row in context:
        mixed += weight * np.asarray(row, dtype=np.float64)
    norm = float(np.linalg.norm(mixed))
    unit: np.ndarray = (mixed / (norm or 1.0)).astype(np.float32)
    return unit


def _preceding(
    ctx: MemoryContext, entries: Sequence[MemoryEntry], window: int
) -> list[list[tuple[str, str]]]:
    """Per entry, (id, content) of up to ``window`` entries written just before it in its
    group, oldest first."""
    seen: dict[Group, list[tuple[str, str]]] = {}  # group -> (id, content) in id order
    out: list[list[tuple[str, str]]] = [[] for _ in entries]
    for i in sorted(range(len(entries)), key=lambda j: entries[j].id):
        entry = entries[i]
        group = (entry.partition, entry.valid_from)
        if group not in seen:
            seen[group] = _stored_before(ctx, entry, window)
        known = seen[group]  # in id order: the stored ones, then this batch's so far
        end = bisect.bisect_left(known, (entry.id,))
        out[i] = known[max(0, end - window):end]
        known.insert(end, (entry.id, entry.content))
    return out


def _stored_before(ctx: MemoryContext, entry: MemoryEntry, window: int) -> list[tuple[str, str]]:
    """Up to ``window`` stored entries of ``entry``'s group written before it, oldest first."""
    storage = ctx.storage
    flt = EntryFilter(partitions=(entry.partition,))
    around = storage.adjacent([entry.id], flt)
    if entry.id not in around:  # not stored yet: every stored entry of its time is older
        newest = storage.query(attrs.evolve(flt, since=entry.valid_from,
                                            until=entry.valid_from),
                               limit=window, newest_first=True)
        return sorted((e.id, e.content) for e in newest if e.id < entry.id)
    ids: list[str] = []  # stored (re-embedding): walk back one neighbour at a time
    current = entry.id
    while len(ids) < window:
        earlier = [i for i in around.get(current, ()) if i < current]
        if not earlier:
            break
        current = earlier[0]  # adjacent gives at most one entry on each side
        ids.append(current)
        around = storage.adjacent([current], flt) if len(ids) < window else {}
    found = {e.id: e.content for e in storage.get_many(ids)}
    return [(i, found[i]) for i in reversed(ids) if i in found]
