"""Contact details where text leaves the memory's doors (docs/operations/governance.md):
a real ``tulving serve`` with content capture on, watched by a real OTLP receiver
process. The server's answers show the memory's emails, phone numbers and addresses to
its own caller (the documented default: remembering how to reach someone is what a
memory is for), and no span the server exports holds one (a tracing backend is another
audience); nor does the server's log. Today's code put them in the spans as written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.proto")

from tests.e2e.conftest import FAST, ROOT, clean_env
from tests.http.test_observability import close_watched, start_watched

#: Contact details of several kinds and formats, and the memory that holds them.
CONTACTS = {"email": "ann.lee@example.com", "national phone": "020 7946 0958",
            "e164 phone": "+33 1 42 68 53 00", "nanp phone": "(415) 555-0132",
            "public address": "81.2.69.160"}
MEMORY = ("Ann prefers email, ann.lee@example.com; her desk is 020 7946 0958, Paris office "
          "+33 1 42 68 53 00, US line (415) 555-0132; she logs in from 81.2.69.160")


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The spans, the server's log and its answers, after a store, a search and a curate
    by the memory's own user (the server stopped, so its spans are flushed)."""
    folder = tmp_path_factory.mktemp("contacts")
    watched = start_watched(folder, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    try:
        with httpx.Client(base_url=watched.url, headers=watched.headers(), timeout=30) as c:
            answers = [c.post("/v1/store", json={"content": MEMORY, "type": "FACT",
                                                 "scope": "personal"}),
                       c.post("/v1/search", json={"query": "how to reach ann.lee@example.com"}),
                       c.post("/v1/curate", json={"query": "Ann's phone 020 7946 0958"})]
        assert all(r.status_code == 200 for r in answers), [r.text for r in answers]
        (folder / "answers.txt").write_text("\n".join(r.text for r in answers))
    finally:
        close_watched(watched)
    return watched.spans_file, watched.log, folder / "answers.txt"


def test_the_memorys_own_caller_is_shown_its_contact_details(
        traced: tuple[Path, Path, Path]) -> None:
    answers = traced[2].read_text()
    for kind, value in CONTACTS.items():
        assert value in answers, kind


def test_no_span_holds_a_contact_detail_even_with_content_captured(
        traced: tuple[Path, Path, Path]) -> None:
    spans = [json.loads(line) for line in traced[0].read_text().splitlines()]
    captured = [s for s in spans if "gen_ai.memory.records" in s["attributes"]
                or "gen_ai.memory.query.text" in s["attributes"]]
    assert captured, "content capture is on: the spans carry text"
    text = json.dumps(spans)
    for kind, value in CONTACTS.items():
        assert value not in text, kind
    for kind in ("email", "phone", "ip_address"):
        assert f"[REDACTED:{kind}]" in text, kind


def test_the_servers_log_holds_no_contact_detail(
        traced: tuple[Path, Path, Path]) -> None:
    log = traced[1].read_text()
    assert '"route"' in log  # the access lines are there
    for kind, value in CONTACTS.items():
        assert value not in log, kind


def test_a_redacted_export_holds_no_contact_detail(tmp_path: Path) -> None:
    """The CLI's ``export --redact`` (a bundle meant for elsewhere): every format masked,
    where the national phone and the address came out as written."""
    import zipfile

    store = ["--path", str(tmp_path / "a.db"), "--agent-id", "cli", *FAST]
    run = [sys.executable, "-m", "tulving.interfaces.cli.main"]
    done = subprocess.run([*run, *store, "store", MEMORY, "--type", "FACT"],
                          capture_output=True, text=True, env=clean_env(), cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    bundle = tmp_path / "r.tulving"
    done = subprocess.run([*run, *store, "export", str(bundle), "--redact"],
                          capture_output=True, text=True, env=clean_env(), cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    entries = zipfile.ZipFile(bundle).read("entries.jsonl").decode()
    assert "Ann prefers email" in entries
    for kind, value in CONTACTS.items():
        assert value not in entries, kind
