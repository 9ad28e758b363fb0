"""The distributions install as themselves (issue 33).

``tulving`` on the package index is another project, so the library is published as
``tulving-memory`` (import name ``tulving``). Here the sdist and wheel of the library and
the wheel of the Kairos plugin are built (``python -m build``), checked (``twine check``;
the sdist holds the tests, the wheel no test or benchmark file), and installed into a
fresh virtualenv with ``pip install --no-index``: the index is never asked, so nothing
but these wheels can satisfy ``tulving-memory``. First the plugin alone (it must pull
``tulving-memory``, not the other project), where a core install must answer ``tulving
mcp`` and the quick start with one line naming the extra; then the README's
``tulving-memory[default]``, with which the README's quick start runs as printed and
``kairos plugin list`` (Kairos' CLI extra) finds the plugin.

Third-party dependencies come from a wheelhouse outside the repository
(``$TULVING_WHEELHOUSE``, default ``~/.cache/tulving/wheelhouse``), filled once with
``pip wheel`` (hnswlib has no wheel on the index and compiles once, ~35 s) and reused by
later runs; only when it lacks something is the index used, to fill it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.test_readme_blocks import ROOT, blocks

PLUGIN = ROOT / "plugins" / "kairos-ai-tulving"
WHEELHOUSE = Path(os.environ.get("TULVING_WHEELHOUSE")
                  or Path.home() / ".cache" / "tulving" / "wheelhouse")
OWN = ("tulving_memory-", "kairos_ai_tulving-")
#: Everything the test installs, so that one fill of the wheelhouse serves every step.
ALL_REQUIREMENTS = ("tulving-memory[default]", "kairos-ai-tulving", "kairos-ai[cli]")


def clean_env(**extra: str) -> dict[str, str]:
    """No PYTHONPATH (a checkout on the path would hide what was installed), no TULVING_*."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TULVING_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(extra)
    return env


def run(*args: str | Path, cwd: Path | None = None, timeout: float = 900,
        check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env or clean_env(),
                          capture_output=True, text=True, timeout=timeout)
    if check:
        assert proc.returncode == 0, (
            f"{' '.join(map(str, args))} exited {proc.returncode}\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("dist")
    began = time.perf_counter()
    # the sdist first, then the wheel built from the unpacked sdist (build's default): a
    # file the sdist forgot would break the wheel
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, ROOT, timeout=600)
    run(sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", out, PLUGIN,
        timeout=600)
    for leftover in (PLUGIN / "build", *PLUGIN.glob("*.egg-info")):
        subprocess.run(["rm", "-rf", str(leftover)], check=False)
    print(f"built in {time.perf_counter() - began:.1f} s", file=sys.stderr)
    yield out


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    assert len(found) == 1, (pattern, found)
    return found[0]


def test_build_and_twine_check_and_contents(dist: Path) -> None:
    wheel = _one(dist, "tulving_memory-*.whl")
    sdist = _one(dist, "tulving_memory-*.tar.gz")
    plugin = _one(dist, "kairos_ai_tulving-*.whl")
    checked = run(sys.executable, "-m", "twine", "check", "--strict", wheel, sdist, plugin)
    assert checked.stdout.count("PASSED") == 3, checked.stdout
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("tulving/") for n in names)
    bad = [n for n in names if n.startswith(("tests/", "benchmarks/"))
           or re.search(r"(^|/)(test_[^/]*|conftest)\.py$", n)]
    assert not bad, f"test or benchmark files in the wheel: {bad[:10]}"
    metadata = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "\nName: tulving-memory\n" in metadata
    assert "License-Expression: Apache-2.0" in metadata
    assert any(n.endswith("licenses/LICENSE") for n in names)
    with tarfile.open(sdist) as archive:
        members = archive.getnames()
    root = members[0].split("/")[0]
    for expected in ("tests/docs/test_readme_blocks.py", "tests/e2e/test_first_hour.py",
                     "mkdocs.yml", "docs/index.md", "scripts/docs_hooks.py",
                     "tests/packaging/test_distributions.py", "LICENSE", "README.md",
                     "plugins/kairos-ai-tulving/pyproject.toml"):
        assert f"{root}/{expected}" in members, expected
    plugin_meta = zipfile.ZipFile(plugin).read(next(
        n for n in zipfile.ZipFile(plugin).namelist() if n.endswith("METADATA"))).decode()
    assert "Requires-Dist: tulving-memory" in plugin_meta
    assert not re.search(r"Requires-Dist: tulving[ <>=]", plugin_meta)


def test_every_extra_the_install_lines_name_exists(dist: Path) -> None:
    """The README's install block names only extras the built wheel provides."""
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"])
    install = next(b for b in blocks(ROOT / "README.md") if "pip install" in b.code)
    named = set()
    for line in install.code.splitlines():
        match = re.search(r'pip install "tulving-memory\[([^\]]+)\]"', line)
        if match:
            named |= set(match.group(1).split(","))
        assert "tulving[" not in line and not re.search(r"pip install tulving\b", line), line
    assert named and named <= extras, named - extras
    metadata = zipfile.ZipFile(_one(dist, "tulving_memory-*.whl")).read(
        next(n for n in zipfile.ZipFile(_one(dist, "tulving_memory-*.whl")).namelist()
             if n.endswith("METADATA"))).decode()
    provided = set(re.findall(r"^Provides-Extra: (\S+)$", metadata, re.MULTILINE))
    assert named <= provided


def quick_start() -> str:
    readme = ROOT / "README.md"
    text = readme.read_text().splitlines()
    heading = text.index("## Quick start") + 1
    return next(b for b in blocks(readme) if b.lang == "python" and b.line > heading).code


def offline_install(venv: Path, dist: Path, *requirements: str) -> None:
    """``pip install --no-index`` from the built wheels and the wheelhouse; the wheelhouse
    is filled from the index the first time it lacks something."""
    pip = [venv / "bin" / "python", "-m", "pip", "install", "--no-index", "--no-compile",
           "--disable-pip-version-check", "--find-links", dist, "--find-links", WHEELHOUSE,
           *requirements]
    first = run(*pip, check=False)
    if first.returncode == 0:
        return
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    run(sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check",
        "--wheel-dir", WHEELHOUSE, "--find-links", dist, *ALL_REQUIREMENTS, timeout=1800)
    for own in WHEELHOUSE.iterdir():  # never a stale copy of the wheels under test
        if own.name.startswith(OWN):
            own.unlink()
    run(*pip)


def test_the_wheels_install_offline_as_themselves_and_the_quick_start_runs(
    dist: Path, tmp_path: Path
) -> None:
    began = time.perf_counter()
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    python, bin_dir = venv / "bin" / "python", venv / "bin"
    work = tmp_path / "work"
    work.mkdir()
    env = clean_env(HOME=str(tmp_path / "home"))

    # the plugin alone pulls this library, never the other project named tulving
    offline_install(venv, dist, "kairos-ai-tulving")
    shown = run(python, "-m", "pip", "show", "tulving-memory", "kairos-ai-tulving")
    assert "Name: tulving-memory" in shown.stdout
    assert run(python, "-m", "pip", "show", "tulving", check=False).returncode != 0
    assert run(python, "-m", "pip", "check").returncode == 0

    # a core install answers what it lacks in one line naming the extra
    for command, extra in (("mcp", "mcp"), ("serve", "server")):
        refused = run(bin_dir / "tulving", "--path", work / "core.db", command, check=False,
                      cwd=work, env=env)
        assert refused.returncode == 3, refused.stderr
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
        assert f"pip install 'tulving-memory[{extra}]'" in refused.stderr
    core = run(python, "-c", quick_start(), check=False, cwd=work, env=env)
    assert core.returncode != 0 and "pip install 'tulving-memory[default]'" in core.stderr
    installed_core = time.perf_counter() - began

    # the README's install line, then its quick start as printed
    offline_install(venv, dist, "tulving-memory[default]", "kairos-ai[cli]")
    started = run(python, "-c", quick_start(), cwd=work, env=env)
    assert "deploy" in started.stdout.lower() or "canary" in started.stdout.lower()
    plugins = run(bin_dir / "kairos", "plugin", "list", cwd=work, env=env)
    assert "kairos-ai-tulving" in plugins.stdout
    print(f"core install and checks {installed_core:.1f} s; total "
          f"{time.perf_counter() - began:.1f} s", file=sys.stderr)
