"""``Memory.count_tokens`` and ``tulving.redact``: the two public calls the Kairos plugin
needs (its budget validator re-counts curated text; its hook masks what it writes)."""

from __future__ import annotations

from typing import Any

import pytest

import tulving


def test_count_tokens_agrees_with_curate(make_memory: Any) -> None:
    memory = make_memory()
    for i in range(30):
        memory.store(f"deploy note {i}: canary releases watched error rates", type="FACT")
    curated = memory.curate("canary releases", token_budget=120)
    assert memory.count_tokens(curated.content) == curated.token_count
    assert memory.count_tokens("") == 0
    with pytest.raises(tulving.ValidationError):
        memory.count_tokens(None)  # type: ignore[arg-type]
    memory.close()
    with pytest.raises(tulving.ConfigError):
        memory.count_tokens("closed")


def test_redact_is_public() -> None:
    masked = tulving.redact("connect with postgresql://app:s3cr3t-pw@db:5432/x")
    assert "s3cr3t-pw" not in masked and "[REDACTED" in masked
