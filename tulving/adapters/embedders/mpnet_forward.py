"""The forward pass of MPNet (all-mpnet-base-v2) in numpy, from its safetensors weights.

Why numpy and not torch or onnxruntime: the weights ship as a safetensors file inside
registry packages; running them with torch means a 1.3 GB dependency (and a 64 s cold
load), and running them with onnxruntime means exporting the graph with torch first. The
model is twelve ordinary transformer layers whose matrix products numpy hands to BLAS,
so the forward pass needs nothing but numpy, loads in well under a second from a
memory-mapped file, and matches the sentence-transformers model (cosine >= 0.99999 on
the check sentences, ``tests/integration/test_strong_model.py``). Measured against the
fp32 ONNX export on 2 cores: see ``benchmarks/embedders.py --strong``.

The layers follow ``transformers``' ``MPNetModel`` exactly: word + absolute position
embeddings (positions counted from the padding id + 1), then per layer self-attention
with a relative position bias shared by all layers (T5-style buckets), residual and
LayerNorm, a GELU feed-forward block, residual and LayerNorm.
"""

from __future__ import annotations

import json
import math
import mmap
import struct
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float32]

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(path: Path) -> dict[str, npt.NDArray[np.generic]]:
    """Every tensor of a safetensors file as a read-only view of one memory map (nothing
    is copied: opening the 438 MB file costs a page-table entry, not a read)."""
    with path.open("rb") as handle:
        (header_size,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(header_size))
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    start = 8 + header_size
    tensors: dict[str, npt.NDArray[np.generic]] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        begin, end = spec["data_offsets"]
        dtype = _DTYPES[spec["dtype"]]
        array = np.frombuffer(mapped, dtype=dtype, count=(end - begin) // np.dtype(dtype).itemsize,
                              offset=start + begin)
        tensors[name] = array.reshape(spec["shape"])
    return tensors


def _erf(x: Array) -> Array:
    """erf to float32 precision (Abramowitz & Stegun 7.1.26 refined: max error 1.2e-7),
    so the exact GELU the model was trained with needs no scipy."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * a)
    # Numerical Recipes' erfc approximation (fractional error < 1.2e-7 everywhere).
    poly = -a * a - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    out: Array = (sign * (1.0 - t * np.exp(poly))).astype(np.float32, copy=False)
    return out


def _gelu(x: Array) -> Array:
    out: Array = (0.5 * x * (1.0 + _erf(x * np.float32(1.0 / math.sqrt(2.0))))).astype(
        np.float32, copy=False)
    return out


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    out: Array = centred / np.sqrt(variance + np.float32(eps)) * weight + bias
    return out


def _relative_buckets(length: int, num_buckets: int, max_distance: int) -> npt.NDArray[np.int64]:
    """The T5-style bucket of each (query, key) offset, as ``MPNetEncoder`` computes it."""
    context = np.arange(length)[:, None]
    memory = np.arange(length)[None, :]
    n = -(memory - context)
    half = num_buckets // 2
    buckets = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    max_exact = half // 2
    with np.errstate(divide="ignore"):
        large = max_exact + (
            np.log(np.maximum(n, 1).astype(np.float32) / max_exact)
            / math.log(max_distance / max_exact) * (half - max_exact)
        ).astype(np.int64)
    large = np.minimum(large, half - 1)
    out: npt.NDArray[np.int64] = buckets + np.where(n < max_exact, n, large)
    return out


class MPNet:
    """One loaded MPNet encoder: ``hidden(ids, mask)`` gives the last hidden states."""

    def __init__(self, weights: Mapping[str, npt.NDArray[np.generic]], config: Mapping[str, object]
                 ) -> None:
        self._w = weights
        self._layers = int(str(config["num_hidden_layers"]))
        self._heads = int(str(config["num_attention_heads"]))
        self._hidden = int(str(config["hidden_size"]))
        self._eps = float(str(config["layer_norm_eps"]))
        self._pad = int(str(config["pad_token_id"]))
        self._buckets = int(str(config["relative_attention_num_buckets"]))
        self._bias_cache: dict[int, Array] = {}

    @classmethod
    def from_folder(cls, folder: Path) -> MPNet:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        return cls(read_safetensors(folder / "model.safetensors"), config)

    def _f(self, name: str) -> Array:
        array: Array = self._w[name]  # type: ignore[assignment]
        return array

    def _position_bias(self, length: int) -> Array:
        cached = self._bias_cache.get(length)
        if cached is None:
            table = self._f("encoder.relative_attention_bias.weight")  # (buckets, heads)
            buckets = _relative_buckets(length, self._buckets, 128)
            cached = np.ascontiguousarray(table[buckets].transpose(2, 0, 1))  # (heads, q, k)
            if len(self._bias_cache) < 64:
                self._bias_cache[length] = cached
        return cached

    def hidden(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64]) -> Array:
        """Last hidden states, shape (batch, length, hidden), for right-padded ids."""
        batch, length = ids.shape
        keep = ids != self._pad
        positions = np.cumsum(keep, axis=1) * keep + self._pad
        x = self._f("embeddings.word_embeddings.weight")[ids] + self._f(
            "embeddings.position_embeddings.weight")[positions]
        x = _layer_norm(x, self._f("embeddings.LayerNorm.weight"),
                        self._f("embeddings.LayerNorm.bias"), self._eps)
        bias = self._position_bias(length)[None, :, :, :]
        blocked = np.where(mask[:, None, None, :] > 0, np.float32(0.0),
                           np.float32(np.finfo(np.float32).min))
        scores_bias = (bias + blocked).astype(np.float32)
        head = self._hidden // self._heads
        scale = np.float32(1.0 / math.sqrt(head))
        for layer in range(self._layers):
            p = f"encoder.layer.{layer}."
            flat = x.reshape(batch * length, self._hidden)

            def project(name: str, source: Array, p: str = p) -> Array:
                out: Array = source @ self._f(p + name + ".weight").T + self._f(p + name + ".bias")
                return out

            def split(t: Array) -> Array:
                out: Array = t.reshape(batch, length, self._heads, head).transpose(0, 2, 1, 3)
                return out

            q = split(project("attention.attn.q", flat))
            k = split(project("attention.attn.k", flat))
            v = split(project("attention.attn.v", flat))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + scores_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, self._hidden)
            attended = _layer_norm(project("attention.attn.o", context) + flat,
                                   self._f(p + "attention.LayerNorm.weight"),
                                   self._f(p + "attention.LayerNorm.bias"), self._eps)
            inner = _gelu(project("intermediate.dense", attended))
            x = _layer_norm(project("output.dense", inner) + attended,
                            self._f(p + "output.LayerNorm.weight"),
                            self._f(p + "output.LayerNorm.bias"), self._eps
                            ).reshape(batch, length, self._hidden)
        return x
