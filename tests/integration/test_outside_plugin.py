"""A third-party package (own pyproject, own entry point) runs the storage contract suite.

It is installed into a temporary target directory (not the project's virtualenv) and
its tests run in a subprocess with that directory on the path, exactly as the package's
own CI would run them: a conftest-free subclass of ``StorageContract``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

FIXTURE = Path(__file__).parent.parent / "fixtures" / "outside_adapter"


def test_outside_package_passes_the_storage_contract(tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--no-build-isolation", "--target", str(target), str(FIXTURE)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    tests = tmp_path / "tests"
    shutil.copytree(FIXTURE / "tests", tests)
    env = {**os.environ, "PYTHONPATH": str(target), "TULVING_PLUGINS": ""}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout and "failed" not in result.stdout
    # and the registry names it alongside the built-ins
    listing = subprocess.run(
        [sys.executable, "-c",
         "from tulving.plugins.registry import get_manager;"
         "print(get_manager()[1].names('storage'))"],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    )
    assert "outside-journal" in listing.stdout and "sqlite" in listing.stdout
