"""End-to-end fixtures: the real CLI entry point and the real MCP server in a subprocess.

The fast configuration (hashing embedder, exact vectors) keeps each spawn quick; one test
per transport uses the embedded default (SQLite + usearch + the local ONNX model).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--embedder", "hashing", "--vectors", "exact"]


def clean_env(**extra: str) -> dict[str, str]:
    """The parent environment without any TULVING_* setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TULVING_")}
    env["TULVING_PLUGINS"] = "tulving"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


@pytest.fixture
def store(tmp_path: Path) -> str:
    return str(tmp_path / "memory.db")


class CLIResult:
    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def json(self) -> Any:
        return json.loads(self.out)

    def __repr__(self) -> str:
        return f"CLIResult(code={self.code}, out={self.out[-800:]!r}, err={self.err[-800:]!r})"


@pytest.fixture
def tulving(tmp_path: Path) -> Callable[..., CLIResult]:
    """Run ``python -m tulving.interfaces.cli.main ARGS`` in ``tmp_path`` (a subprocess:
    exit codes, stdout/stderr and config discovery as a user sees them)."""

    def run(
        *args: str,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
        cwd: str | None = None,
        timeout: float = 60,
    ) -> CLIResult:
        proc = subprocess.run(
            [sys.executable, "-m", "tulving.interfaces.cli.main", *args],
            capture_output=True,
            text=True,
            input=stdin,
            env=env or clean_env(),
            cwd=cwd or str(tmp_path),
            timeout=timeout,
        )
        return CLIResult(proc)

    return run


@pytest.fixture
def server_params(store: str) -> Callable[..., Any]:
    """``StdioServerParameters`` launching ``python -m tulving.interfaces.mcp``."""
    from mcp import StdioServerParameters

    def make(*extra: str, fast: bool = True, path: str | None = None) -> StdioServerParameters:
        args = ["-m", "tulving.interfaces.mcp", "--path", path or store, "--agent-id", "e2e"]
        if fast:
            args += FAST
        return StdioServerParameters(
            command=sys.executable, args=[*args, *extra], env=clean_env(), cwd=str(ROOT)
        )

    return make


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def proc_cleanup() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes started by a test; killed if the test left them running."""
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture
def run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., CLIResult]:
    """``tulving ARGS`` in-process, in ``tmp_path``, with no TULVING_* from the outside."""
    for name in list(os.environ):
        if name.startswith("TULVING_") and name != "TULVING_PLUGINS":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)

    def invoke(*args: str, stdin: str | None = None) -> CLIResult:
        if stdin is not None:
            import io

            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        from tulving.interfaces.cli.main import main

        code = main(list(args))
        captured = capsys.readouterr()
        return CLIResult(subprocess.CompletedProcess(args, code, captured.out, captured.err))

    return invoke
