"""The second redaction corpus (issue 42): the credential formats, command lines, URLs and
national identifiers an adversarial probe found unmasked are masked, each identifier
labelled with its own kind, and nothing in the negatives written beside them (ordinary
numbers, commands without secrets, keywords without ids) is touched.
``benchmarks/redaction.py`` prints the same figures per kind and per door."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_secrets_corpus import _examples
from tulving.domain.pii import find_identifiers
from tulving.domain.redaction import redact, redact_secrets, redact_with_count

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "secrets_corpus"
SECRETS: list[dict[str, Any]] = json.loads(
    (CORPUS / "secrets_round2.json").read_text())["kinds"]
IDENTIFIERS: list[dict[str, Any]] = json.loads(
    (CORPUS / "identifiers_round2.json").read_text())["kinds"]
NEGATIVES: dict[str, list[str]] = json.loads(
    (CORPUS / "negatives_round2.json").read_text())["categories"]


def test_the_corpus_holds_every_kind_the_issue_names() -> None:
    secret_kinds = {k["kind"] for k in SECRETS}
    assert {"digitalocean_pat", "shopify_access_token", "shopify_shared_secret", "mailgun_key",
            "doppler_token", "vault_token", "atlassian_api_token", "linear_api_key",
            "notion_token", "databricks_token", "grafana_service_account_token",
            "dockerhub_pat", "age_secret_key", "okta_api_token", "azure_sas_signature",
            "azure_account_key", "kubeconfig_client_key_data", "pgpassword",
            "mysql_password_flag", "sshpass_password", "netrc_password", "dsn_empty_user",
            "gcp_private_key_id"} <= secret_kinds
    id_kinds = {k["kind"] for k in IDENTIFIERS}
    assert {"nl_bsn", "pl_pesel", "dk_cpr", "gb_nino", "au_tfn", "passport",
            "passport_gb", "passport_de"} <= id_kinds
    assert len(id_kinds) >= 30
    assert sum(map(len, NEGATIVES.values())) >= 40


@pytest.mark.parametrize(("kind", "example"), _examples(IDENTIFIERS))
def test_identifiers_carry_valid_check_digits(kind: dict[str, Any],
                                             example: dict[str, Any]) -> None:
    if not kind["validator"].startswith(("stdnum.", "tulving.")):
        return  # passports: no check digit
    module, _, name = kind["validator"].partition(":")
    valid = getattr(importlib.import_module(module), name or "is_valid")
    assert valid(example["value"]), example


@pytest.mark.parametrize(("kind", "example"), _examples(IDENTIFIERS))
def test_every_identifier_is_masked_and_named(kind: dict[str, Any],
                                             example: dict[str, Any]) -> None:
    shown = redact(example["text"])
    assert example["value"] not in shown, (kind["kind"], shown)
    expected = "passport" if kind["kind"].startswith("passport") else kind["kind"]
    assert [m.kind for m in find_identifiers(example["text"])] == [expected]
    assert f"[REDACTED:{expected}]" in shown


def test_a_tfn_that_is_also_a_valid_sin_is_named_by_its_keyword() -> None:
    """The issue's finding: an Australian TFN was masked as a Canadian SIN."""
    tfn = next(k for k in IDENTIFIERS if k["kind"] == "au_tfn")["examples"][0]
    from stdnum.ca import sin

    assert sin.is_valid(tfn["value"].replace(" ", ""))  # both checks pass
    assert redact(tfn["text"]).endswith("[REDACTED:au_tfn]")
    assert redact(f"SIN {tfn['value']}").endswith("[REDACTED:ca_sin]")


@pytest.mark.parametrize("category", sorted(NEGATIVES))
def test_no_false_positive_on_the_negatives(category: str) -> None:
    for text in NEGATIVES[category]:
        assert redact_with_count(text) == (text, 0), text
        assert redact_secrets(text) == (text, 0), text
        assert find_identifiers(text) == [], text


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_the_engine_never_reaches_the_network(tmp_path: Path) -> None:
    """betterleaks' rules carry ``validate`` blocks (HTTP calls to the vendor with the
    secret); a scan through the binding must never run them. Traced at the system-call
    level (the engine is Go, whose sockets bypass Python's): scanning the whole corpus
    opens no socket and connects nowhere."""
    script = tmp_path / "scan.py"
    script.write_text(
        "import json, betterleaks\n"
        f"kinds = json.load(open({str(CORPUS / 'secrets_round2.json')!r}))['kinds']\n"
        "n = sum(len(betterleaks.scan_string(e['text'])) for k in kinds for e in k['examples'])\n"
        "assert n > 20, n\n")
    trace = tmp_path / "trace.txt"
    subprocess.run(["strace", "-f", "-e", "trace=socket,connect", "-o", str(trace),
                    sys.executable, str(script)], check=True, timeout=120)
    calls = [line for line in trace.read_text().splitlines()
             if " socket(" in line or " connect(" in line]
    assert calls == []
