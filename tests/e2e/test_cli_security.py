"""``tulving keygen / encrypt / rekey / decrypt`` and ``--encryption`` end to end
(in-process through ``main``: the real parser, SQLCipher store and exit codes)."""

from __future__ import annotations

import importlib.util
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST, CLIResult

pytestmark = pytest.mark.skipif(importlib.util.find_spec("sqlcipher3") is None,
                                reason="the encryption extra is missing")

MARKER = "clicryptmarker"


@pytest.fixture
def t(run: Callable[..., CLIResult], tmp_path: Path) -> Callable[..., CLIResult]:
    path = str(tmp_path / "m.db")
    return lambda *args, **kw: run("--path", path, *FAST, *args, **kw)


def marker_files(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir()
            if p.is_file() and MARKER.encode() in p.read_bytes()]


def test_keygen_encrypt_rekey_decrypt(t: Callable[..., CLIResult], run: Callable[..., CLIResult],
                                      tmp_path: Path) -> None:
    assert run("keygen", "k1").code == 0
    assert stat.S_IMODE(os.stat(tmp_path / "k1").st_mode) == 0o600
    assert len((tmp_path / "k1").read_text().strip()) == 64
    assert run("keygen", "k1").code == 2  # never overwritten
    assert run("keygen", "k2").code == 0
    assert t("store", f"{MARKER} plain at first", "--type", "FACT").code == 0

    result = t("encrypt", "--new-key", "file:k1", "--json")
    assert result.code == 0, result
    assert result.json()["state"] == "encrypted" and result.json()["entries"] == 1
    assert marker_files(tmp_path) == []
    assert t("search", MARKER).code == 5  # no key: refused, typed
    found = t("search", MARKER, "--encryption", "file:k1")
    assert found.code == 0 and MARKER in found.out

    assert t("rekey", "--encryption", "file:k1", "--new-key", "file:k2").code == 0
    wrong = t("search", MARKER, "--encryption", "file:k1")
    assert wrong.code == 5 and "does not open" in wrong.err
    assert MARKER in t("search", MARKER, "--encryption", "file:k2").out

    assert t("decrypt", "--encryption", "file:k2").code == 0
    assert MARKER in t("search", MARKER).out
    assert marker_files(tmp_path)  # plain again: the marker is readable on disk


def test_the_key_source_comes_from_the_environment_or_toml(
        t: Callable[..., CLIResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_STORE_KEY", "a passphrase from the environment")
    monkeypatch.setenv("TULVING_ENCRYPTION", "env:MY_STORE_KEY")
    assert t("store", f"{MARKER} encrypted from the start", "--type", "FACT").code == 0
    assert marker_files(tmp_path) == []
    assert MARKER in t("search", MARKER).out
    monkeypatch.delenv("TULVING_ENCRYPTION")
    (tmp_path / "tulving.toml").write_text('[tulving]\nencryption = "env:MY_STORE_KEY"\n')
    assert MARKER in t("search", MARKER).out


def test_an_inline_key_in_tulving_toml_is_refused(t: Callable[..., CLIResult],
                                                  tmp_path: Path) -> None:
    (tmp_path / "tulving.toml").write_text('[tulving]\nencryption = "hunter2hunter2hunter2"\n')
    result = t("store", "anything", "--type", "FACT")
    assert result.code == 5 and "inline" in result.err
    assert "hunter2" not in result.err
    assert not (tmp_path / "m.db").exists()


def test_conversion_errors_are_typed(t: Callable[..., CLIResult], run: Callable[..., CLIResult],
                                     tmp_path: Path) -> None:
    assert t("encrypt").code == 3  # no key named anywhere
    assert t("rekey", "--new-key", "file:k2").code == 3  # no current key
    assert t("store", "x", "--type", "FACT").code == 0
    assert run("keygen", "k1").code == 0
    assert t("rekey", "--encryption", "file:k1", "--new-key", "file:k1").code in (3, 5)
    assert t("encrypt", "--new-key", "file:missing").code == 5
    assert MARKER not in t("search", "x").err and t("search", "x").code == 0  # still plain
