"""pytest plugin (entry point ``pytest11``): assert rewriting for the contract suites."""

from __future__ import annotations

import pytest

pytest.register_assert_rewrite(
    "contract_tests.storage",
    "contract_tests.embedder",
    "contract_tests.vectors",
    "contract_tests.tokenizer",
    "contract_tests.llm",
    "contract_tests.builders",
    "contract_tests.governance",
)
