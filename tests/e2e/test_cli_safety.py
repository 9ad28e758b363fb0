"""The CLI and MCP doors of issue 42, through real processes: every parser of outside input
turns a depth, encoding or size fault into the door's typed error (exit 2 for input,
exit 3 for configuration), never a traceback; a read-only command on a path whose folder
does not exist creates nothing; ``forget --hard`` erases every version in a second
process's eyes; keys and tags are masked by the CLI and by the MCP tools."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.e2e.conftest import FAST, CLIResult

GITHUB = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"


def _no_traceback(result: CLIResult) -> None:
    assert "Traceback" not in result.err and "Traceback" not in result.out, result


def bundle_with_manifest(manifest: bytes) -> bytes:
    """A bundle laid out as the writer lays one out, with this manifest."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("entries.jsonl", b"", compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("embeddings.f32", b"", compress_type=zipfile.ZIP_STORED)
        z.writestr("manifest.json", manifest, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def test_a_manifest_nested_50000_deep_is_exit_2(tulving: Callable[..., CLIResult],
                                                tmp_path: Path) -> None:
    bundle = tmp_path / "deep.tulving"
    bundle.write_bytes(bundle_with_manifest(b"[" * 50_000 + b"]" * 50_000))
    result = tulving("--path", str(tmp_path / "m.db"), *FAST, "import", str(bundle))
    _no_traceback(result)
    assert result.code == 2 and "nests deeper" in result.err, result


@pytest.mark.parametrize(("line", "said"), [
    ('{"content": "lone \\ud800 surrogate", "type": "FACT"}', "not valid Unicode"),
    ('{"content": "x", "type": "FACT", "metadata": ' + "[" * 50_000 + "]" * 50_000 + "}",
     "nests deeper"),
    ('{"content": "x", "type": "FACT", "metadata": {"a": ' + "[" * 100 + "]" * 100 + "}}",
     "nests deeper"),
])
def test_jsonl_faults_are_exit_2(tulving: Callable[..., CLIResult], tmp_path: Path,
                                 line: str, said: str) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"content": "a good line", "type": "FACT"}\n' + line + "\n")
    path = str(tmp_path / "m.db")
    result = tulving("--path", path, *FAST, "store", "--jsonl", str(source))
    _no_traceback(result)
    assert result.code == 2 and said in result.err, result
    listed = tulving("--path", path, *FAST, "list", "--all", "--json").json()
    # nothing written: an empty store, or none at all (a reading command creates none)
    assert listed.get("entries") == [] or listed["error"]["type"] == "NotFoundError", listed


def test_a_jsonl_file_that_is_not_utf8_is_exit_2(tulving: Callable[..., CLIResult],
                                                 tmp_path: Path) -> None:
    source = tmp_path / "latin1.jsonl"
    source.write_bytes('{"content": "café", "type": "FACT"}\n'.encode("latin-1"))
    result = tulving("--path", str(tmp_path / "m.db"), *FAST, "store", "--jsonl",
                     str(source))
    _no_traceback(result)
    assert result.code == 2 and "UTF-8" in result.err


@pytest.mark.parametrize("content", [b'path = "\xff\xfe"\n',
                                     b"a = " + b"[" * 50_000 + b"]" * 50_000 + b"\n"])
def test_a_bad_config_file_is_exit_3(tulving: Callable[..., CLIResult], tmp_path: Path,
                                     content: bytes) -> None:
    config = tmp_path / "tulving.toml"
    config.write_bytes(content)
    result = tulving("--config", str(config), *FAST, "stats")
    _no_traceback(result)
    assert result.code == 3, result


@pytest.mark.parametrize("args", [
    ["store", "x", "--type", "FACT", "--key", "bad\udcffkey"],
    ["store", "x", "--type", "FACT", "--tag", "bad\udcfftag"],
    ["--agent-id", "bad\udcffagent", "store", "x", "--type", "FACT"],
    ["--agent-id", "../..", "store", "x", "--type", "FACT"],
    ["store", "bad \udcff byte", "--type", "FACT"],
])
def test_undecodable_or_malformed_argv_is_exit_2(tulving: Callable[..., CLIResult],
                                                 tmp_path: Path, args: list[str]) -> None:
    """Bytes that are not UTF-8 reach Python's argv as lone surrogates."""
    result = tulving("--path", str(tmp_path / "m.db"), *FAST, *args)
    _no_traceback(result)
    assert result.code == 2, result


@pytest.mark.parametrize("command", [["search", "hello"], ["stats"], ["list"],
                                     ["get", "some/key"], ["curate", "hello"],
                                     ["history", "some/key"]])
def test_reading_a_missing_folder_creates_nothing(tulving: Callable[..., CLIResult],
                                                  tmp_path: Path, command: list[str]) -> None:
    where = tmp_path / "no" / "such" / "folder"
    result = tulving("--path", str(where / "m.db"), *FAST, *command)
    _no_traceback(result)
    assert result.code == 1 and "does not exist" in result.err, result
    assert not (tmp_path / "no").exists()


def test_forget_hard_erases_every_version_for_another_process(
        tulving: Callable[..., CLIResult], tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    for text in ("hint one: Quokkaboulevard", "hint two: Wombatpromenade"):
        assert tulving("--path", path, *FAST, "store", text, "--type", "FACT", "--key",
                       "vault/hint", "--tag", "marsupial").code == 0
    assert tulving("--path", path, *FAST, "forget", "vault/hint", "--hard").code == 0
    shown = tulving("--path", path, *FAST, "history", "vault/hint")
    assert shown.code == 1 and "Quokka" not in shown.out + shown.err
    listed = tulving("--path", path, *FAST, "list", "--all", "--archived", "--json")
    assert listed.code == 0 and listed.json()["entries"] == []
    on_disk = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert b"Quokka" not in on_disk and b"Wombat" not in on_disk


def test_the_cli_masks_keys_and_tags(tulving: Callable[..., CLIResult],
                                     tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    assert tulving("--path", path, *FAST, "store", "CI pushes tags", "--type", "FACT",
                   "--key", f"ci/{GITHUB}").code == 0
    for command in (["list"], ["list", "--json"], ["list", "--all"], ["list", "--all", "--json"],
                    ["search", "CI pushes tags"], ["curate", "CI pushes tags"],
                    ["curate", "--orient"], ["get", f"ci/{GITHUB}"]):
        shown = tulving("--path", path, *FAST, *command)
        assert shown.code == 0, (command, shown)
        assert GITHUB not in shown.out and GITHUB[-12:] not in shown.out, command


pytestmark = pytest.mark.anyio


async def test_mcp_masks_keys(store: str, server_params: Any) -> None:
    async with Client(server_params()) as client:
        stored = await client.call_tool("memory_store", {
            "content": "CI pushes tags", "type": "FACT", "key": f"ci/{GITHUB}"})
        assert not stored.is_error, stored
        for tool, args in (("memory_list_keys", {}), ("memory_search", {"query": "CI"}),
                           ("memory_curate", {"query": "CI pushes tags"})):
            got = await client.call_tool(tool, args)
            text = str(got.content) + str(got.structured_content)
            assert GITHUB not in text and GITHUB[-12:] not in text, tool
