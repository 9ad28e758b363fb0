"""A degradation is said once per process, on one line (issue 41: "no LLM configured"
printed twice, by the logger's last-resort handler and by the warnings module, on every
``remember()``; then not printed at all: importing detect-secrets for redaction turned on
``logging.captureWarnings`` for the whole process, and a warning raised in the enrichment
worker went to a logger with no handler)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
from tulving import Memory
with Memory({path!r}, agent_id="a", embedder="hashing", vectors="exact") as memory:
    for text in ["User: I live in Lisbon.", "User: I moved to Porto.", "User: I like tea."]:
        memory.remember(text)
    memory.wait_enriched()  # extraction (where it is said) runs in the background
"""


def test_no_llm_configured_is_printed_once(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(path=str(tmp_path / "m.db"))],
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "TULVING_PLUGINS": "tulving",
                               "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("no LLM configured") == 1, done.stderr


def test_an_application_that_routes_warnings_to_its_logs_gets_one_record(
        tmp_path: Path) -> None:
    script = ("import logging\nlogging.basicConfig(level=logging.INFO, format='%(name)s: "
              "%(message)s')\nlogging.captureWarnings(True)\n" + SCRIPT.format(
                  path=str(tmp_path / "m.db")))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                            "TULVING_PLUGINS": "tulving"})
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "no LLM configured" in line]
    assert len(lines) == 1 and lines[0].startswith("py.warnings: ")
