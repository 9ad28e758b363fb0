"""The strong model's cache: parts verified by sha256 before anything is cached.

Real zip files split in five parts, as the registry packages carry the model, but with
other contents: the conversion must refuse them and leave no cache behind."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from tulving.adapters.embedders import model_cache
from tulving.domain.errors import EmbedderError


def _split_zip(folder: Path, files: dict[str, bytes], parts: int = 5) -> list[Path]:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr("all-mpnet-base-v2/" + name, data)
    raw = buffer.getvalue()
    step = -(-len(raw) // parts)
    paths = []
    for i in range(parts):
        path = folder / f"all-mpnet-base-v2.zip.00{i + 1}"
        path.write_bytes(raw[i * step:(i + 1) * step])
        paths.append(path)
    return paths


def test_parts_whose_files_do_not_match_the_pinned_sha256_are_refused(tmp_path: Path) -> None:
    parts = _split_zip(tmp_path, {name: b"not the model " + name.encode()
                                  for name in model_cache.FILES})
    root = tmp_path / "cache"
    with pytest.raises(EmbedderError, match="sha256"):
        model_cache.model_folder(root, parts)
    assert not (root / model_cache.FOLDER).exists()
    assert [p.name for p in root.iterdir()] == []  # no half-converted folder left


def test_damaged_or_incomplete_parts_are_refused(tmp_path: Path) -> None:
    parts = _split_zip(tmp_path, {"config.json": b"{}"})
    with pytest.raises(EmbedderError, match="holds no"):
        model_cache.model_folder(tmp_path / "a", parts)
    parts[-1].write_bytes(b"")  # the last part lost: the zip's directory is gone
    with pytest.raises(EmbedderError, match="damaged"):
        model_cache.model_folder(tmp_path / "b", parts)


def test_the_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setenv("TULVING_MODEL_CACHE", str(tmp_path / "models"))
    assert model_cache.cache_root() == tmp_path / "models"
    monkeypatch.delenv("TULVING_MODEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert model_cache.cache_root() == tmp_path / "xdg" / "tulving" / "models"
