"""The ``tulving`` CLI end to end.

Most commands run in-process through ``main(argv)`` (the real parser, real SQLite store,
real adapters; fast); the installed console script, the single-writer lock and the
embedded-default demo run as subprocesses, the way a user meets them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import FAST, CLIResult, clean_env

SECRET = "sk-proj-abcdefghijklmnop1234567890XYZ"


@pytest.fixture
def t(run: Callable[..., CLIResult], tmp_path: Path) -> Callable[..., CLIResult]:
    """``run`` on a fast store in ``tmp_path``."""
    path = str(tmp_path / "m.db")
    return lambda *args, **kw: run("--path", path, *FAST, *args, **kw)


def test_help_documents_commands_and_exit_codes(run: Callable[..., CLIResult]) -> None:
    result = run("--help")
    assert result.code == 0
    for command in (
        "store",
        "get",
        "search",
        "curate",
        "forget",
        "history",
        "list",
        "stats",
        "evict",
        "maintenance",
        "mcp",
        "doctor",
        "demo",
    ):
        assert command in result.out
    for line in (
        "0    success",
        "1    not found",
        "2    usage",
        "3    configuration",
        "4    storage",
    ):
        assert line in result.out
    assert run().code == 2  # no command


def test_store_get_search_history_forget(t: Callable[..., CLIResult]) -> None:
    first = t(
        "store",
        "We deploy with rolling restarts.",
        "--type",
        "DECISION",
        "--key",
        "deploy/strategy",
        "--tag",
        "deploy",
        "--json",
    )
    assert first.code == 0, first
    first_id = first.json()["stored"]["id"]
    second = t(
        "store",
        "We deploy blue-green; nginx switches traffic.",
        "-t",
        "decision",
        "-k",
        "deploy/strategy",
        "--json",
    )
    assert second.json()["stored"]["supersedes"] == first_id
    assert (
        t(
            "store",
            "-",
            "--type",
            "FACT",
            "--key",
            "infra/db",
            stdin="Production runs PostgreSQL 15.",
        ).code
        == 0
    )
    t(
        "store",
        f"The sandbox api_key={SECRET} lives in staging.",
        "--type",
        "FACT",
        "--key",
        "infra/sandbox",
    )

    got = t("get", "deploy/strategy")
    assert got.code == 0 and "blue-green" in got.out and "[DECISION]" in got.out
    assert t("get", "deploy/strategy", "--json").json()["supersedes"] == first_id
    # secrets are redacted unless --raw is asked for
    assert SECRET not in t("get", "infra/sandbox").out
    assert "[REDACTED" in t("get", "infra/sandbox", "--json").json()["content"]
    assert SECRET in t("get", "infra/sandbox", "--raw").out

    found = t("search", "how do we ship releases?", "--json")
    assert found.code == 0
    data = found.json()
    assert data["results"][0]["key"] == "deploy/strategy" and data["elapsed_ms"] >= 0
    assert "deploy/strategy" in t("search", "deploy").out
    only_facts = t("search", "deploy", "--type", "FACT", "--json").json()["results"]
    assert {r["type"] for r in only_facts} <= {"FACT"}
    assert t("search", "nothing like this at all zzzqqq", "--mode", "lexical").out.startswith(
        "No memories"
    )

    history = t("history", "deploy/strategy", "--json").json()["versions"]
    assert [v["archive_reason"] for v in history] == [None, "superseded"]
    assert t("list", "--json").json()["keys"] == ["deploy/strategy", "infra/db", "infra/sandbox"]
    assert t("list", "infra/").out.split() == ["infra/db", "infra/sandbox"]

    assert t("forget", "infra/db").code == 0
    assert t("get", "infra/db").code == 1
    assert t("history", "no/such").code == 1
    assert t("forget", "infra/db", "--hard").code == 1  # archived entries are found by id only
    stats = t("stats", "--json").json()
    assert stats["active"] == 2 and stats["archived"] == 2
    assert "active: 2" in t("stats").out


def test_validation_errors_exit_2_and_change_nothing(t: Callable[..., CLIResult]) -> None:
    assert t("store", "x", "--type", "GOSSIP").code == 2  # argparse choices
    assert t("store", "", "--type", "FACT").code == 2
    assert t("store", "ok", "--key", "../../etc/passwd").code == 2
    assert t("store", "ok", "--importance", "3").code == 2
    assert t("store", "x" * 100_001).code == 2
    assert t("store").code == 2
    assert t("search", "x", "--since", "yesterday").code == 2
    assert t("curate").code == 2  # needs a query or --orient
    result = t("maintenance", "vacuum", "--dry-run")
    assert result.code == 2 and "purge" in result.err
    assert t("stats", "--json").json()["active"] == 0


def test_jsonl_import_with_bad_line_writes_nothing(
    t: Callable[..., CLIResult], tmp_path: Path
) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(
        "\n".join(
            json.dumps(
                {
                    "content": f"memory number {i}",
                    "type": "FACT",
                    "valid_from": f"2026-01-0{1 + i % 9}",
                }
            )
            for i in range(30)
        )
        + "\n"
    )
    result = t("store", "--jsonl", str(good), "--json")
    assert result.code == 0, result
    assert result.json()["imported"] == 30
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "fine", "type": "FACT"}\n{"content": "no type"}\n')
    assert t("store", "--jsonl", str(bad)).code == 2
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"content": "fine", "type": "FACT"}\nnot json\n')
    failed = t("store", "--jsonl", str(broken))
    assert failed.code == 2 and "broken.jsonl:2" in failed.err
    assert t("stats", "--json").json()["active"] == 30
    assert t("store", "--jsonl", str(tmp_path / "missing.jsonl")).code == 4


def test_curate_query_and_orient(t: Callable[..., CLIResult]) -> None:
    t(
        "store",
        "Move auth to short-lived JWT access tokens with rotating refresh tokens.",
        "--type",
        "DECISION",
        "--key",
        "auth/refactor",
    )
    t(
        "store",
        "Auth plan: migrate mobile first, then web, then drop sessions.",
        "--type",
        "PLAN",
        "--key",
        "plan/auth",
    )
    t("store", "Tomas prefers design tokens over hard-coded colours.", "--type", "PREFERENCE")
    curated = t("curate", "resuming the auth refactor", "--budget", "200", "--json")
    assert curated.code == 0, curated
    data = curated.json()
    assert data["token_count"] <= 200 and "JWT" in data["content"]
    assert {e["key"] for e in data["entries"]} >= {"auth/refactor"}
    human = t("curate", "auth", "--budget", "200")
    assert "JWT" in human.out and "/200 tokens" in human.out
    orient = t("curate", "--orient", "--budget", "300", "--json").json()
    assert orient["mode"] == "orient" and orient["token_count"] <= 300
    assert "auth/refactor" in orient["content"] or "JWT" in orient["content"]


def test_maintenance_inspect_purge_vacuum_reindex(t: Callable[..., CLIResult]) -> None:
    for i in range(5):
        t("store", f"version {i} of the release checklist", "--key", "release/checklist")
    inspect = t("maintenance", "inspect", "--json")
    assert inspect.code == 0, inspect
    report = inspect.json()
    assert report["integrity_ok"] is True and report["index"]["healthy"] is True
    # the one purge path: history chains stay unless --force (as Memory.purge)
    kept = t("maintenance", "purge", "--json").json()
    assert kept["deleted"] == 0 and kept["kept_for_audit"] == 4
    preview = t("maintenance", "purge", "--force", "--dry-run", "--json").json()
    assert preview["matched"] == 4 and preview["deleted"] == 0
    assert preview["by_reason"] == {"superseded": 4}
    assert t("stats", "--json").json()["archived"] == 4
    purged = t("maintenance", "purge", "--force", "--json").json()
    assert purged["deleted"] == 4
    assert t("stats", "--json").json()["archived"] == 0
    assert len(t("history", "release/checklist", "--json").json()["versions"]) == 1
    vacuum = t("maintenance", "vacuum", "--json").json()
    assert vacuum["bytes_after"] > 0
    reindex = t("maintenance", "reindex", "--json").json()
    assert reindex["indexed"] == 1
    reembed = t("maintenance", "reembed", "--json").json()
    assert reembed["embedded"] == 1
    assert reembed["vector_representation"] == report["vector_representation"]
    assert t("maintenance", "inspect", "--json").json()["index"]["healthy"] is True


def test_config_precedence_flag_env_toml(
    run: Callable[..., CLIResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tulving.toml").write_text(
        '[tulving]\npath = "from-toml.db"\nagent_id = "toml-agent"\n'
        'embedder = "hashing"\nvectors = "exact"\n'
    )
    # a reading command creates no store (docs/cli.md): a write makes each one first
    assert run("store", "a first memory", "-t", "FACT").code == 0
    stats = run("stats", "--json").json()
    assert stats["agent_id"] == "toml-agent"
    assert stats["storage"]["path"].endswith("from-toml.db")
    monkeypatch.setenv("TULVING_AGENT_ID", "env-agent")
    monkeypatch.setenv("TULVING_PATH", str(tmp_path / "from-env.db"))
    assert run("store", "a first memory", "-t", "FACT").code == 0
    stats = run("stats", "--json").json()
    assert stats["agent_id"] == "env-agent" and stats["storage"]["path"].endswith("from-env.db")
    stats = run("--agent-id", "flag-agent", "stats", "--json").json()
    assert stats["agent_id"] == "flag-agent"
    # options after the subcommand work too
    stats = run("stats", "--json", "--agent-id", "late-flag").json()
    assert stats["agent_id"] == "late-flag"
    other = tmp_path / "other.toml"
    # (the store was embedded with hashing: a reading command with another model refuses)
    other.write_text('[tulving]\nagent_id = "explicit"\nembedder = "hashing"\n')
    monkeypatch.delenv("TULVING_AGENT_ID")
    assert run("--config", str(other), "stats", "--json").json()["agent_id"] == "explicit"


def test_config_errors_exit_3(run: Callable[..., CLIResult], tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    assert run("--path", path, *FAST, "store", "a memory", "-t", "FACT").code == 0
    bad = run("--path", path, "--embedder", "telepathy", "stats")
    assert bad.code == 3 and "telepathy" in bad.err and "hashing" in bad.err
    (tmp_path / "broken.toml").write_text("[tulving\npath=")
    assert run("--config", str(tmp_path / "broken.toml"), "stats").code == 3
    (tmp_path / "typo.toml").write_text('[tulving]\nembeder = "hashing"\n')
    typo = run("--config", str(tmp_path / "typo.toml"), "stats")
    assert typo.code == 3 and "embeder" in typo.err
    assert run("--config", str(tmp_path / "missing.toml"), "stats").code == 3
    # a missing folder is created (issue 33); one that cannot be (a file in the way) is a
    # storage error
    (tmp_path / "blocker").write_text("a file, not a folder")
    assert run("--path", str(tmp_path / "blocker" / "m.db"), *FAST, "stats").code == 4


def test_traversal_and_nul_paths_are_refused(run: Callable[..., CLIResult], tmp_path: Path) -> None:
    from tulving.domain.errors import SecurityError
    from tulving.interfaces.config import resolve_settings

    result = run("--path", "../escape.db", *FAST, "store", "x")
    assert result.code == 5 and ".." in result.err
    assert not (tmp_path.parent / "escape.db").exists()
    assert run("demo", "--path", "sub/../../escape.db", *FAST).code == 5
    with pytest.raises(SecurityError):
        resolve_settings({"path": "memory\x00.db"}, environ={})


def test_tokens_commands(t: Callable[..., CLIResult], tmp_path: Path) -> None:
    created = t("mcp", "token", "create", "agent-one", "--json").json()
    assert created["token"].startswith("tlv_")
    assert t("mcp", "token", "create", "agent-one").code == 2  # duplicate name
    assert t("mcp", "token", "create", "bad name!").code == 2
    listed = t("mcp", "token", "list", "--json").json()["tokens"]
    assert [x["name"] for x in listed] == ["agent-one"]
    # rows of the store itself: no registry file beside it, no secret anywhere in it
    assert not (tmp_path / "m.db.tokens.json").exists()
    secret = created["token"].split("_", 2)[2].encode()
    assert not [f for f in tmp_path.iterdir() if f.is_file() and secret in f.read_bytes()]
    assert t("mcp", "token", "revoke", created["id"]).code == 0
    assert t("mcp", "token", "revoke", created["id"]).code == 1


def test_doctor_reports_adapters_and_health(t: Callable[..., CLIResult]) -> None:
    t("store", "doctor needs something to look at")
    result = t("doctor", "--json")
    assert result.code == 0, result
    report = result.json()
    assert report["ok"] is True
    kinds = {(a["kind"], a["name"]) for a in report["adapters"]}
    assert {("storage", "sqlite"), ("embedder", "local"), ("vectors", "hnsw")} <= kinds
    assert report["embedder"]["model_id"].startswith("hashing")
    assert report["tokenizer"]["ok"] is True
    assert report["index"]["healthy"] is True and report["store"]["bytes"] > 0
    assert "all good" in t("doctor").out


def test_evict_command(t: Callable[..., CLIResult]) -> None:
    t(
        "store",
        "an observation nobody looked at again",
        "--type",
        "OBSERVATION",
        "--importance",
        "0.01",
    )
    t("store", "a decision is never evicted", "--type", "DECISION", "--importance", "0.01")
    preview = t("evict", "--threshold", "0.5", "--dry-run", "--json")
    assert preview.code == 0, preview
    assert preview.json()["dry_run"] is True and len(preview.json()["evicted"]) == 1
    assert t("stats", "--json").json()["active"] == 2  # a dry run archives nothing
    done = t("evict", "--threshold", "0.5")
    assert done.code == 0 and "archived 1 of" in done.out
    stats = t("stats", "--json").json()
    assert stats["active"] == 1 and stats["by_type"]["DECISION"] == 1
    assert t("evict", "--threshold", "0").code == 2


def test_console_script_and_lock_exit_4(tmp_path: Path, proc_cleanup: list[Any]) -> None:
    """The installed ``tulving`` script; a store held by a running server gives exit 4."""
    script = Path(sys.executable).with_name("tulving")
    path = str(tmp_path / "m.db")
    env = clean_env()
    stored = subprocess.run(
        [str(script), "--path", path, *FAST, "store", "hello", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert stored.returncode == 0, stored.stderr
    server = subprocess.Popen(
        [str(script), "--path", path, *FAST, "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    proc_cleanup.append(server)
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
        + b"\n"
    )
    server.stdin.write(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        ).encode()
        + b"\n"
    )
    server.stdin.flush()
    # wait until the server holds the store: a tools/call answers only once it is open
    server.stdin.write(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "memory_stats", "arguments": {}},
            }
        ).encode()
        + b"\n"
    )
    server.stdin.flush()
    while True:
        message = json.loads(server.stdout.readline())
        if message.get("id") == 3:
            break
    locked = subprocess.run(
        [str(script), "--path", path, *FAST, "store", "second"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert locked.returncode == 4, locked
    assert "another process" in locked.stderr
    server.stdin.close()
    assert server.wait(timeout=15) == 0


@pytest.mark.model
def test_demo_on_embedded_default(tulving: Callable[..., CLIResult], tmp_path: Path) -> None:
    """`tulving demo`: SQLite + usearch + local model, offline, a few seconds."""
    result = tulving("demo", "--json", timeout=120)
    assert result.code == 0, result
    data = result.json()
    print(f"\ndemo timings: {data['timings']}")
    assert data["loaded"] == 40 and data["active"] >= 38
    assert data["adapters"]["storage"] == "sqlite" and data["adapters"]["vectors"] == "usearch"
    assert "MiniLM" in data["adapters"]["embedder"]
    assert data["search"]["results"][0]["key"] in {
        "deploy/strategy",
        "howto/deploy",
        "db/migrations",
    }
    curated = data["curate"]
    assert curated["token_count"] <= 300 and "auth" in curated["content"].lower()
    assert "sk-demo-DO-NOT-USE" not in result.out
    assert os.path.exists(data["path"])
    human = tulving("demo", "--path", str(tmp_path / "demo.db"), timeout=120)
    assert human.code == 0, human
    assert "Try next" in human.out and "tulving --path" in human.out
    again = tulving("demo", "--path", str(tmp_path / "demo.db"), "--json", timeout=120)
    assert again.json()["loaded"] == 0  # an existing demo store is reused, not duplicated
