"""The plugin as Kairos finds it: a built wheel, installed, loaded by Kairos' registry.

Kairos loads plugins only from installed distributions whose RECORD lists the entry
point's module (``load_plugin`` refuses a source tree or an editable install), so this
test builds a wheel of the plugin from this tree, installs it into a folder of its own
(``pip install --target``, no dependencies: kairos-ai and tulving come from the running
environment), and asks Kairos in a child process that sees that folder first.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLUGIN_ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("kairos-plugin")
    source, wheels, target = work / "source", work / "wheels", work / "site"
    # build from a copy: setuptools writes build/ and *.egg-info beside the sources
    shutil.copytree(PLUGIN_ROOT, source, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__", "tests"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    build = [*pip, "wheel", "--no-deps", "-w", str(wheels), str(source)]
    try:  # the environment's setuptools is enough, and faster than an isolated build
        subprocess.run([*build, "--no-build-isolation"], check=True, capture_output=True,
                       timeout=300)
    except subprocess.CalledProcessError:
        subprocess.run(build, check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("kairos_ai_tulving-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    return target


def _run(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "TULVING_PLUGINS": "tulving"}
    env.pop("KAIROS_PLUGIN_ALLOWLIST", None)
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120, env=env,
                          cwd=site.parent)


_LOAD = textwrap.dedent("""
    import json
    from kairos import discover_plugins, load_plugin
    from kairos.exceptions import SecurityError
    manifest = load_plugin("kairos-ai-tulving")
    found = discover_plugins(allowlist=["kairos-ai-tulving"])
    try:
        discover_plugins()
        refused = False
    except SecurityError:
        refused = True
    import kairos_ai_tulving
    print(json.dumps({"describe": manifest.describe(), "found": sorted(found),
                      "same": found["tulving"] is manifest, "refused": refused,
                      "module": kairos_ai_tulving.__file__,
                      "workflows": sorted(manifest.workflows)}))
""")


def test_kairos_registry_loads_the_installed_plugin(site: Path) -> None:
    done = _run(site, sys.executable, "-c", _LOAD)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["found"] == ["tulving"] and out["same"] and out["refused"]
    assert out["module"].startswith(str(site))  # the installed copy, not this tree
    describe = out["describe"]
    assert describe["name"] == "tulving" and describe["requires_kairos"] == ">=0.5,<0.6"
    assert sorted(describe["steps"]) == ["orient", "recall", "remember"]
    assert describe["steps"]["recall"]["output_contract"] == [
        "context", "used", "budget", "ids", "omitted", "mode", "degraded"]
    assert describe["validators"] == ["fits_budget"]
    assert out["workflows"] == ["reference"]


def test_the_plugin_appears_in_kairos_plugin_list(site: Path) -> None:
    kairos_cli = BIN / "kairos"
    if not kairos_cli.exists():
        pytest.fail("the kairos command is missing: install kairos-ai[cli] (scripts/test.sh does)")
    listed = _run(site, str(kairos_cli), "plugin", "list")
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert "kairos-ai-tulving  v0.1.0  [tulving]" in listed.stdout
    described = _run(site, str(kairos_cli), "plugin", "list", "--describe")
    assert described.returncode == 0, described.stderr[-3000:]
    assert "tulving  v0.1.0  Tulving memory for Kairos workflows" in described.stdout
    for step in ("recall", "orient", "remember"):
        assert f"  step: {step}  " in described.stdout
    assert "Error loading" not in described.stderr
