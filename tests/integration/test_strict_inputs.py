"""Text that is not valid Unicode is a ``ValidationError`` at every door but HTTP (tested
in ``tests/http/test_strict_inputs.py``): the Python API (every text argument, nested
metadata keys included), the CLI, the MCP tools, and bundles (issue 34, finding 4: search
and curate raised a bare TypeError, store a UnicodeEncodeError)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import FAST, ROOT, clean_env
from tulving import BundleError, Memory, ValidationError

BAD = "a\ud800b"


@pytest.fixture(scope="module")
def memory() -> Iterator[Memory]:
    with Memory(":memory:", agent_id="a", embedder="hashing", vectors="exact") as m:
        m.store("a seed memory about kiwis", type="FACT", key="seed")
        yield m


CALLS: dict[str, Callable[[Memory], Any]] = {
    "store content": lambda m: m.store(BAD, type="FACT"),
    "store key": lambda m: m.store("x", type="FACT", key=BAD),
    "store tags": lambda m: m.store("x", type="FACT", tags=["ok", BAD]),
    "store metadata value": lambda m: m.store("x", type="FACT", metadata={"a": {"b": [BAD]}}),
    "store metadata key": lambda m: m.store("x", type="FACT", metadata={BAD: 1}),
    "store fact": lambda m: m.store("x", type="FACT", entity="e", attribute="a", value=BAD),
    "store source_instance": lambda m: m.store("x", type="FACT", source_instance=BAD),
    "store_many": lambda m: m.store_many([{"content": "fine", "type": "FACT"},
                                          {"content": BAD, "type": "FACT"}]),
    "search": lambda m: m.search(BAD),
    "search tags": lambda m: m.search("kiwis", tags=[BAD]),
    "curate": lambda m: m.curate(BAD, token_budget=500),
    "curate tags": lambda m: m.curate("kiwis", token_budget=500, tags=[BAD]),
    "get": lambda m: m.get(BAD),
    "forget": lambda m: m.forget(BAD),
    "history": lambda m: m.history(BAD),
    "list_keys": lambda m: m.list_keys(BAD),
    "remember": lambda m: m.remember(BAD),
    "remember subject": lambda m: m.remember("I like tea", subject=BAD),
    "correct": lambda m: m.correct("seed", BAD),
    "start_session": lambda m: m.start_session(BAD),
    "profile": lambda m: m.profile(BAD),
    "procedures": lambda m: m.procedures(BAD),
    "count_tokens": lambda m: m.count_tokens(BAD),
    "view": lambda m: m.view(agent_id=BAD),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_python_api_refuses_invalid_unicode_typed_and_writes_nothing(
        memory: Memory, call: str) -> None:
    before = memory.stats()
    with pytest.raises(ValidationError, match="not valid Unicode"):
        CALLS[call](memory)
    assert memory.stats()["active"] == before["active"]
    assert memory.get("seed").content == "a seed memory about kiwis"


def test_valid_non_ascii_text_is_untouched(memory: Memory) -> None:
    entry = memory.store("é, 漢字 and an owl 🦉", type="FACT", metadata={"ü": ["🦉"]})
    assert memory.get(entry.id).content == "é, 漢字 and an owl 🦉"
    assert memory.search("owl 🦉")


def test_cli_refuses_undecodable_arguments(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 in argv reach Python as lone surrogates (surrogateescape):
    a typed error and exit code 1-7, no traceback."""
    path = str(tmp_path / "cli.db")
    made = subprocess.run(  # a store to read (a read on no store is refused before argv)
        [sys.executable, "-m", "tulving.interfaces.cli.main", "store", "a note", "-t", "FACT",
         "--path", path, *FAST], capture_output=True, env=clean_env(), cwd=str(ROOT), timeout=60)
    assert made.returncode == 0, made.stderr[-800:]
    for argv in (["store", b"caf\xe9 menu", "-t", "FACT"], ["search", b"\xff\xfe"],
                 ["store", "x", "-t", "FACT", "-k", b"k\xff"]):
        raw = [os.fsencode(a) if isinstance(a, str) else a for a in argv]
        proc = subprocess.run(
            [sys.executable.encode(), b"-m", b"tulving.interfaces.cli.main", *raw,
             b"--path", path.encode(), *[a.encode() for a in FAST]],
            capture_output=True, env=clean_env(), cwd=str(ROOT), timeout=60)
        assert proc.returncode in range(1, 8), (argv, proc.returncode, proc.stderr[-800:])
        assert b"Traceback" not in proc.stderr, proc.stderr[-1500:]
        assert b"Unicode" in proc.stderr, proc.stderr[-800:]


def test_a_bundle_with_a_lone_surrogate_is_a_bundle_error(tmp_path: Path) -> None:
    path = tmp_path / "good.tulving"
    with Memory(":memory:", agent_id="a", embedder="hashing") as m:
        m.store("MARKER text", type="FACT", metadata={"k": "MARKER"})
        m.export(path)
    source = zipfile.ZipFile(path)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as bad:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "entries.jsonl":
                data = data.replace(b"MARKER", b"MARK\\ud800ER")  # a JSON escape, ASCII bytes
            bad.writestr(info.filename, data, compress_type=info.compress_type)
    with Memory(":memory:", agent_id="a", embedder="hashing") as m:
        with pytest.raises(BundleError, match="Unicode"):
            m.import_bundle(io.BytesIO(out.getvalue()))
        assert m.stats()["active"] == 0
