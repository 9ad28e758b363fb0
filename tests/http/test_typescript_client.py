"""The TypeScript client's own tests (``clients/typescript``, Node's test runner) run
against a real ``tulving serve`` that they start with this Python; here they run as part
of the README's test command (``scripts/test.sh`` installs them with ``npm ci``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.e2e.conftest import ROOT

CLIENT = ROOT / "clients" / "typescript"


def test_typescript_client_against_a_real_server() -> None:
    npm = shutil.which("npm")
    assert npm is not None, "Node.js and npm are needed for the TypeScript client's tests"
    if not (CLIENT / "node_modules").exists():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=CLIENT, check=True,
                       capture_output=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TULVING_")}
    env["TULVING_PYTHON"] = sys.executable
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([npm, "test"], cwd=CLIENT, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "# fail 0" in run.stdout and "# pass 8" in run.stdout  # every test of client.test.ts
