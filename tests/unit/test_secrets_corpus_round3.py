"""The third corpus (``tests/fixtures/secrets_corpus/*_round3.json``, written by
``make_round3.py``): every format an adversarial probe still found unmasked is masked at
the doors, every contact detail wherever text leaves them (and by the ``pii`` policy)
while the doors show it, and nothing in the negatives close to them changes anywhere;
10,000 random float reprs pass unchanged (1.5 % came out as ``0.[REDACTED:card_number]``).
``benchmarks/redaction.py --only-54`` prints the same figures per kind."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from tulving.domain import pii, redaction

CORPUS = Path(__file__).parents[1] / "fixtures" / "secrets_corpus"


def _kinds(name: str) -> list[dict[str, Any]]:
    return list(json.loads((CORPUS / f"{name}.json").read_text())["kinds"])


def _masked(out: str, value: str) -> bool:
    return value not in out and "[REDACTED:" in out


@pytest.mark.parametrize("kind", _kinds("secrets_round3") + _kinds("identifiers_round3"),
                         ids=lambda k: k["kind"])
def test_every_format_is_masked_at_the_doors(kind: dict[str, Any]) -> None:
    for example in kind["examples"]:
        assert _masked(redaction.redact(example["text"]), example["value"]), example


@pytest.mark.parametrize("kind", _kinds("contacts_round3"), ids=lambda k: k["kind"])
def test_every_contact_detail_is_masked_beyond_the_doors_and_shown_at_them(
        kind: dict[str, Any]) -> None:
    assert kind["examples"], kind["kind"]
    for example in kind["examples"]:
        text, value = example["text"], example["value"]
        assert _masked(redaction.redact_all(text), value), example
        assert _masked(pii.redact_pii(text)[0], value), example
        assert value in redaction.redact(text), example  # the memory's callers see it


def test_the_negatives_change_nowhere() -> None:
    categories = json.loads((CORPUS / "negatives_round3.json").read_text())["categories"]
    changed = [(name, text) for name, texts in categories.items() for text in texts
               if redaction.redact_all(text) != text or pii.redact_pii(text)[0] != text]
    assert changed == []


def test_ten_thousand_float_reprs_pass_unchanged() -> None:
    rng = random.Random(54)
    floats = [repr(rng.random()) for _ in range(10_000)]
    assert [f for f in floats if redaction._redact_uncached(f)[0] != f] == []
