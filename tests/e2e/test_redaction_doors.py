"""Redaction covers every door that shows text (issue 34, finding 1): the secrets and the
SSN that used to pass unmasked come out masked from the CLI's search, curate and get
(``--json`` and text), and from the MCP tools, through real processes and the official
MCP client. (HTTP: ``tests/http/test_redaction_doors.py``.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.e2e.conftest import FAST, CLIResult

#: The values the issue found unmasked, each stored inside a memory.
VALUES = {
    "stripe": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dcX1",
    "slack webhook": "https://hooks.slack.com/services/T0A1B2C3D/B0A1B2C3D/abcDEF123ghiJKL456mnoPQR",
    "hugging face": "hf_" + "abcdEFGHijklMNOPqrstUVWXyzABCDEFgh",
    "azure": "AccountKey=" + "Zm9vYmFy" * 11,
    "npm": "npm_" + "a1B2c3D4" * 4 + "e5F6",
    "twilio": "SK" + "0123456789abcdef" * 2,
    "ssn": "123-45-6789",
}
MEMORIES = [f"harbor ops credential for {name}: {value}" for name, value in VALUES.items()]


def assert_masked(text: str, door: str) -> None:
    for name, value in VALUES.items():
        assert value not in text, (door, name)
        assert value[-12:] not in text, (door, name, "a tail of it")
    assert "[REDACTED:" in text, door


@pytest.fixture
def filled(run: Callable[..., CLIResult], tmp_path: Path) -> Callable[..., CLIResult]:
    path = str(tmp_path / "doors.db")

    def t(*args: str) -> CLIResult:
        return run("--path", path, *FAST, *args)

    for content in MEMORIES:
        assert t("store", content, "--type", "FACT").code == 0
    return t


def test_cli_search_curate_get_mask_every_value(filled: Callable[..., CLIResult]) -> None:
    found = filled("search", "harbor ops credential", "--top-k", "20", "--json")
    assert found.code == 0, found
    assert_masked(found.out, "search --json")
    ids = [r["id"] for r in found.json()["results"]]
    assert len(ids) == len(VALUES)
    assert_masked(filled("search", "harbor ops credential", "--top-k", "20").out, "search")
    curated = filled("curate", "harbor ops credential", "--budget", "2000", "--json")
    assert curated.code == 0, curated
    assert_masked(curated.out, "curate --json")
    assert_masked(filled("curate", "harbor ops credential", "--budget", "2000").out, "curate")
    shown = "\n".join(filled("get", entry_id, "--json").out for entry_id in ids)
    assert_masked(shown, "get --json")


pytestmark = pytest.mark.anyio


async def test_mcp_tools_mask_every_value(store: str, server_params: Any) -> None:
    async with Client(server_params()) as client:
        for content in MEMORIES:
            stored = await client.call_tool("memory_store", {"content": content, "type": "FACT"})
            assert not stored.is_error, stored
        found = await client.call_tool("memory_search", {"query": "harbor ops credential",
                                                         "top_k": 20})
        assert_masked(str(found.content) + str(found.structured_content), "memory_search")
        curated = await client.call_tool("memory_curate", {"query": "harbor ops credential",
                                                          "token_budget": 2000})
        assert_masked(str(curated.content) + str(curated.structured_content), "memory_curate")
        for result in found.structured_content["results"]:
            got = await client.call_tool("memory_get", {"id_or_key": result["id"]})
            text = str(got.content) + str(got.structured_content)
            assert not any(v in text for v in VALUES.values()), text
