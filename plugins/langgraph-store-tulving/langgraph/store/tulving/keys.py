"""The rule that maps a LangGraph item address (namespace, key) onto a Tulving key and tags.

LangGraph addresses an item by a namespace (a tuple of labels: any non-empty strings
without ``.``) and a key (any string). Tulving keys follow a narrower grammar (ASCII
letters, digits and ``. _ : / -``, at most 200 characters, no ``//`` or ``..``), so each
label is escaped on its own and the escaped labels are joined with ``/``:

- ``A-Z a-z 0-9 _ -`` are kept; every other character becomes ``:XX`` per UTF-8 byte
  (``"user@example.com"`` -> ``user:40example:2Ecom``), so ``:`` and ``.`` never appear
  unescaped and the mapping is reversible;
- an empty item key becomes ``.``;
- the Tulving key is ``langgraph/<label>/.../<key>``; one longer than 200 characters is
  replaced by ``langgraph/.h/<sha256 of the address>`` (the address itself is always kept
  verbatim in the entry's metadata, which stays the source of truth).

Namespace prefixes are found through tags, one per prefix depth (the empty prefix
included), hashed so that any label fits Tulving's tag rules. Items that are indexed for
search (``index`` not ``False``) carry the ``lgns:`` family and unindexed items the
``lgnx:`` family: Tulving's tag filter matches any of the tags given, so a query search
asks for ``lgns:<prefix>`` alone and a listing for both.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from langgraph.store.base import InvalidNamespaceError

ROOT = "langgraph"
#: Tulving's key length limit.
MAX_KEY = 200
#: Tulving keeps at most 32 tags an entry: one per prefix depth (0..depth) and ``ttl``.
MAX_DEPTH = 30
TTL_TAG = "lgttl"
_KEPT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_HASHED = ".h"


def encode_label(label: str) -> str:
    """One namespace label or item key as one Tulving key segment (reversible)."""
    if label == "":
        return "."
    out: list[str] = []
    for ch in label:
        if ch in _KEPT:
            out.append(ch)
        else:
            out.extend(f":{byte:02X}" for byte in ch.encode("utf-8"))
    return "".join(out)


def decode_label(segment: str) -> str:
    """The inverse of :func:`encode_label`."""
    if segment == ".":
        return ""
    raw = bytearray()
    i = 0
    while i < len(segment):
        if segment[i] == ":":
            raw.append(int(segment[i + 1 : i + 3], 16))
            i += 3
        else:
            raw.extend(segment[i].encode("ascii"))
            i += 1
    return raw.decode("utf-8")


def check_depth(namespace: Sequence[str]) -> None:
    if len(namespace) > MAX_DEPTH:
        raise InvalidNamespaceError(
            f"Namespace {tuple(namespace)} is {len(namespace)} labels deep; "
            f"the Tulving store keeps at most {MAX_DEPTH}.")


def memory_key(namespace: Sequence[str], key: str) -> str:
    """The Tulving key of the item ``key`` in ``namespace``."""
    path = "/".join([ROOT, *(encode_label(label) for label in namespace), encode_label(key)])
    if len(path) <= MAX_KEY:
        return path
    digest = hashlib.sha256(json.dumps([list(namespace), key]).encode("utf-8")).hexdigest()
    return f"{ROOT}/{_HASHED}/{digest}"


def key_prefix(namespace: Sequence[str]) -> str:
    """The prefix every (unhashed) Tulving key under ``namespace`` starts with."""
    return "/".join([ROOT, *(encode_label(label) for label in namespace)]) + "/"


def parse_memory_key(tulving_key: str) -> tuple[tuple[str, ...], str] | None:
    """(namespace, key) back from a Tulving key; None for a hashed (over-long) one."""
    segments = tulving_key.split("/")
    if len(segments) < 3 or segments[0] != ROOT or segments[1] == _HASHED:
        return None
    *labels, key = segments[1:]
    return tuple(decode_label(s) for s in labels), decode_label(key)


def _digest(prefix: Sequence[str]) -> str:
    return hashlib.sha256(json.dumps(list(prefix)).encode("utf-8")).hexdigest()[:20]


def indexed_tag(prefix: Sequence[str]) -> str:
    """The tag every indexed item under ``prefix`` carries."""
    return f"lgns:{_digest(prefix)}"


def unindexed_tag(prefix: Sequence[str]) -> str:
    """The tag every unindexed (``index=False``) item under ``prefix`` carries."""
    return f"lgnx:{_digest(prefix)}"


def item_tags(namespace: Sequence[str], *, indexed: bool, ttl: bool) -> list[str]:
    tag = indexed_tag if indexed else unindexed_tag
    tags = [tag(namespace[:depth]) for depth in range(len(namespace) + 1)]
    if ttl:
        tags.append(TTL_TAG)
    return tags
