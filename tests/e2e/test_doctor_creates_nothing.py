"""``tulving doctor`` looks and changes nothing (issue 41): with no ``--path`` it used to
create ``~/.tulving/memory.db`` (and its folder) on a machine that had no memory yet."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import FAST, clean_env


def _doctor(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tulving.interfaces.cli.main", *FAST,
                           "doctor", *args], capture_output=True, text=True, timeout=120,
                          env=clean_env(HOME=str(home)), cwd=str(home))


def test_doctor_without_a_path_creates_nothing(tmp_path: Path) -> None:
    report = _doctor(tmp_path, "--json")
    assert report.returncode == 0, report.stderr
    checks = json.loads(report.stdout)
    assert checks["ok"] is True
    assert checks["store"] == {"engine": "sqlite", "exists": False,
                               "path": str(tmp_path / ".tulving" / "memory.db")}
    assert checks["embedder"]["ok"] is True and checks["tokenizer"]["ok"] is True
    text = _doctor(tmp_path)
    assert "not created yet" in text.stdout and "all good" in text.stdout
    assert not (tmp_path / ".tulving").exists()       # neither the store nor its folder
    assert [p for p in tmp_path.rglob("*") if "memory" in p.name] == []


def test_doctor_on_an_existing_store_still_inspects_it(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    stored = subprocess.run([sys.executable, "-m", "tulving.interfaces.cli.main", "--path",
                             str(path), *FAST, "store", "something to look at"],
                            capture_output=True, text=True, timeout=120, env=clean_env())
    assert stored.returncode == 0, stored.stderr
    checks = json.loads(_doctor(tmp_path, "--path", str(path), "--json").stdout)
    assert checks["store"]["bytes"] > 0 and checks["index"]["healthy"] is True
