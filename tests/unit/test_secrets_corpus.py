"""The redaction corpus (issue 34, finding 1): every secret kind and every personal-data
kind in ``tests/fixtures/secrets_corpus`` is caught, and nothing in the negative corpus is
touched. ``benchmarks/redaction.py`` prints the same figures per kind, with today's
detector beside the one before it."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

import tulving
from tulving.domain import rule_sets
from tulving.domain.pii import find_pii, redact_pii
from tulving.domain.redaction import redact, redact_secrets, redact_with_count

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "secrets_corpus"
SECRETS: list[dict[str, Any]] = json.loads((CORPUS / "secrets.json").read_text())["kinds"]
PERSONAL: list[dict[str, Any]] = json.loads(
    (CORPUS / "personal_data.json").read_text())["kinds"]
#: The second corpus's credentials (issue 42; its own tests: test_secrets_corpus_round2).
SECRETS_ROUND2: list[dict[str, Any]] = json.loads(
    (CORPUS / "secrets_round2.json").read_text())["kinds"]
NEGATIVES: dict[str, list[str]] = json.loads(
    (CORPUS / "negatives.json").read_text())["categories"]


def _examples(kinds: list[dict[str, Any]]) -> list[Any]:
    return [pytest.param(k, e, id=f"{k['kind']}-{i}")
            for k in kinds for i, e in enumerate(k["examples"])]


def test_the_corpus_is_as_large_as_promised() -> None:
    assert len(SECRETS) >= 40 and len({k["kind"] for k in SECRETS}) == len(SECRETS)
    identifiers = [k for k in PERSONAL if not k["contact"]]
    assert len(PERSONAL) >= 10 and len(identifiers) >= 10
    assert {"card_visa", "card_mastercard", "card_amex", "iban", "us_ssn"} <= {
        k["kind"] for k in PERSONAL}
    assert sum(len(v) for v in NEGATIVES.values()) >= 100
    for category in ("prose", "code", "hex_ids", "hashes", "uuids", "ulids", "tulving_ids",
                     "dates_and_times", "versions"):
        assert NEGATIVES[category], category


@pytest.mark.parametrize(("kind", "example"), _examples(PERSONAL))
def test_identifiers_in_the_corpus_carry_valid_check_digits(kind: dict[str, Any],
                                                            example: dict[str, Any]) -> None:
    """Cards pass Luhn, IBANs mod 97, national ids their own checks (so a miss would be
    the detector's fault, not a malformed example)."""
    if kind["validator"] is None:
        return
    module = importlib.import_module(kind["validator"])
    assert module.is_valid(example["value"].replace(" ", "")), example


@pytest.mark.parametrize(("kind", "example"), _examples(SECRETS + SECRETS_ROUND2))
def test_every_secret_kind_is_masked(kind: dict[str, Any], example: dict[str, Any]) -> None:
    for masked in (redact(example["text"]), redact_secrets(example["text"])[0]):
        assert example["value"] not in masked, (kind["kind"], masked)
        assert "[REDACTED:" in masked
    assert redact(redact(example["text"])) == redact(example["text"])  # idempotent


@pytest.mark.parametrize(("kind", "example"), _examples(PERSONAL))
def test_every_personal_data_kind_is_masked(kind: dict[str, Any],
                                            example: dict[str, Any]) -> None:
    """Identifiers at every door (``redact``); contact details under a ``pii`` policy."""
    policy = redact_pii(example["text"])[0]
    assert example["value"] not in policy, (kind["kind"], policy)
    shown = redact(example["text"])
    if kind["contact"]:
        assert shown == example["text"]  # reaching someone is what a memory is for
    else:
        assert example["value"] not in shown, (kind["kind"], shown)


@pytest.mark.parametrize("category", sorted(NEGATIVES))
def test_no_false_positive_on_the_negative_corpus(category: str) -> None:
    for text in NEGATIVES[category]:
        assert redact_with_count(text) == (text, 0), text
        assert redact_secrets(text) == (text, 0), text
        if category != "contact_details":
            assert find_pii(text) == [], (text, find_pii(text))


def test_the_issues_examples_are_masked_by_tulving_redact() -> None:
    """The seven that passed through before: Stripe, Slack webhook, Hugging Face, Azure
    AccountKey, npm, Twilio SK, a US SSN."""
    examples = {
        "stripe": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc" + "X1",
        "slack": "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "hf": "hf_" + "abcdEFGHijklMNOPqrstUVWXyzABCDEFgh",
        "azure": "AccountKey=" + "Zm9vYmFy" * 11,
        "npm": "npm_" + "a1B2c3D4" * 4 + "e5F6",
        "twilio": "SK" + "0123456789abcdef" * 2,
        "ssn": "123-45-6789",
    }
    for name, value in examples.items():
        masked = tulving.redact(f"note: {value} (from the {name} dashboard)")
        assert value not in masked and "[REDACTED:" in masked, (name, masked)


def test_rule_sets_come_from_the_maintained_libraries() -> None:
    sets = rule_sets.current()
    assert sets.source.startswith("detect-secrets ") and "python-stdnum" in sets.source
    assert "betterleaks 2." in sets.source
    sources = {r.source for r in sets.secrets}
    assert sources == {"detect-secrets", "tulving", "betterleaks"}
    assert sum(r.source == "detect-secrets" for r in sets.secrets) >= 20
    assert {r.source for r in sets.identifiers} == {"python-stdnum", "tulving"}  # passports
