"""The TypeScript client as an npm package (issue 33): ``npm pack`` in
``clients/typescript`` yields a tarball with the compiled ``dist/``, its type declarations,
the README and the LICENSE (no tests, no sources of the tests); installed into a scratch
Node project, the README's example, compiled against the package's own declarations,
runs against a real ``tulving serve``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.docs.test_readme_blocks import ROOT, blocks
from tests.http.conftest import start_server, stop_server

CLIENT = ROOT / "clients" / "typescript"


def npm(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("npm")
    assert exe is not None, "Node.js and npm are needed for the TypeScript client"
    proc = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"npm {' '.join(args)}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    return proc


def readme_example() -> str:
    return next(b.code for b in blocks(CLIENT / "README.md") if b.lang == "ts")


def test_npm_pack_installs_into_a_project_and_the_readme_example_runs(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    if not (CLIENT / "node_modules").exists():
        npm("ci", "--no-audit", "--no-fund", cwd=CLIENT)
    packed = json.loads(npm("pack", "--json", "--pack-destination", str(tmp_path),
                            cwd=CLIENT).stdout)
    tarball = tmp_path / packed[0]["filename"]
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
        manifest = json.load(archive.extractfile("package/package.json"))  # type: ignore[arg-type]
    assert manifest["name"] == "tulving-client"
    for expected in ("package/dist/src/index.js", "package/dist/src/index.d.ts",
                     "package/README.md", "package/LICENSE", "package/package.json"):
        assert expected in names, (expected, sorted(names))
    assert not [n for n in names if "/test/" in n or (n.endswith(".ts") and
                not n.endswith(".d.ts"))], sorted(names)

    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text(json.dumps(
        {"name": "scratch", "version": "1.0.0", "private": True, "type": "module"}))
    npm("install", "--offline", "--no-audit", "--no-fund", str(tarball), cwd=project)
    assert (project / "node_modules" / "tulving-client" / "dist" / "src" /
            "index.d.ts").is_file()
    (project / "example.ts").write_text(readme_example())
    tsc = CLIENT / "node_modules" / ".bin" / "tsc"
    compiled = subprocess.run(
        [str(tsc), "--module", "nodenext", "--moduleResolution", "nodenext", "--target",
         "es2022", "--strict", "--skipLibCheck", "--typeRoots",
         str(CLIENT / "node_modules" / "@types"), "--types", "node", "example.ts"],
        cwd=project, capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr

    server = start_server(tmp_path_factory.mktemp("npm-server"))
    try:
        env = {**os.environ, "TULVING_URL": server.url, "TULVING_TOKEN": server.tokens["alice"]}
        ran = subprocess.run([shutil.which("node") or "node", "example.js"], cwd=project,
                             env=env, capture_output=True, text=True, timeout=120)
    finally:
        stop_server(server)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.splitlines() == ["deploys go out on Thursdays", "true", "2"], ran.stdout
