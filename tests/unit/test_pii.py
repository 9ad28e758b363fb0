"""PII detection: checksums and shapes, few false positives on ordinary agent memory."""

from __future__ import annotations

import pytest

from tulving.domain.pii import find_pii, redact_pii, strip_private


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("write to jane.doe+work@example.co.uk please", "email"),
        ("call +44 20 7946 0958 tomorrow", "phone"),
        ("call +1 (415) 555-0132 tomorrow", "phone"),
        ("her number is (415) 555-0132", "phone"),
        ("card 4111 1111 1111 1111 expires soon", "card_number"),
        ("amex 3782-822463-10005 on file", "card_number"),
        ("mc 5555555555554444.", "card_number"),
        ("pay to DE89 3704 0044 0532 0130 00 by friday", "iban"),
        ("IBAN GB82WEST12345698765432", "iban"),
    ],
)
def test_detects_personal_data(text: str, kind: str) -> None:
    assert [m.kind for m in find_pii(text)] == [kind]
    masked, kinds = redact_pii(text)
    assert kinds == [kind] and f"[REDACTED:{kind}]" in masked


@pytest.mark.parametrize(
    "text",
    [
        "released version 2.14.3 on 2026-01-15 at 10:30",
        "the order id is 4111111111111112 (not a card: Luhn fails)",
        "listen on port 8080, timeout 30000 ms, retry 3 times",
        "commit 9f8e7d6c5b4a39281706f5e4d3c2b1a0 fixed the race",
        "uuid 123e4567-e89b-12d3-a456-426614174000 is the tenant",
        "DE89 3704 0044 0532 0130 01 is a mistyped IBAN",
        "budget is 1,250,000 tokens per month across 12 agents",
        "the build took 1234567890123 ns",
        "use the @decorator on async def handler(request)",
        "git clone https://github.com/org/repo.git && cd repo",
        "coordinates 48.8584, 2.2945 are the Eiffel tower",
        "ISBN 978-3-16-148410-0 is the reference",
    ],
)
def test_ordinary_text_is_not_pii(text: str) -> None:
    assert find_pii(text) == []


def test_checksums() -> None:
    assert [m.kind for m in find_pii("IBAN GB82 WEST 1234 5698 7654 32")] == ["iban"]
    assert find_pii("IBAN GB82 WEST 1234 5698 7654 33") == []
    assert find_pii("card 4111 1111 1111 1112") == []


@pytest.mark.parametrize(
    "text",
    ["x = 0.4111111111111111", "ratio 4111111111111111.5", "order total 4532015112830366 cents",
     "the run took 4111111111111111 ns", "1.4111111111111111e-05"],
)
def test_a_luhn_valid_number_without_card_context_is_not_a_card(text: str) -> None:
    """No card grouping, no card word before it: a float, a total, a duration."""
    assert find_pii(text) == []


@pytest.mark.parametrize(
    "text",
    ["visa 4111111111111111", "paid with 4532015112830366", "4111 1111 1111 1111",
     "4111-1111-1111-1111", "amex 378282246310005"],
)
def test_a_card_is_found_in_its_grouping_or_after_a_card_word(text: str) -> None:
    assert [m.kind for m in find_pii(text)] == ["card_number"]


def test_an_iban_is_found_in_any_letter_case() -> None:
    for text in ("pay de89 3704 0044 0532 0130 00 soon", "pay de89370400440532013000",
                 "pay De89 3704 0044 0532 0130 00 then"):
        assert [m.kind for m in find_pii(text)] == ["iban"], text


def test_redaction_keeps_surrounding_text_and_handles_several() -> None:
    text = "mail a@b.io or c@d.org, card 4111-1111-1111-1111"
    masked, kinds = redact_pii(text)
    assert masked == "mail [REDACTED:email] or [REDACTED:email], card [REDACTED:card_number]"
    assert kinds == ["email", "email", "card_number"]


def test_strip_private() -> None:
    assert strip_private("keep <private>drop me</private> this") == ("keep this", 1)
    assert strip_private("a <PRIVATE>x\ny</PRIVATE> b <private>z</private>") == ("a b", 2)
    # an unclosed section runs to the end (fail closed)
    assert strip_private("public <private>never closed") == ("public", 1)
    assert strip_private("nothing private") == ("nothing private", 0)
