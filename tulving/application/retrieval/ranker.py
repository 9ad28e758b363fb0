"""The learned ranker's model: a small network read from a versioned file in the package.

The file (``tulving/data/ranker-v1.json``, a few kilobytes) is written by
``benchmarks/train_ranker.py`` and holds the feature names it was fitted on (checked
against :data:`tulving.application.retrieval.features.FEATURES` when it loads, so a model
never scores columns it was not trained on), the standardisation of each column and the
layers. A model with no hidden layer is logistic regression; with one, a small MLP; the
output is a probability that the candidate holds what the query asks for, which is the
hybrid search score (comparable across queries: see ``docs/library/search.md``).

Inference is a few matrix products in numpy: well under a millisecond for a pool of a few
hundred candidates. Nothing is downloaded; the file is read once per process.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import attrs
import numpy as np

from tulving.application.retrieval.features import FEATURES
from tulving.domain.errors import ConfigError

#: The model search uses by default (a file of ``tulving.data``).
DEFAULT_MODEL = "ranker-v1"
FORMAT = 1


@attrs.frozen
class Layer:
    weights: Any  # numpy (inputs x outputs)
    bias: Any  # numpy (outputs,)


@attrs.frozen
class LearnedRanker:
    """``probabilities(matrix)``: one probability per row of ``FEATURES`` columns."""

    name: str
    features: tuple[str, ...]
    low: Any
    high: Any
    mean: Any
    scale: Any
    layers: tuple[Layer, ...]
    meta: dict[str, Any] = attrs.field(factory=dict, eq=False)

    def logits(self, matrix: Any) -> Any:
        # a value outside what training saw is read as the nearest value it saw: a
        # store unlike the dev sets (six memories, a query matching no word) must not
        # send a linear term far past anything fitted
        x = np.clip(np.asarray(matrix, dtype=np.float64), self.low, self.high)
        x = (x - self.mean) / self.scale
        for number, layer in enumerate(self.layers):
            x = x @ layer.weights + layer.bias
            if number < len(self.layers) - 1:
                x = np.maximum(x, 0.0)
        return x[:, 0]

    def probabilities(self, matrix: Any) -> Any:
        if len(matrix) == 0:
            return np.zeros(0)
        return 1.0 / (1.0 + np.exp(-np.clip(self.logits(matrix), -40.0, 40.0)))

    @classmethod
    def from_dict(cls, data: dict[str, Any], name: str = "") -> LearnedRanker:
        if data.get("format") != FORMAT:
            raise ConfigError(f"ranker model {name!r}: unknown format {data.get('format')!r}")
        features = tuple(data["features"])
        if features != FEATURES:
            missing = sorted(set(FEATURES) ^ set(features))
            raise ConfigError(
                f"ranker model {name!r} was fitted on other features than search computes"
                f" ({', '.join(missing) or 'another order'}); train it again"
                " (benchmarks/train_ranker.py)")
        layers = tuple(Layer(np.asarray(layer["weights"], dtype=np.float64),
                             np.asarray(layer["bias"], dtype=np.float64))
                       for layer in data["layers"])
        mean, scale, low, high = (np.asarray(data[k], dtype=np.float64)
                                  for k in ("mean", "scale", "low", "high"))
        width = len(features)
        if any(a.shape != (width,) for a in (mean, scale, low, high)) or not layers or (
                layers[0].weights.shape[0] != width or layers[-1].weights.shape[1] != 1):
            raise ConfigError(f"ranker model {name!r}: layer shapes do not fit its features")
        meta = {k: v for k, v in data.items()
                if k not in ("features", "low", "high", "mean", "scale", "layers")}
        return cls(name or str(data.get("version", "")), features, low, high, mean, scale,
                   layers, meta)


@cache
def load(name: str = DEFAULT_MODEL) -> LearnedRanker:
    """The packaged model ``name`` (read once per process)."""
    try:
        text = resources.files("tulving.data").joinpath(f"{name}.json").read_text("utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"no ranker model {name!r} in tulving/data") from exc
    return LearnedRanker.from_dict(json.loads(text), name)
